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
	"github.com/kube-nexus/kubenexus/scheduler/plugins/resourcefragmentation"
	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/schedulertest"
)

// The GPU DeviceClasses of these specs, named in ResourceFragmentation's
// gpuDeviceClasses.
const (
	sharedGPUClass      = "shared-gpu.test.kubenexus.io"
	partitionedGPUClass = "partitioned-gpu.test.kubenexus.io"
)

var _ = Describe("Shared GPUs through DRA", func() {
	profile := schedulertest.CoschedulingProfile(1, 60) + fmt.Sprintf(`  - name: ResourceFragmentation
    args:
      gpuDeviceClasses: [%s, %s]
`, sharedGPUClass, partitionedGPUClass)

	It("puts two inference pods on one shared GPU, a third that does not fit its remaining memory elsewhere, and keeps whole GPUs for a whole-GPU gang", func() {
		tc := newTestCluster(profile)
		driver := "shared." + tc.ns + ".example.com"
		tc.gpuClass(sharedGPUClass, driver)
		model := "shared-" + tc.ns
		tc.addLabelledNodes("share", 4, map[string]string{v1alpha1.LabelGPUProduct: model}, "cpu", "32", "memory", "128Gi")
		for i := range 4 {
			tc.sharedGPUSlice(fmt.Sprintf("%s-share-%d", tc.ns, i), driver, "80Gi")
		}
		// A training gang of two whole-GPU members waits for its third: queued demand
		// for whole GPUs.
		pg := testutil.MakePodGroup("train", tc.ns).MinMember(3).Obj()
		Expect(k8sClient.Create(suiteCtx, pg)).To(Succeed())
		for i := range 2 {
			name := fmt.Sprintf("train-%d", i)
			Expect(k8sClient.Create(suiteCtx, tc.deviceClaimPod(tc.pod(name).PodGroup("train"), name, sharedGPUClass, "", ""))).To(Succeed())
		}

		// Inference pods of 20Gi each: the first breaks a GPU, the second shares it
		// rather than breaking another (WorkloadAware alone would spread them).
		infer := func(name, memory string) string {
			GinkgoHelper()
			Expect(k8sClient.Create(suiteCtx, tc.deviceClaimPod(tc.pod(name).Label(v1alpha1.LabelWorkloadType, "inference"), name, sharedGPUClass, "", memory))).To(Succeed())
			Eventually(tc.nodeOf(name)).WithTimeout(testutil.Timeout).ShouldNot(BeEmpty(), tc.scheduledMessage(name))
			return tc.nodeOf(name)()
		}
		shared := infer("infer-0", "20Gi")
		Expect(infer("infer-1", "20Gi")).To(Equal(shared), "the second 20Gi pod should share the GPU the first broke")
		Expect(tc.allocatedDevice("infer-0")).To(Equal(tc.allocatedDevice("infer-1")))
		// 70Gi does not fit the 40Gi left on the shared GPU.
		third := infer("infer-2", "70Gi")
		Expect(third).NotTo(Equal(shared))
		// The gauges count the GPUs the nodes publish as devices: two partly used
		// (allocated), two whole.
		gpus := func() map[string]float64 {
			out := map[string]float64{}
			for _, m := range gathered("kubenexus_gpus") {
				if l := labelsOf(m); l["gpu_model"] == model {
					out[l["state"]] = m.GetGauge().GetValue()
				}
			}
			return out
		}
		Eventually(gpus).WithTimeout(testutil.Timeout).Should(Equal(map[string]float64{"allocated": 2, "free": 2, "fragmented": 0}))

		// The gang's quorum drops to two: two whole GPUs are left for it.
		before := pg.DeepCopy()
		pg.Spec.MinMember = 2
		Expect(k8sClient.Patch(suiteCtx, pg, client.MergeFrom(before))).To(Succeed())
		Eventually(tc.boundFn("train")).WithTimeout(testutil.Timeout).Should(Equal(2))
		gang := []string{tc.nodeOf("train-0")(), tc.nodeOf("train-1")()}
		Expect(gang).NotTo(ContainElement(shared))
		Expect(gang).NotTo(ContainElement(third))
	})

	It("refuses the nodes whose GPUs cannot hold a pod's claims before DynamicResources runs its allocator, and places the pod once a claim is released", func() {
		tc := newTestCluster(profile)
		driver := "full." + tc.ns + ".example.com"
		tc.gpuClass(sharedGPUClass, driver)
		tc.addNodes("full", 2, "cpu", "32", "memory", "128Gi")
		for i := range 2 {
			tc.sharedGPUSlice(fmt.Sprintf("%s-full-%d", tc.ns, i), driver, "80Gi")
		}
		for i := range 2 {
			name := fmt.Sprintf("fill-%d", i)
			Expect(k8sClient.Create(suiteCtx, tc.deviceClaimPod(tc.pod(name), name, sharedGPUClass, "", "80Gi"))).To(Succeed())
			Eventually(tc.nodeOf(name)).WithTimeout(testutil.Timeout).ShouldNot(BeEmpty(), tc.scheduledMessage(name))
		}
		// Both GPUs are full: the refusal is ResourceFragmentation's, so
		// DynamicResources never ran on these nodes.
		Expect(k8sClient.Create(suiteCtx, tc.deviceClaimPod(tc.pod("late"), "late", sharedGPUClass, "", "40Gi"))).To(Succeed())
		Eventually(tc.scheduledMessage("late")).WithTimeout(testutil.Timeout).Should(ContainSubstring("2 " + resourcefragmentation.ErrReasonGPURoom))
		// fill-0 ends and its claim is released, as the resource claim controller
		// does (this suite runs none): the hint re-queues the pod, which takes the GPU.
		freed := tc.nodeOf("fill-0")()
		Expect(k8sClient.Delete(suiteCtx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: tc.ns, Name: "fill-0"}}, client.GracePeriodSeconds(0))).To(Succeed())
		Eventually(func() error {
			claim := &resourceapi.ResourceClaim{}
			if err := k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: "fill-0"}, claim); err != nil {
				return err
			}
			claim.Status.Allocation, claim.Status.ReservedFor = nil, nil
			return k8sClient.Status().Update(suiteCtx, claim)
		}).WithTimeout(testutil.Timeout).Should(Succeed())
		Eventually(tc.nodeOf("late")).WithTimeout(testutil.Timeout).Should(Equal(freed), tc.scheduledMessage("late"))
	})

	It("takes a partition from a GPU that is already split before a whole one", func() {
		tc := newTestCluster(profile)
		driver := "mig." + tc.ns + ".example.com"
		tc.gpuClass(partitionedGPUClass, driver)
		tc.addNodes("mig", 2, "cpu", "32", "memory", "128Gi")
		for i := range 2 {
			tc.partitionedCards(fmt.Sprintf("%s-mig-%d", tc.ns, i), driver, 1)
		}
		full := fmt.Sprintf(`device.attributes[%q].profile == "full"`, driver)
		half := fmt.Sprintf(`device.attributes[%q].profile == "half"`, driver)
		// A whole-card pod waits for its gang: queued demand for whole cards.
		Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup("train", tc.ns).MinMember(2).Obj())).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, tc.deviceClaimPod(tc.pod("train-0").PodGroup("train"), "train-0", partitionedGPUClass, full, ""))).To(Succeed())

		for _, name := range []string{"half-0", "half-1"} {
			Expect(k8sClient.Create(suiteCtx, tc.deviceClaimPod(tc.pod(name), name, partitionedGPUClass, half, ""))).To(Succeed())
			Eventually(tc.nodeOf(name)).WithTimeout(testutil.Timeout).ShouldNot(BeEmpty(), tc.scheduledMessage(name))
		}
		Expect(tc.nodeOf("half-1")()).To(Equal(tc.nodeOf("half-0")()), "the second half should come from the card the first split")
	})

	It("plans a gang whose members ask for GPUs through claims where the GPUs are free, and says how many fit", func() {
		tc := newTestCluster(profile)
		driver := "gpus." + tc.ns + ".example.com"
		tc.gpuClass(sharedGPUClass, driver)
		// Rack a has room for the gangs' CPU and no GPUs, rack b two nodes of two GPUs
		// each and more CPU: counted by CPU alone, rack a is the tighter fit.
		tc.addLabelledNodes("cpu", 2, map[string]string{v1alpha1.LabelRack: tc.ns + "-a"}, "cpu", "8", "memory", "32Gi")
		tc.addLabelledNodes("gpu", 2, map[string]string{v1alpha1.LabelRack: tc.ns + "-b"}, "cpu", "32", "memory", "128Gi")
		for i := range 2 {
			tc.resourceSlice(fmt.Sprintf("%s-gpu-%d", tc.ns, i), driver, "80Gi", 2)
		}
		gang := func(name string, members int) {
			GinkgoHelper()
			Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup(name, tc.ns).MinMember(int32(members)).
				NetworkTopology(v1alpha1.NetworkTopologyRequired, v1alpha1.NetworkLevelRack).Obj())).To(Succeed())
			for i := range members {
				pod := fmt.Sprintf("%s-%d", name, i)
				Expect(k8sClient.Create(suiteCtx, tc.deviceClaimPod(tc.pod(pod).PodGroup(name), pod, sharedGPUClass, "", ""))).To(Succeed())
			}
		}
		// Five members of one GPU: no rack holds them, and the refusal says what they
		// ask for and how many the best rack holds.
		gang("big", 5)
		Eventually(tc.scheduledMessage("big-0")).WithTimeout(testutil.Timeout).Should(And(
			ContainSubstring(v1alpha1.ReasonTopologyUnsatisfiable), ContainSubstring("5 × 1 whole DRA GPUs"), ContainSubstring("the largest rack fits 4")))
		Expect(k8sClient.DeleteAllOf(suiteCtx, &corev1.Pod{}, client.InNamespace(tc.ns), client.MatchingLabels{v1alpha1.LabelPodGroup: "big"}, client.GracePeriodSeconds(0))).To(Succeed())
		// Four members go to rack b, two on each node.
		gang("train", 4)
		Eventually(tc.boundFn("train")).WithTimeout(testutil.Timeout).Should(Equal(4), tc.scheduledMessage("train-0"))
		perNode := map[string]int{}
		for i := range 4 {
			perNode[tc.nodeOf(fmt.Sprintf("train-%d", i))()]++
		}
		Expect(perNode).To(Equal(map[string]int{tc.ns + "-gpu-0": 2, tc.ns + "-gpu-1": 2}))
	})

	It("refuses a gang whose quorum needs members that share an unallocated claim, and plans one that can start with each shared claim's GPUs once, its sharers on one node", func() {
		tc := newTestCluster(profile)
		driver := "gpus." + tc.ns + ".example.com"
		tc.gpuClass(sharedGPUClass, driver)
		// One rack of two nodes with two GPUs each: four GPUs in all.
		tc.addLabelledNodes("gpu", 2, map[string]string{v1alpha1.LabelRack: tc.ns + "-b"}, "cpu", "32", "memory", "128Gi")
		for i := range 2 {
			tc.resourceSlice(fmt.Sprintf("%s-gpu-%d", tc.ns, i), driver, "80Gi", 2)
		}
		// Four members in pairs, each pair sharing one claim of two GPUs.
		pg := testutil.MakePodGroup("pairs", tc.ns).MinMember(4).NetworkTopology(v1alpha1.NetworkTopologyRequired, v1alpha1.NetworkLevelRack).Obj()
		Expect(k8sClient.Create(suiteCtx, pg)).To(Succeed())
		for pair := range 2 {
			claim := fmt.Sprintf("pair-%d", pair)
			Expect(k8sClient.Create(suiteCtx, &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: tc.ns},
				Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "gpu",
					Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: sharedGPUClass, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 2}}}}}})).To(Succeed())
			for i := range 2 {
				p := tc.pod(fmt.Sprintf("pairs-%d%d", pair, i)).PodGroup("pairs").Req("cpu", "1").Obj()
				p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To(claim)}}
				p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
				Expect(k8sClient.Create(suiteCtx, p)).To(Succeed())
			}
		}
		// kube-scheduler's DRA plugin allocates a claim for one pod at a time, when it
		// binds: all four cannot start together. Refused before any member is
		// reserved, naming the claim, rather than holding nodes until a timeout.
		for _, member := range []string{"pairs-00", "pairs-11"} {
			Eventually(tc.scheduledMessage(member)).WithTimeout(testutil.Timeout).Should(ContainSubstring(
				"members share an unallocated ResourceClaim: gang " + tc.ns + "/pairs: members pairs-00, pairs-01 share ResourceClaim " + tc.ns + "/pair-0, which is not allocated"))
		}
		Eventually(tc.scheduledMessage("pairs-00")).Should(ContainSubstring("2 of its 4 present members can start and it needs 4"))
		Consistently(tc.boundFn("pairs")).WithTimeout(3 * time.Second).Should(BeZero())

		// With a quorum of two, one member per claim starts the gang; the claims'
		// other users follow where their devices are. The plan counts each claim's
		// two GPUs once: four in the rack, not eight.
		Expect(k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(pg), pg)).To(Succeed())
		pg.Spec.MinMember = 2
		Expect(k8sClient.Update(suiteCtx, pg)).To(Succeed())
		Eventually(tc.boundFn("pairs")).WithTimeout(testutil.Timeout).Should(Equal(4), tc.scheduledMessage("pairs-01"))
		for pair := range 2 {
			Expect(tc.nodeOf(fmt.Sprintf("pairs-%d1", pair))()).To(Equal(tc.nodeOf(fmt.Sprintf("pairs-%d0", pair))()), "a claim's users run where its devices are")
		}
		Expect(tc.nodeOf("pairs-00")()).NotTo(Equal(tc.nodeOf("pairs-10")()))
	})
})

