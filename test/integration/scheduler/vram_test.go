package scheduler_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/schedulertest"
)

var _ = Describe("VRAM", func() {
	It("sends GPU-memory requests to the tightest card that holds them, from GFD labels and from ResourceSlices, and counts devices allocated claims hold", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 10))
		// GPU Feature Discovery labels: a 48 GB L40S node and an 80 GB H100 node.
		tc.addLabelledNodes("l40s", 1, map[string]string{v1alpha1.LabelGPUMemory: "46068"}, "cpu", "32", "nvidia.com/gpu", "4")
		tc.addLabelledNodes("h100", 1, map[string]string{v1alpha1.LabelGPUMemory: "81559"}, "cpu", "32", "nvidia.com/gpu", "4")
		vramPod := func(name, vram string) *testutil.PodWrapper {
			return tc.pod(name).Annotation(v1alpha1.AnnotationVRAMRequest, vram).Req("cpu", "1", "nvidia.com/gpu", "1").Limit("nvidia.com/gpu", "1")
		}
		Expect(k8sClient.Create(suiteCtx, vramPod("fits-both", "40Gi").Obj())).To(Succeed())
		Eventually(tc.nodeOf("fits-both")).WithTimeout(testutil.Timeout).Should(Equal(tc.ns + "-l40s-0"))
		Expect(k8sClient.Create(suiteCtx, vramPod("big", "70Gi").Obj())).To(Succeed())
		Eventually(tc.nodeOf("big")).WithTimeout(testutil.Timeout).Should(Equal(tc.ns + "-h100-0"))
		Expect(k8sClient.Create(suiteCtx, vramPod("too-big", "90Gi").Obj())).To(Succeed())
		Eventually(tc.scheduledMessage("too-big")).WithTimeout(testutil.Timeout).Should(And(
			ContainSubstring("VRAM: the node's GPUs have 81559Mi each (nvidia.com/gpu.memory); the pod needs 90Gi per GPU"),
			ContainSubstring("VRAM: the node's GPUs have 46068Mi each (nvidia.com/gpu.memory); the pod needs 90Gi per GPU")))
		Consistently(tc.nodeOf("too-big")).WithTimeout(time.Second).Should(BeEmpty())

		// The same from DRA ResourceSlices, for nodes without the labels: two devices
		// of 48Gi on one node, two of 80Gi on another.
		driver := "gpu.example.com"
		tc.addNodes("dra48", 1, "cpu", "32")
		tc.addNodes("dra80", 1, "cpu", "32")
		tc.resourceSlice(tc.ns+"-dra48-0", driver, "48Gi", 2)
		tc.resourceSlice(tc.ns+"-dra80-0", driver, "80Gi", 2)
		class := tc.deviceClass("gpu", "", fmt.Sprintf("device.driver == %q", driver))
		claimPod := func(name, vram string) *corev1.Pod { return tc.claimPod(name, vram, class.Name) }
		// 40Gi fits both: the 48Gi device. 70Gi: only the 80Gi devices, until the
		// claims hold both.
		Expect(k8sClient.Create(suiteCtx, claimPod("claim-40", "40Gi"))).To(Succeed())
		Eventually(tc.nodeOf("claim-40")).WithTimeout(testutil.Timeout).Should(Equal(tc.ns + "-dra48-0"))
		for _, name := range []string{"claim-70a", "claim-70b"} {
			Expect(k8sClient.Create(suiteCtx, claimPod(name, "70Gi"))).To(Succeed())
			Eventually(tc.nodeOf(name)).WithTimeout(testutil.Timeout).Should(Equal(tc.ns + "-dra80-0"))
		}
		Expect(k8sClient.Create(suiteCtx, claimPod("claim-70c", "70Gi"))).To(Succeed())
		// (DynamicResources refuses the full 80Gi node first; VRAM the 48Gi node, whose
		// other device claim-40 holds.)
		Eventually(tc.scheduledMessage("claim-70c")).WithTimeout(testutil.Timeout).Should(
			ContainSubstring("1 VRAM: no free device on the node has 70Gi (1 free, the largest 48Gi)"))
		// Releasing a claim frees its device for the waiting pod. The pod goes, and the
		// claim is deallocated and deleted as kube-controller-manager's resourceclaim
		// controller would (it does not run here).
		key := client.ObjectKey{Namespace: tc.ns, Name: "claim-70a"}
		gone := &corev1.Pod{}
		Expect(k8sClient.Get(suiteCtx, key, gone)).To(Succeed())
		Expect(k8sClient.Delete(suiteCtx, gone, client.GracePeriodSeconds(0))).To(Succeed())
		claim := &resourceapi.ResourceClaim{}
		Expect(k8sClient.Get(suiteCtx, key, claim)).To(Succeed())
		claim.Status = resourceapi.ResourceClaimStatus{}
		Expect(k8sClient.Status().Update(suiteCtx, claim)).To(Succeed())
		claim.Finalizers = nil
		Expect(k8sClient.Update(suiteCtx, claim)).To(Succeed())
		Expect(k8sClient.Delete(suiteCtx, claim)).To(Succeed())
		Eventually(tc.nodeOf("claim-70c")).WithTimeout(testutil.Timeout).Should(Equal(tc.ns + "-dra80-0"))

		// Bad input: a request that is no quantity, and one on a pod without GPUs.
		Expect(k8sClient.Create(suiteCtx, vramPod("typo", "forty gigs").Obj())).To(Succeed())
		Eventually(tc.scheduledMessage("typo")).WithTimeout(testutil.Timeout).Should(ContainSubstring(
			`annotation scheduling.kubenexus.io/vram-request="forty gigs" must be a quantity of GPU memory per GPU`))
		Expect(k8sClient.Create(suiteCtx, tc.pod("no-gpu").Annotation(v1alpha1.AnnotationVRAMRequest, "8Gi").Req("cpu", "1").Obj())).To(Succeed())
		Eventually(tc.scheduledMessage("no-gpu")).WithTimeout(testutil.Timeout).Should(ContainSubstring(
			"annotation scheduling.kubenexus.io/vram-request is set, but the pod requests no GPU ([nvidia.com/gpu]) and no ResourceClaim"))
	})

	It("does not offer a card whose partition a claim holds: partitions share the card's memory", func() {
		if apiServerMinor < 36 {
			Skip("partitionable devices are on from kube-apiserver 1.36")
		}
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 10))
		const driver = "mig.example.com"
		// One node publishes a card of 80Gi whole and as two 40Gi halves; another a
		// plain 48Gi device.
		tc.addNodes("part", 1, "cpu", "32")
		tc.addNodes("dra48", 1, "cpu", "32")
		tc.partitionedCards(tc.ns+"-part-0", driver, 1)
		tc.resourceSlice(tc.ns+"-dra48-0", driver, "48Gi", 1)
		classes := map[string]string{"any": fmt.Sprintf("device.driver == %q", driver), "half": fmt.Sprintf("device.attributes[%q].?profile.orValue(\"\") == \"half\"", driver)}
		for name, expr := range classes {
			tc.deviceClass(name, "", expr)
		}
		// 30Gi fits a 40Gi half more tightly than the 48Gi device.
		Expect(k8sClient.Create(suiteCtx, tc.claimPod("half-30", "30Gi", tc.ns+"-half"))).To(Succeed())
		Eventually(tc.nodeOf("half-30")).WithTimeout(testutil.Timeout).Should(Equal(tc.ns + "-part-0"))
		// The half it holds takes half the card: the whole card is no longer there
		// for 70Gi, and the message says what is (the other half).
		Expect(k8sClient.Create(suiteCtx, tc.claimPod("big-70", "70Gi", tc.ns+"-any"))).To(Succeed())
		Eventually(tc.scheduledMessage("big-70")).WithTimeout(testutil.Timeout).Should(And(
			ContainSubstring("1 VRAM: no free device on the node has 70Gi (1 free, the largest 40Gi)"),
			ContainSubstring("1 VRAM: no free device on the node has 70Gi (1 free, the largest 48Gi)")))
		Consistently(tc.nodeOf("big-70")).WithTimeout(time.Second).Should(BeEmpty())
	})

	It("offers what a shared device's allocations leave of its memory (consumable capacity)", func() {
		if apiServerMinor < 36 {
			Skip("consumable capacity is on from kube-apiserver 1.36")
		}
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 10))
		const driver = "share.example.com"
		node := tc.ns + "-shared-0"
		tc.addNodes("shared", 1, "cpu", "32")
		slice := &resourceapi.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: node + "-gpus"},
			Spec: resourceapi.ResourceSliceSpec{Driver: driver, Pool: resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1}, NodeName: ptr.To(node),
				Devices: []resourceapi.Device{{Name: "gpu-0", AllowMultipleAllocations: ptr.To(true),
					Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: resource.MustParse("80Gi"),
						RequestPolicy: &resourceapi.CapacityRequestPolicy{Default: ptr.To(resource.MustParse("10Gi")),
							ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: ptr.To(resource.MustParse("10Gi"))}}}}}}},
		}
		Expect(k8sClient.Create(suiteCtx, slice)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, slice))).To(Succeed()) })
		class := tc.deviceClass("shared", "", fmt.Sprintf("device.driver == %q", driver))
		// A claim takes the memory it requests, else the device's default (10Gi).
		sharing := func(name, vram, request string) *corev1.Pod {
			p := tc.claimPod(name, vram, class.Name)
			if request == "" {
				return p
			}
			claim := &resourceapi.ResourceClaim{}
			Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: name}, claim)).To(Succeed())
			claim.Spec.Devices.Requests[0].Exactly.Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse(request)}}
			Expect(k8sClient.Delete(suiteCtx, claim)).To(Succeed())
			claim.ResourceVersion = ""
			Expect(k8sClient.Create(suiteCtx, claim)).To(Succeed())
			return p
		}
		Expect(k8sClient.Create(suiteCtx, sharing("share-50", "50Gi", "50Gi"))).To(Succeed())
		Eventually(tc.nodeOf("share-50")).WithTimeout(testutil.Timeout).Should(Equal(node))
		// 30Gi is left. A pod that needs 40Gi does not fit, though its claim (10Gi by
		// default) would be allocated: VRAM says why. One that needs 30Gi does.
		Expect(k8sClient.Create(suiteCtx, sharing("share-40", "40Gi", ""))).To(Succeed())
		Eventually(tc.scheduledMessage("share-40")).WithTimeout(testutil.Timeout).Should(
			ContainSubstring("1 VRAM: no free device on the node has 40Gi (1 free, the largest 30Gi)"))
		Expect(k8sClient.Create(suiteCtx, sharing("share-30", "30Gi", ""))).To(Succeed())
		Eventually(tc.nodeOf("share-30")).WithTimeout(testutil.Timeout).Should(Equal(node))
		Expect(tc.nodeOf("share-40")()).To(BeEmpty())
	})
})

