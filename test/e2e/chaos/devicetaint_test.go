package chaos_test

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// draDriver is the driver of the DRA scenario's devices (NVIDIA's name).
const draDriver = "gpu.nvidia.com"

// draNodes publishes the GPUs of the named nodes in ResourceSlices, as a DRA
// driver's kubelet plugin would: gpus devices per node, one pool per node.
func (f *fleet) draNodes(nodes []string, gpus int) {
	f.t.Helper()
	for _, node := range nodes {
		slice := &resourceapi.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: node + "-gpus"},
			Spec: resourceapi.ResourceSliceSpec{Driver: draDriver, NodeName: ptr.To(node),
				Pool: resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1}},
		}
		for g := range gpus {
			slice.Spec.Devices = append(slice.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("gpu-%d", g),
				Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"type": {StringValue: ptr.To("gpu")}}})
		}
		if err := f.c.Client.Create(f.ctx, slice); err != nil {
			f.t.Fatal(err)
		}
	}
}

// draGang is gang() with each member's GPU from a ResourceClaimTemplate of one
// device of draDriver's class.
func (f *fleet) draGang(ns, name string, size, timeout int32) {
	f.t.Helper()
	class := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: draDriver}, Spec: resourceapi.DeviceClassSpec{
		Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", draDriver)}}}}}
	if err := f.c.Client.Create(f.ctx, class); client.IgnoreAlreadyExists(err) != nil {
		f.t.Fatal(err)
	}
	tmpl := &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: name + "-gpu", Namespace: ns},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: draDriver}}}}}}}
	if err := f.c.Client.Create(f.ctx, tmpl); err != nil {
		f.t.Fatal(err)
	}
	pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1alpha1.PodGroupSpec{MinMember: size,
		NetworkTopology: &v1alpha1.NetworkTopologyPolicy{Mode: v1alpha1.NetworkTopologyRequired, Level: v1alpha1.NetworkLevelRack},
		Recovery:        &v1alpha1.GangRecovery{Policy: v1alpha1.RecoveryRepair, TimeoutSeconds: timeout}}}
	if err := f.c.Client.Create(f.ctx, pg); err != nil {
		f.t.Fatal(err)
	}
	spec := podSpec(0)
	spec.Containers[0].Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: spec.Containers[0].Resources.Requests[corev1.ResourceCPU]},
		Claims:   []corev1.ResourceClaim{{Name: "gpu"}},
	}
	spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To(tmpl.Name)}}
	labels := map[string]string{v1alpha1.LabelPodGroup: name, "app": name}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: appsv1.ReplicaSetSpec{
		Replicas: ptr.To(size), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}}}
	if err := f.c.Client.Create(f.ctx, rs); err != nil {
		f.t.Fatal(err)
	}
}

// deviceOf is the pool/device allocated to the pod's claim ("" until allocated).
func (f *fleet) deviceOf(p *corev1.Pod) (pool, device string) {
	f.t.Helper()
	for _, s := range p.Status.ResourceClaimStatuses {
		if s.ResourceClaimName == nil {
			continue
		}
		claim := &resourceapi.ResourceClaim{}
		if err := f.c.Client.Get(f.ctx, client.ObjectKey{Namespace: p.Namespace, Name: *s.ResourceClaimName}, claim); err != nil {
			continue
		}
		if a := claim.Status.Allocation; a != nil && len(a.Devices.Results) > 0 {
			return a.Devices.Results[0].Pool, a.Devices.Results[0].Device
		}
	}
	return "", ""
}

// deviceTainted: a gang of three, each member with one GPU through DRA, runs in a
// rack of two nodes of four GPUs. A DeviceTaintRule taints one member's GPU
// NoExecute (a GPU that fell off the bus): kube-controller-manager's device taint
// eviction controller evicts the member, the PodGroup is Repairing with cause
// DeviceTainted, and the replacement is allocated a healthy GPU in the rack.
func deviceTainted(f *fleet) {
	t := f.t
	const ns, name = "chaos-dra", "train"
	f.namespace(ns)
	nodes := f.nodes("rack-d", 2)
	f.draNodes(nodes, 4)
	f.draGang(ns, name, 3, 120)
	f.running(ns, name, 3)
	members := f.members(ns, name)
	victim := members[0]
	pool, device := f.deviceOf(&victim)
	if device == "" {
		t.Fatalf("member %s runs without an allocated GPU", victim.Name)
	}
	rule := &resourceapi.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: "gpu-fell-off-the-bus"}, Spec: resourceapi.DeviceTaintRuleSpec{
		DeviceSelector: &resourceapi.DeviceTaintSelector{Driver: ptr.To(draDriver), Pool: ptr.To(pool), Device: ptr.To(device)},
		Taint:          resourceapi.DeviceTaint{Key: "gpu.kubenexus.io/xid", Value: "79", Effect: resourceapi.DeviceTaintEffectNoExecute}}}
	if err := f.c.Client.Create(f.ctx, rule); err != nil {
		t.Fatal(err)
	}
	tainted := time.Now()
	f.poll(2*time.Minute, func() error {
		if p, err := f.get(ns, victim.Name); err == nil && p.UID == victim.UID && p.DeletionTimestamp == nil {
			return fmt.Errorf("member %s on the tainted GPU %s/%s not evicted yet", victim.Name, pool, device)
		}
		return nil
	})
	var replacement *corev1.Pod
	f.poll(2*time.Minute, func() error {
		live := f.live(ns, name)
		if len(live) < 3 {
			return fmt.Errorf("%d/3 members live", len(live))
		}
		for _, p := range f.members(ns, name) {
			if _, ok := live[p.Name]; ok && p.Name != members[1].Name && p.Name != members[2].Name {
				replacement = p.DeepCopy()
			}
		}
		if replacement == nil {
			return fmt.Errorf("no replacement live")
		}
		if _, d := f.deviceOf(replacement); d == "" {
			return fmt.Errorf("replacement %s has no GPU allocated yet", replacement.Name)
		}
		return nil
	})
	took := time.Since(tainted)
	if rp, rd := f.deviceOf(replacement); rp == pool && rd == device {
		t.Errorf("replacement %s was allocated the tainted GPU %s/%s", replacement.Name, pool, device)
	}
	if r := f.rackOf(replacement.Spec.NodeName); r != "rack-d" {
		t.Errorf("replacement %s bound on %s in rack %q, want rack-d", replacement.Name, replacement.Spec.NodeName, r)
	}
	// The repair ends Repaired, and its message names the cause the manager read
	// from the eviction (the device taint manager's DisruptionTarget).
	f.poll(time.Minute, func() error {
		c := f.repairing(ns, name)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.RepairOutcomeRepaired ||
			!strings.Contains(c.Message, "("+v1alpha1.RepairCauseDeviceTainted+")") {
			return fmt.Errorf("Repairing %v, want Repaired after a loss of cause %s", c, v1alpha1.RepairCauseDeviceTainted)
		}
		return nil
	})
	t.Logf("a member's GPU tainted NoExecute: replacement bound on a healthy GPU %s after the DeviceTaintRule", took.Round(100*time.Millisecond))
}
