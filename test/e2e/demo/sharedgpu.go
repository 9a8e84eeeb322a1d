package demo

import (
	"context"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// Shared-GPU scenario: two nodes of their own (tainted, so that nothing else lands
// there) publish two 80Gi GPUs each as ResourceSlice devices of NVIDIA's DRA driver
// that several claims can share (consumable capacity); two 20Gi inference pods
// arrive one after the other, then a training gang of three members of one whole
// GPU each.
const (
	shareTaint  = "demo.kubenexus.io/shared-gpu"
	shareDriver = "gpu.nvidia.com"
	shareNodes  = 2
	shareGPUs   = 2
)

// SharedGPUResult is where the scenario's pods went: each inference pod's node and
// device, and how many of the gang's members bound, on which devices.
type SharedGPUResult struct {
	Inference  [2]string // "node/device"
	GangBound  int
	GangOn     []string
	WholeAfter int // GPUs nothing had touched when the gang arrived
}

// RunSharedGPUScenario runs the scenario and prints where each pod went.
func (c *Cluster) RunSharedGPUScenario(ctx context.Context, w io.Writer) (*SharedGPUResult, error) {
	c.logf("shared-GPU scenario: two 20Gi inference pods and a gang of three whole GPUs on %d nodes of %d 80Gi GPUs", shareNodes, shareGPUs)
	class := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: shareDriver},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", shareDriver)}}}}}
	if err := c.Client.Create(ctx, class); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	for i := range shareNodes {
		name := fmt.Sprintf("demo-share-%d", i)
		slice := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: name + "-gpus"}, Spec: resourceapi.ResourceSliceSpec{
			Driver: shareDriver, Pool: resourceapi.ResourcePool{Name: name, Generation: 1, ResourceSliceCount: 1}, NodeName: ptr.To(name)}}
		for g := range shareGPUs {
			slice.Spec.Devices = append(slice.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("gpu-%d", g), AllowMultipleAllocations: ptr.To(true),
				Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: resource.MustParse("80Gi")}}})
		}
		if err := c.Client.Create(ctx, slice); err != nil {
			return nil, err
		}
		room := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse("110")}
		if err := c.taintedNode(ctx, name, shareTaint, room); err != nil {
			return nil, err
		}
	}
	// pod makes a pod of the scenario whose claim asks for one GPU, memory of it
	// ("": the whole GPU).
	pod := func(name, memory string, labels map[string]string) error {
		req := resourceapi.ExactDeviceRequest{DeviceClassName: shareDriver}
		if memory != "" {
			req.Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse(memory)}}
		}
		claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: NSData, Name: name},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "gpu", Exactly: &req}}}}}
		if err := c.Client.Create(ctx, claim); err != nil {
			return err
		}
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: NSData, Name: name, Labels: labels}, Spec: corev1.PodSpec{
			NodeSelector:   map[string]string{shareTaint: "true"},
			Tolerations:    []corev1.Toleration{{Key: shareTaint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			Containers:     container(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("32Gi")}),
			ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To(name)}}}}
		p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
		return c.Client.Create(ctx, p)
	}
	// device is the node and device a pod's claim was allocated ("" until it is).
	device := func(name string) string {
		claim := &resourceapi.ResourceClaim{}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: NSData, Name: name}, claim); err != nil || claim.Status.Allocation == nil {
			return ""
		}
		p := &corev1.Pod{}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: NSData, Name: name}, p); err != nil || p.Spec.NodeName == "" {
			return ""
		}
		for _, r := range claim.Status.Allocation.Devices.Results {
			return p.Spec.NodeName + "/" + r.Device
		}
		return ""
	}
	res := &SharedGPUResult{}
	fmt.Fprintf(w, "Shared GPUs (DRA consumable capacity): nodes demo-share-0 and demo-share-1 publish %d GPUs of 80Gi each that several claims may share.\n", shareGPUs)
	for i, name := range []string{"share-infer-a", "share-infer-b"} {
		if err := pod(name, "20Gi", map[string]string{v1alpha1.LabelWorkloadType: "inference"}); err != nil {
			return nil, err
		}
		if err := waitFor(ctx, time.Minute, func() error {
			if res.Inference[i] = device(name); res.Inference[i] == "" {
				return fmt.Errorf("pod %s is not bound to a GPU yet", name)
			}
			return nil
		}); err != nil {
			return res, err
		}
		fmt.Fprintf(w, "  %s (20Gi of a GPU) -> %s\n", name, res.Inference[i])
	}
	res.WholeAfter = shareNodes * shareGPUs
	if res.Inference[0] == res.Inference[1] {
		res.WholeAfter--
	} else {
		res.WholeAfter -= 2
	}
	const gang = "share-train"
	if err := c.Client.Create(ctx, &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: NSData, Name: gang}, Spec: v1alpha1.PodGroupSpec{MinMember: 3}}); err != nil {
		return res, err
	}
	for i := range 3 {
		if err := pod(fmt.Sprintf("%s-%d", gang, i), "", map[string]string{v1alpha1.LabelPodGroup: gang}); err != nil {
			return res, err
		}
	}
	err := waitFor(ctx, time.Minute, func() error {
		res.GangOn, res.GangBound = nil, 0
		for i := range 3 {
			if d := device(fmt.Sprintf("%s-%d", gang, i)); d != "" {
				res.GangOn = append(res.GangOn, d)
				res.GangBound++
			}
		}
		if res.GangBound < 3 {
			return fmt.Errorf("%d of the 3 members of gang %s are bound", res.GangBound, gang)
		}
		return nil
	})
	fmt.Fprintf(w, "  gang %s (3 members, one whole GPU each): %d bound %v; %d GPUs were whole when it arrived\n", gang, res.GangBound, res.GangOn, res.WholeAfter)
	return res, err
}
