package chaos_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/test/e2e/demo"
)

// fleet creates the nodes and workloads of the scenarios.
type fleet struct {
	t   *testing.T
	c   *demo.Cluster
	ctx context.Context
}

const gpu = corev1.ResourceName("nvidia.com/gpu")

// nodes creates n kwok nodes of 8 GPUs in rack and waits until the node lifecycle
// controller has lifted their not-ready taint.
func (f *fleet) nodes(rack string, n int) []string {
	f.t.Helper()
	var names []string
	for i := range n {
		name := fmt.Sprintf("%s-%02d", rack, i)
		res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("512Gi"),
			corev1.ResourcePods: resource.MustParse("110"), gpu: resource.MustParse("8")}
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
				Labels: map[string]string{"type": "kwok", corev1.LabelHostname: name, v1alpha1.LabelRack: rack}},
			Status: corev1.NodeStatus{Capacity: res, Allocatable: res.DeepCopy()},
		}
		if err := f.c.Client.Create(f.ctx, node); err != nil {
			f.t.Fatal(err)
		}
		names = append(names, name)
	}
	f.poll(3*time.Minute, func() error {
		for _, name := range names {
			node := &corev1.Node{}
			if err := f.c.Client.Get(f.ctx, client.ObjectKey{Name: name}, node); err != nil {
				return err
			}
			if len(node.Spec.Taints) > 0 {
				return fmt.Errorf("node %s still tainted %v", name, node.Spec.Taints)
			}
		}
		return nil
	})
	return names
}

func (f *fleet) namespace(name string) {
	f.t.Helper()
	if err := f.c.Client.Create(f.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		f.t.Fatal(err)
	}
}

// podSpec is a pod of the KubeNexus scheduler asking for gpus GPUs. It tolerates a
// NotReady or unreachable node for a second (the default, 300 s, would only make
// every trial wait).
func podSpec(gpus int64) corev1.PodSpec {
	q := *resource.NewQuantity(gpus, resource.DecimalSI)
	return corev1.PodSpec{
		SchedulerName: v1alpha1.DefaultSchedulerName,
		Tolerations: []corev1.Toleration{
			{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](1)},
			{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](1)},
		},
		TerminationGracePeriodSeconds: ptr.To[int64](5),
		Containers: []corev1.Container{{Name: "main", Image: "trainer", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("1Gi"), gpu: q},
			Limits:   corev1.ResourceList{gpu: q}}}},
	}
}

// gang creates a PodGroup of size members required in one rack, repaired within
// timeout, and the ReplicaSet that runs them (kube-controller-manager replaces a
// lost member).
func (f *fleet) gang(ns, name string, size int32, timeout int32) {
	f.t.Helper()
	pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1alpha1.PodGroupSpec{MinMember: size,
		NetworkTopology: &v1alpha1.NetworkTopologyPolicy{Mode: v1alpha1.NetworkTopologyRequired, Level: v1alpha1.NetworkLevelRack},
		Recovery:        &v1alpha1.GangRecovery{Policy: v1alpha1.RecoveryRepair, TimeoutSeconds: timeout}}}
	if err := f.c.Client.Create(f.ctx, pg); err != nil {
		f.t.Fatal(err)
	}
	labels := map[string]string{v1alpha1.LabelPodGroup: name, "app": name}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: appsv1.ReplicaSetSpec{
		Replicas: ptr.To(size), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec(8)}}}
	if err := f.c.Client.Create(f.ctx, rs); err != nil {
		f.t.Fatal(err)
	}
}

// pod creates a bare pod of gpus GPUs, on the node named (if any).
func (f *fleet) pod(ns, name string, gpus int64, node string) {
	f.t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: podSpec(gpus)}
	if node != "" {
		p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
	}
	if err := f.c.Client.Create(f.ctx, p); err != nil {
		f.t.Fatal(err)
	}
}

// members lists the gang's pods.
func (f *fleet) members(ns, name string) []corev1.Pod {
	f.t.Helper()
	var pods corev1.PodList
	if err := f.c.Client.List(f.ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app": name}); err != nil {
		f.t.Fatal(err)
	}
	return pods.Items
}

// live is the gang's members bound and not terminating, by node.
func (f *fleet) live(ns, name string) map[string]string {
	out := map[string]string{}
	for _, p := range f.members(ns, name) {
		if p.Spec.NodeName != "" && p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodFailed && p.Status.Phase != corev1.PodSucceeded {
			out[p.Name] = p.Spec.NodeName
		}
	}
	return out
}

func (f *fleet) podGroup(ns, name string) *v1alpha1.PodGroup {
	f.t.Helper()
	pg := &v1alpha1.PodGroup{}
	if err := f.c.Client.Get(f.ctx, client.ObjectKey{Namespace: ns, Name: name}, pg); err != nil {
		f.t.Fatal(err)
	}
	return pg
}

func (f *fleet) repairing(ns, name string) *metav1.Condition {
	return meta.FindStatusCondition(f.podGroup(ns, name).Status.Conditions, v1alpha1.PodGroupConditionRepairing)
}

// running waits until the gang has size members running and its PodGroup is
// Running.
func (f *fleet) running(ns, name string, size int) {
	f.t.Helper()
	f.poll(3*time.Minute, func() error {
		n := 0
		for _, p := range f.members(ns, name) {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				n++
			}
		}
		if phase := f.podGroup(ns, name).Status.Phase; n < size || phase != v1alpha1.PodGroupRunning {
			return fmt.Errorf("gang %s/%s: %d/%d running, PodGroup %q", ns, name, n, size, phase)
		}
		return nil
	})
}

func (f *fleet) rackOf(node string) string {
	n := &corev1.Node{}
	if err := f.c.Client.Get(f.ctx, client.ObjectKey{Name: node}, n); err != nil {
		return ""
	}
	return n.Labels[v1alpha1.LabelRack]
}

func (f *fleet) poll(timeout time.Duration, fn func() error) {
	f.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) || f.ctx.Err() != nil {
			f.t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
