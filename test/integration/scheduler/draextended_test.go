package scheduler_test

import (
	"fmt"

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

// Extended resources backed by DRA (GA in 1.37): the nodes publish their GPUs only
// as ResourceSlice devices, a DeviceClass says its devices are nvidia.com/gpu, and
// pods ask for nvidia.com/gpu as they always did; kube-scheduler's DynamicResources
// plugin allocates the devices.
var _ = Describe("Extended resources backed by DRA", func() {
	var tc *testCluster
	BeforeEach(func() {
		if apiServerMinor < 36 {
			Skip("DeviceClasses name extended resources (DRAExtendedResource) and devices share counters (DRAPartitionableDevices) from kube-apiserver 1.36 on")
		}
		tc = newTestCluster(schedulertest.CoschedulingProfile(1, 20))
	})
	// rack0GPUs is what a HardwareTier over rack 0 reports: nodes, GPU capacity and
	// GPUs allocated.
	rack0GPUs := func() func() []int64 {
		tier := testutil.MakeHardwareTier(tc.ns+"-rack0", 10).Selector(metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.LabelRack: tc.ns + "-rack-0"}}).Obj()
		createHardwareTiers(tier)
		return func() []int64 {
			got := &v1alpha1.HardwareTier{}
			Expect(k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(tier), got)).To(Succeed())
			return []int64{int64(got.Status.Nodes), got.Status.GPUCapacity, got.Status.GPUAllocated}
		}
	}

	It("plans a gang over GPUs published only as DRA devices: the rack whose devices hold it", func() {
		const driver = "gpu.example.com"
		tc.deviceClass("gpu", "nvidia.com/gpu", fmt.Sprintf("device.driver == %q", driver))

		// Two racks of two nodes, no nvidia.com/gpu in their allocatable: rack 0's
		// nodes publish 8 GPUs each, rack 1's 4.
		for r, gpus := range []int{8, 4} {
			tc.addLabelledNodes(fmt.Sprintf("r%d", r), 2, map[string]string{v1alpha1.LabelRack: fmt.Sprintf("%s-rack-%d", tc.ns, r)},
				"cpu", "64", "memory", "512Gi")
			for i := range 2 {
				tc.resourceSlice(fmt.Sprintf("%s-r%d-%d", tc.ns, r, i), driver, "80Gi", gpus)
			}
		}
		pg := testutil.MakePodGroup("train", tc.ns).MinMember(2).Obj()
		pg.Spec.NetworkTopology = &v1alpha1.NetworkTopologyPolicy{Mode: v1alpha1.NetworkTopologyRequired, Level: v1alpha1.NetworkLevelRack}
		Expect(k8sClient.Create(suiteCtx, pg)).To(Succeed())
		for i := range 2 {
			Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("train-%d", i)).PodGroup("train").
				Req("cpu", "8", "memory", "32Gi", "nvidia.com/gpu", "8").Limit("nvidia.com/gpu", "8").Obj())).To(Succeed())
		}
		Eventually(tc.boundFn("train")).WithTimeout(testutil.Timeout).Should(Equal(2))
		for i := range 2 {
			Expect(tc.nodeOf(fmt.Sprintf("train-%d", i))()).To(HavePrefix(tc.ns+"-r0-"), "only rack 0's devices hold 8 GPUs per member")
		}
		// The devices were allocated by DRA, not by a device plugin.
		pod := &corev1.Pod{}
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: "train-0"}, pod)).To(Succeed())
		Expect(pod.Status.ExtendedResourceClaimStatus).NotTo(BeNil())

		// A second gang of the same shape finds no rack: the message counts the GPUs
		// the devices leave (rack 1's nodes hold 4 each).
		pg2 := testutil.MakePodGroup("more", tc.ns).MinMember(2).Obj()
		pg2.Spec.NetworkTopology = pg.Spec.NetworkTopology
		Expect(k8sClient.Create(suiteCtx, pg2)).To(Succeed())
		for i := range 2 {
			Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("more-%d", i)).PodGroup("more").
				Req("cpu", "8", "memory", "32Gi", "nvidia.com/gpu", "8").Limit("nvidia.com/gpu", "8").Obj())).To(Succeed())
		}
		Eventually(tc.scheduledMessage("more-0")).WithTimeout(testutil.Timeout).Should(ContainSubstring(
			"TopologyUnsatisfiable: gang " + tc.ns + "/more needs 2 members (2 × 8 nvidia.com/gpu) in one rack; the largest rack fits 0"))

		// A HardwareTier over rack 0 counts its devices as its GPUs.
		Eventually(rack0GPUs()).WithTimeout(testutil.Timeout).Should(Equal([]int64{2, 16, 16}), "nodes, GPU capacity and GPUs allocated of rack 0")
	})

	It("leaves out devices a DeviceTaintRule taints and a pod's own ResourceClaim holds, and counts them again when the rule goes", func() {
		if apiServerMinor < 37 {
			Skip("DeviceTaintRules are served from kube-apiserver 1.37 on")
		}
		const driver = "gpu.example.com"
		class := tc.deviceClass("gpu", "nvidia.com/gpu", fmt.Sprintf("device.driver == %q", driver))

		// Rack 0: two nodes of 8 devices; rack 1: two of 12. By the slices alone
		// rack 0 (16) is the tighter fit for a gang of 2 × 4 GPUs.
		for r, gpus := range []int{8, 12} {
			tc.addLabelledNodes(fmt.Sprintf("r%d", r), 2, map[string]string{v1alpha1.LabelRack: fmt.Sprintf("%s-rack-%d", tc.ns, r)},
				"cpu", "64", "memory", "512Gi")
			for i := range 2 {
				tc.resourceSlice(fmt.Sprintf("%s-r%d-%d", tc.ns, r, i), driver, "80Gi", gpus)
			}
		}
		r00, r01 := tc.ns+"-r0-0", tc.ns+"-r0-1"
		rack0 := rack0GPUs()
		// A pod's own claim takes 6 of r0-0's devices; a rule taints 6 of r0-1's.
		claim := &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "six", Namespace: tc.ns},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
				{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class.Name, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 6}},
			}}},
		}
		Expect(k8sClient.Create(suiteCtx, claim)).To(Succeed())
		own := tc.pod("own-claim").NodeSelector("kubernetes.io/hostname", r00).Req("cpu", "1").Obj()
		own.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To(claim.Name)}}
		own.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
		Expect(k8sClient.Create(suiteCtx, own)).To(Succeed())
		Eventually(tc.nodeOf("own-claim")).WithTimeout(testutil.Timeout).Should(Equal(r00))
		var rules []*resourceapi.DeviceTaintRule
		for i := range 6 {
			rule := &resourceapi.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-unhealthy-%d", tc.ns, i)},
				Spec: resourceapi.DeviceTaintRuleSpec{
					DeviceSelector: &resourceapi.DeviceTaintSelector{Driver: ptr.To(driver), Pool: ptr.To(r01), Device: ptr.To(fmt.Sprintf("gpu-%d", i))},
					Taint:          resourceapi.DeviceTaint{Key: "example.com/unhealthy", Effect: resourceapi.DeviceTaintEffectNoSchedule},
				}}
			Expect(k8sClient.Create(suiteCtx, rule)).To(Succeed())
			DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, rule))).To(Succeed()) })
			rules = append(rules, rule)
		}

		gang := func(name string) {
			GinkgoHelper()
			Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup(name, tc.ns).MinMember(2).
				NetworkTopology(v1alpha1.NetworkTopologyRequired, v1alpha1.NetworkLevelRack).Obj())).To(Succeed())
			for i := range 2 {
				Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("%s-%d", name, i)).PodGroup(name).
					Req("cpu", "8", "nvidia.com/gpu", "4").Limit("nvidia.com/gpu", "4").Obj())).To(Succeed())
			}
			Eventually(tc.boundFn(name)).WithTimeout(testutil.Timeout).Should(Equal(2))
		}
		// Rack 0 has 2 + 2 devices left: the gang is planned into rack 1.
		gang("train")
		for i := range 2 {
			Expect(tc.nodeOf(fmt.Sprintf("train-%d", i))()).To(HavePrefix(tc.ns+"-r1-"), "rack 0's devices are held or tainted")
		}
		// The manager counts the same: a HardwareTier over rack 0 has 2 + 2 GPUs.
		Eventually(rack0).WithTimeout(testutil.Timeout).Should(Equal([]int64{2, 4, 0}), "nodes, GPU capacity and GPUs allocated of rack 0")

		// Without the rules r0-1's 8 devices are back: rack 0 (10 left) is now the
		// tighter fit, and both members go to r0-1.
		for _, rule := range rules {
			Expect(k8sClient.Delete(suiteCtx, rule)).To(Succeed())
		}
		gang("eval")
		for i := range 2 {
			Expect(tc.nodeOf(fmt.Sprintf("eval-%d", i))()).To(Equal(r01))
		}
		Eventually(rack0).WithTimeout(testutil.Timeout).Should(Equal([]int64{2, 10, 8}), "nodes, GPU capacity and GPUs allocated of rack 0")
	})

	It("counts a card published as itself and its partitions once: what can be allocated at once", func() {
		const driver = "mig.example.com"
		tc.deviceClass("gpu", "nvidia.com/gpu", fmt.Sprintf("device.driver == %q", driver))

		// Rack 0's nodes publish two cards each as six devices (each card whole and
		// as two halves): at most four at once. Rack 1's publish five plain devices.
		for r := range 2 {
			tc.addLabelledNodes(fmt.Sprintf("r%d", r), 2, map[string]string{v1alpha1.LabelRack: fmt.Sprintf("%s-rack-%d", tc.ns, r)},
				"cpu", "64", "memory", "512Gi")
			for i := range 2 {
				node := fmt.Sprintf("%s-r%d-%d", tc.ns, r, i)
				if r == 0 {
					tc.partitionedCards(node, driver, 2)
				} else {
					tc.resourceSlice(node, driver, "80Gi", 5)
				}
			}
		}
		// A gang of two five-GPU members fits rack 1 only.
		pg := testutil.MakePodGroup("train", tc.ns).MinMember(2).
			NetworkTopology(v1alpha1.NetworkTopologyRequired, v1alpha1.NetworkLevelRack).Obj()
		Expect(k8sClient.Create(suiteCtx, pg)).To(Succeed())
		for i := range 2 {
			Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("train-%d", i)).PodGroup("train").
				Req("cpu", "8", "nvidia.com/gpu", "5").Limit("nvidia.com/gpu", "5").Obj())).To(Succeed())
		}
		Eventually(tc.boundFn("train")).WithTimeout(testutil.Timeout).Should(Equal(2))
		for i := range 2 {
			Expect(tc.nodeOf(fmt.Sprintf("train-%d", i))()).To(HavePrefix(tc.ns+"-r1-"), "rack 0's nodes give four GPUs at once, not six")
		}
		// A four-GPU member fits a partitioned node: DRA gives it the four halves.
		Expect(k8sClient.Create(suiteCtx, tc.pod("halves").Req("cpu", "8", "nvidia.com/gpu", "4").Limit("nvidia.com/gpu", "4").Obj())).To(Succeed())
		Eventually(tc.nodeOf("halves")).WithTimeout(testutil.Timeout).Should(HavePrefix(tc.ns + "-r0-"))

		// A HardwareTier over rack 0 counts four GPUs per node.
		Eventually(rack0GPUs()).WithTimeout(testutil.Timeout).Should(Equal([]int64{2, 8, 4}), "nodes, GPU capacity and GPUs allocated of rack 0")
	})
})

