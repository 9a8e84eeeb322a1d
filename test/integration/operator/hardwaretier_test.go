package operator_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/controllers/hardwaretier"
	testutil "github.com/kube-nexus/kubenexus/test/util"
)

var _ = Describe("HardwareTier", func() {
	tierStatus := func(name string) func() v1alpha1.HardwareTierStatus {
		return func() v1alpha1.HardwareTierStatus {
			t := &v1alpha1.HardwareTier{}
			Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: name}, t)).To(Succeed())
			return t.Status
		}
	}
	overlap := func(name string) func() string {
		return func() string {
			c := meta.FindStatusCondition(tierStatus(name)().Conditions, v1alpha1.HardwareTierConditionOverlap)
			if c == nil {
				return ""
			}
			return string(c.Status) + "/" + c.Reason
		}
	}
	gpuNode := func(name, tier, gpus string) {
		GinkgoHelper()
		n := testutil.MakeNode(name).Capacity("cpu", "64", "nvidia.com/gpu", gpus).Label("hardware.example.com/tier", tier).Label("kubenexus.io/test", "hwt").Obj()
		Expect(k8sClient.Create(suiteCtx, n)).To(Succeed())
	}

	It("counts nodes and GPUs, follows allocation, and reports overlapping selectors", func() {
		gpuNode("h100-0", "premium", "8")
		gpuNode("h100-1", "premium", "8")
		gpuNode("l40-0", "standard", "4")
		Expect(k8sClient.Create(suiteCtx, testutil.MakeHardwareTier("premium", 100).Obj())).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, testutil.MakeHardwareTier("standard", 50).Obj())).To(Succeed())

		Eventually(tierStatus("premium")).WithTimeout(20 * time.Second).Should(And(
			HaveField("Nodes", int32(2)), HaveField("GPUCapacity", int64(16)), HaveField("GPUAllocated", int64(0))))
		Eventually(overlap("premium")).Should(Equal("False/" + hardwaretier.ReasonNoOverlap))
		Eventually(tierStatus("standard")).Should(And(HaveField("Nodes", int32(1)), HaveField("GPUCapacity", int64(4))))

		// A bound GPU pod counts against its node's tier until it finishes.
		pod := testutil.MakePod("trainer", "default").Req("cpu", "1", "nvidia.com/gpu", "3").Obj()
		pod.Spec.Containers[0].Resources.Limits = testutil.ResourceList("nvidia.com/gpu", "3") // extended resources are not overcommitted
		pod.Spec.NodeName = "h100-1"
		Expect(k8sClient.Create(suiteCtx, pod)).To(Succeed())
		Eventually(func() int64 { return tierStatus("premium")().GPUAllocated }).Should(Equal(int64(3)))
		pod.Status.Phase = corev1.PodSucceeded
		Expect(k8sClient.Status().Update(suiteCtx, pod)).To(Succeed())
		Eventually(func() int64 { return tierStatus("premium")().GPUAllocated }).Should(Equal(int64(0)))

		// A tier selecting nodes another tier has is refused at admission...
		all := testutil.MakeHardwareTier("all-gpus", 10).Selector(metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "hardware.example.com/tier", Operator: metav1.LabelSelectorOpExists}},
		}).Obj()
		err := k8sClient.Create(suiteCtx, all)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("spec.nodeSelector"))
		Expect(err.Error()).To(ContainSubstring("which HardwareTier premium"))
		same := testutil.MakeHardwareTier("premium-again", 90).Selector(metav1.LabelSelector{MatchLabels: map[string]string{"hardware.example.com/tier": "premium"}}).Obj()
		err = k8sClient.Create(suiteCtx, same)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("is the same as HardwareTier premium's"))

		// ...also right after the first is created (kubectl apply of a file with two
		// tiers): the webhook reads the other tiers from the API server, not its cache.
		for i := range 5 {
			first := testutil.MakeHardwareTier(fmt.Sprintf("burst-%d", i), 5).Selector(metav1.LabelSelector{MatchLabels: map[string]string{"burst": fmt.Sprint(i)}}).Obj()
			Expect(k8sClient.Create(suiteCtx, first)).To(Succeed())
			second := testutil.MakeHardwareTier(fmt.Sprintf("burst-%d-again", i), 5).Selector(first.Spec.NodeSelector).Obj()
			err = k8sClient.Create(suiteCtx, second)
			Expect(err).To(HaveOccurred(), "a tier with the selector of one created a moment before was admitted")
			Expect(err.Error()).To(ContainSubstring("is the same as HardwareTier burst-%d's", i))
			Expect(k8sClient.Delete(suiteCtx, first)).To(Succeed())
		}

		// ...but nodes relabelled later can still put a node in two tiers: the
		// status says which.
		Expect(k8sClient.Create(suiteCtx, testutil.MakeHardwareTier("nvlink", 80).Selector(metav1.LabelSelector{
			MatchLabels: map[string]string{"gpu.example.com/nvlink": "true"}}).Obj())).To(Succeed())
		Eventually(overlap("nvlink")).Should(Equal("False/" + hardwaretier.ReasonNoOverlap))
		node := &corev1.Node{}
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: "h100-0"}, node)).To(Succeed())
		node.Labels["gpu.example.com/nvlink"] = "true"
		Expect(k8sClient.Update(suiteCtx, node)).To(Succeed())
		Eventually(overlap("premium")).Should(Equal("True/" + hardwaretier.ReasonOverlap))
		Eventually(overlap("nvlink")).Should(Equal("True/" + hardwaretier.ReasonOverlap))
		c := meta.FindStatusCondition(tierStatus("nvlink")().Conditions, v1alpha1.HardwareTierConditionOverlap)
		Expect(c.Message).To(ContainSubstring("premium (1 nodes, e.g. h100-0)"))
		Expect(tierStatus("nvlink")()).To(And(HaveField("Nodes", int32(1)), HaveField("GPUCapacity", int64(8))))

		// Deleting it clears the others.
		nv := &v1alpha1.HardwareTier{}
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: "nvlink"}, nv)).To(Succeed())
		Expect(k8sClient.Delete(suiteCtx, nv)).To(Succeed())
		Eventually(overlap("premium")).Should(Equal("False/" + hardwaretier.ReasonNoOverlap))

		// A new node joins its tier's count.
		gpuNode("h100-2", "premium", "8")
		Eventually(tierStatus("premium")).Should(And(HaveField("Nodes", int32(3)), HaveField("GPUCapacity", int64(24))))
	})

	It("counts the GPUs NVIDIA's DRA driver publishes, a shared GPU as allocated once a claim takes part of it", func() {
		// NVIDIA's class backs no extended resource: its devices are GPUs because the
		// KubeNexusConfig's gpuDeviceClasses (by default) name it.
		n := testutil.MakeNode("gb200-0").Capacity("cpu", "144").Label("hardware.example.com/tier", "dra").Label("kubenexus.io/test", "hwt").Obj()
		Expect(k8sClient.Create(suiteCtx, n)).To(Succeed())
		gpu := func(name string) resourceapi.Device {
			return resourceapi.Device{Name: name, AllowMultipleAllocations: ptr.To(true),
				Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: resource.MustParse("80Gi")}}}
		}
		slice := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "gb200-0-gpus"}, Spec: resourceapi.ResourceSliceSpec{
			Driver: "gpu.nvidia.com", Pool: resourceapi.ResourcePool{Name: "gb200-0", Generation: 1, ResourceSliceCount: 1}, NodeName: ptr.To("gb200-0"),
			Devices: []resourceapi.Device{gpu("gpu-0"), gpu("gpu-1"), gpu("gpu-2"), gpu("gpu-3")}}}
		Expect(k8sClient.Create(suiteCtx, slice)).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, testutil.MakeHardwareTier("dra", 70).Obj())).To(Succeed())
		// Until the driver's DeviceClass exists its devices are no GPUs; once it is
		// made, the tier counts them without another change.
		Eventually(tierStatus("dra")).WithTimeout(20 * time.Second).Should(And(HaveField("Nodes", int32(1)), HaveField("GPUCapacity", int64(0))))
		class := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.nvidia.com"},
			Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "gpu.nvidia.com"`}}}}}
		Expect(k8sClient.Create(suiteCtx, class)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, class))).To(Succeed()) })
		Eventually(tierStatus("dra")).WithTimeout(20 * time.Second).Should(And(
			HaveField("Nodes", int32(1)), HaveField("GPUCapacity", int64(4)), HaveField("GPUAllocated", int64(0))))

		// An inference claim allocated 20Gi of gpu-2: that GPU is no longer whole.
		claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "infer", Namespace: "default"}, Spec: resourceapi.ResourceClaimSpec{
			Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu.nvidia.com"}}}}}}
		Expect(k8sClient.Create(suiteCtx, claim)).To(Succeed())
		share := types.UID("2f1c0a4e-0000-4000-8000-000000000001")
		claim.Status.Allocation = &resourceapi.AllocationResult{
			Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
				Request: "gpu", Driver: "gpu.nvidia.com", Pool: "gb200-0", Device: "gpu-2", ShareID: &share,
				ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse("20Gi")}}}},
			NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{
				Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"gb200-0"}}}}}}}
		Expect(k8sClient.Status().Update(suiteCtx, claim)).To(Succeed())
		Eventually(func() int64 { return tierStatus("dra")().GPUAllocated }).Should(Equal(int64(1)))
		gangs := func() map[string]int32 {
			out := map[string]int32{}
			for _, g := range tierStatus("dra")().LargestPlaceableGangs {
				if g.Level == "any" {
					out[fmt.Sprint(g.GPUsPerMember)] = g.Members
				}
			}
			return out
		}
		Expect(gangs()).To(HaveKeyWithValue("1", int32(3)), "three whole GPUs are left")
	})
})