// gpuClass creates the cluster-scoped DeviceClass name of driver's devices for the spec.
func (tc *testCluster) gpuClass(name, driver string) {
	GinkgoHelper()
	class := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", driver)}}}}}
	Expect(k8sClient.Create(suiteCtx, class)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, class))).To(Succeed()) })
}

// sharedGPUSlice publishes one GPU of memory on node that several claims can share,
// each consuming the memory it asks for (consumable capacity).
func (tc *testCluster) sharedGPUSlice(node, driver, memory string) {
	GinkgoHelper()
	slice := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-shared"},
		Spec: resourceapi.ResourceSliceSpec{
			Driver: driver, Pool: resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1}, NodeName: ptr.To(node),
			Devices: []resourceapi.Device{{
				Name:                     "gpu-0",
				AllowMultipleAllocations: ptr.To(true),
				Capacity:                 map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: resource.MustParse(memory)}},
			}},
		},
	}
	Expect(k8sClient.Create(suiteCtx, slice)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, slice))).To(Succeed()) })
}

// deviceClaimPod creates the ResourceClaim name for one device of class (matching
// selector unless ""; consuming memory of a shared device unless "") and returns
// the pod w, asking 1 CPU, that uses it.
func (tc *testCluster) deviceClaimPod(w *testutil.PodWrapper, name, class, selector, memory string) *corev1.Pod {
	GinkgoHelper()
	req := &resourceapi.ExactDeviceRequest{DeviceClassName: class}
	if selector != "" {
		req.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: selector}}}
	}
	if memory != "" {
		req.Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse(memory)}}
	}
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: tc.ns},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "gpu", Exactly: req}}}}}
	Expect(k8sClient.Create(suiteCtx, claim)).To(Succeed())
	p := w.Req("cpu", "1").Obj()
	p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To(name)}}
	p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	return p
}

// allocatedDevice is the device the ResourceClaim name was allocated.
func (tc *testCluster) allocatedDevice(name string) string {
	GinkgoHelper()
	claim := &resourceapi.ResourceClaim{}
	Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: name}, claim)).To(Succeed())
	Expect(claim.Status.Allocation).NotTo(BeNil())
	r := claim.Status.Allocation.Devices.Results[0]
	return r.Pool + "/" + r.Device
}