// partitionedCards publishes cards of 80Gi as partitionable devices, as a MIG-like
// driver does: a slice of counter sets (one per card: its memory and four compute
// slices) and a slice with, per card, the whole card and two halves drawing on it.
func (tc *testCluster) partitionedCards(node, driver string, cards int) {
	GinkgoHelper()
	pool := resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 2}
	counters := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-counters"},
		Spec: resourceapi.ResourceSliceSpec{Driver: driver, Pool: pool, NodeName: ptr.To(node)}}
	devices := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-partitions"},
		Spec: resourceapi.ResourceSliceSpec{Driver: driver, Pool: pool, NodeName: ptr.To(node)}}
	device := func(name, card, profile, memory, slices string) resourceapi.Device {
		return resourceapi.Device{
			Name:       name,
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"profile": {StringValue: ptr.To(profile)}},
			Capacity:   map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: resource.MustParse(memory)}},
			ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: card, Counters: map[string]resourceapi.Counter{
				"memory": {Value: resource.MustParse(memory)}, "slices": {Value: resource.MustParse(slices)}}}},
		}
	}
	for c := range cards {
		card := fmt.Sprintf("card-%d", c)
		counters.Spec.SharedCounters = append(counters.Spec.SharedCounters, resourceapi.CounterSet{Name: card, Counters: map[string]resourceapi.Counter{
			"memory": {Value: resource.MustParse("80Gi")}, "slices": {Value: resource.MustParse("4")}}})
		devices.Spec.Devices = append(devices.Spec.Devices,
			device(card, card, "full", "80Gi", "4"), device(card+"-half-a", card, "half", "40Gi", "2"), device(card+"-half-b", card, "half", "40Gi", "2"))
	}
	for _, s := range []*resourceapi.ResourceSlice{counters, devices} {
		Expect(k8sClient.Create(suiteCtx, s)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, s))).To(Succeed()) })
	}
}

// deviceClass creates the DeviceClass <namespace>-<name> of the devices expr
// selects, backing the extended resource extended ("" for none), for the spec.
func (tc *testCluster) deviceClass(name, extended, expr string) *resourceapi.DeviceClass {
	GinkgoHelper()
	class := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: tc.ns + "-" + name},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: expr}}}}}
	if extended != "" {
		class.Spec.ExtendedResourceName = ptr.To(extended)
	}
	Expect(k8sClient.Create(suiteCtx, class)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, class))).To(Succeed()) })
	return class
}
