package scheduler_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
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
	It("plans a gang over GPUs published only as DRA devices: the rack whose devices hold it", func() {
		if apiServerMinor < 36 {
			Skip("DeviceClasses name extended resources from kube-apiserver 1.36 on (DRAExtendedResource)")
		}
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		const driver = "gpu.example.com"
		class := &resourceapi.DeviceClass{
			ObjectMeta: metav1.ObjectMeta{Name: tc.ns + "-gpu"},
			Spec: resourceapi.DeviceClassSpec{
				ExtendedResourceName: ptr.To("nvidia.com/gpu"),
				Selectors:            []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", driver)}}},
			},
		}
		Expect(k8sClient.Create(suiteCtx, class)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, class))).To(Succeed()) })

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
		tier := testutil.MakeHardwareTier(tc.ns+"-rack0", 10).Selector(metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.LabelRack: tc.ns + "-rack-0"}}).Obj()
		createHardwareTiers(tier)
		Eventually(func() []int64 {
			got := &v1alpha1.HardwareTier{}
			Expect(k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(tier), got)).To(Succeed())
			return []int64{int64(got.Status.Nodes), got.Status.GPUCapacity, got.Status.GPUAllocated}
		}).WithTimeout(testutil.Timeout).Should(Equal([]int64{2, 16, 16}), "nodes, GPU capacity and GPUs allocated of rack 0")
	})
})