// claimPod creates a ResourceClaim for one device of class and returns a pod that
// uses it and asks for vram per GPU.
func (tc *testCluster) claimPod(name, vram, class string) *corev1.Pod {
	GinkgoHelper()
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: tc.ns},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
			{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class}},
		}}},
	}
	Expect(k8sClient.Create(suiteCtx, claim)).To(Succeed())
	p := tc.pod(name).Annotation(v1alpha1.AnnotationVRAMRequest, vram).Req("cpu", "1").Obj()
	p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To(name)}}
	p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	return p
}

// resourceSlice publishes n devices of driver with the given memory on node, shaped
// like NVIDIA's DRA driver's (a memory capacity, a productName attribute).
func (tc *testCluster) resourceSlice(node, driver, memory string, n int) {
	GinkgoHelper()
	slice := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-gpus"},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   driver,
			Pool:     resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
			NodeName: ptr.To(node),
		},
	}
	for i := range n {
		slice.Spec.Devices = append(slice.Spec.Devices, resourceapi.Device{
			Name:       fmt.Sprintf("gpu-%d", i),
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"productName": {StringValue: ptr.To("GPU-" + memory)}},
			Capacity:   map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: resource.MustParse(memory)}},
		})
	}
	Expect(k8sClient.Create(suiteCtx, slice)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, slice))).To(Succeed()) })
}
