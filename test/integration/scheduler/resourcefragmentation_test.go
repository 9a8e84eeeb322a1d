package scheduler_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/schedulertest"
)

var _ = Describe("ResourceFragmentation", func() {
	It("puts 1-GPU pods on the fragmented node while a queued gang needs whole nodes, and the gang then fits", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		tc.addNodes("gpu", 3, "cpu", "64", "memory", "512Gi", "nvidia.com/gpu", "8")
		nodes := &corev1.NodeList{}
		Expect(k8sClient.List(suiteCtx, nodes, client.MatchingLabels{"kubenexus.io/test": tc.nodeLabel})).To(Succeed())
		fragmented := nodes.Items[0].Name
		tc.onNode("used", fragmented, "5")

		// A gang of two 8-GPU members waits for its third member.
		release := tc.heldGang("train", 2)

		// Inference replicas of one GPU each: WorkloadAware spreads them (the stock
		// least-allocated score would too), onto the whole nodes the gang needs.
		for i := range 3 {
			tc.inferencePod(fmt.Sprintf("infer-%d", i), fragmented, "fill the fragmented node")
		}
		release()
	})

	It("keeps a free multi-node NVLink domain whole for a queued gang of whole-node members", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		cliqueA, cliqueB := "nvl-a."+tc.ns, "nvl-b."+tc.ns
		tc.addLabelledNodes("a", 2, map[string]string{v1alpha1.LabelGPUClique: cliqueA}, "cpu", "64", "memory", "512Gi", "nvidia.com/gpu", "8")
		tc.addLabelledNodes("b", 2, map[string]string{v1alpha1.LabelGPUClique: cliqueB}, "cpu", "64", "memory", "512Gi", "nvidia.com/gpu", "8")
		// Domain b is in use: one node's GPUs all taken, and CPU taken on the other,
		// so that a spreading score (WorkloadAware's for inference) would rather send
		// small pods to domain a.
		tc.onNode("full", tc.ns+"-b-1", "8")
		busy := tc.pod("busy").Req("cpu", "32").Obj()
		busy.Spec.NodeName = tc.ns + "-b-0"
		Expect(k8sClient.Create(suiteCtx, busy)).To(Succeed())

		release := tc.heldGang("nvl", 2)
		for i := range 2 {
			tc.inferencePod(fmt.Sprintf("infer-%d", i), tc.ns+"-b-0", "stay out of the free NVLink domain")
		}
		release()
		Expect([]string{tc.nodeOf("nvl-0")(), tc.nodeOf("nvl-1")()}).To(ConsistOf(tc.ns+"-a-0", tc.ns+"-a-1"))
	})

	It("with keepHostsForQueued, refuses a small pod the last host of a queued size and lets it in once another host frees", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 60) + `  - name: ResourceFragmentation
    args:
      keepHostsForQueued: true
`)
		// The small pod may only use node "pick-0"; the queued 8-GPU pod could use
		// either, but "gpu-0" is full.
		tc.addLabelledNodes("pick", 1, map[string]string{"pick": tc.ns}, "cpu", "64", "memory", "512Gi", "nvidia.com/gpu", "8")
		tc.addNodes("gpu", 1, "cpu", "64", "memory", "512Gi", "nvidia.com/gpu", "8")
		tc.onNode("full", tc.ns+"-gpu-0", "8")
		// An 8-GPU member waits for its gang's second member: queued demand for the
		// one node that can host it.
		tc.heldGang("big", 1)

		Expect(k8sClient.Create(suiteCtx, tc.pod("small").NodeSelector("pick", tc.ns).Req("cpu", "2", "nvidia.com/gpu", "1").Limit("nvidia.com/gpu", "1").Obj())).To(Succeed())
		Eventually(tc.scheduledMessage("small")).WithTimeout(testutil.Timeout).Should(
			ContainSubstring("node kept for queued pods: 1 pod(s) of 8 GPUs wait and 1 node(s) can host them"))
		Consistently(tc.nodeOf("small")).WithTimeout(2 * time.Second).Should(BeEmpty())

		// The full node frees: two hosts for one queued pod. Only this plugin's
		// queueing hint re-queues the small pod (the other node refused it by its
		// node selector), well before the five-minute flush of unschedulable pods.
		Expect(k8sClient.Delete(suiteCtx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: tc.ns, Name: "full"}}, client.GracePeriodSeconds(0))).To(Succeed())
		Eventually(tc.nodeOf("small")).WithTimeout(testutil.Timeout).Should(Equal(tc.ns + "-pick-0"))
	})

	It("serves the largest placeable gang and the allocated, free and fragmented GPUs per GPU model and tier, and shows the gangs in the HardwareTier's status", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		model, hw := "TestGPU-"+tc.ns, "gauge-"+tc.ns
		labels := func(rack string) map[string]string {
			return map[string]string{"hw": hw, v1alpha1.LabelGPUProduct: model, v1alpha1.LabelRack: rack + "-" + tc.ns}
		}
		// rack a: two 8-GPU nodes, one with 5 GPUs in use; rack b: one 8-GPU node.
		tc.addLabelledNodes("a", 2, labels("a"), "cpu", "64", "memory", "512Gi", "nvidia.com/gpu", "8")
		tc.addLabelledNodes("b", 1, labels("b"), "cpu", "64", "memory", "512Gi", "nvidia.com/gpu", "8")
		tier := testutil.MakeHardwareTier(hw, 50).Selector(metav1.LabelSelector{MatchLabels: map[string]string{"hw": hw}}).Obj()
		Expect(k8sClient.Create(suiteCtx, tier)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, tier))).To(Succeed()) })
		used := tc.pod("used").Req("nvidia.com/gpu", "5").Limit("nvidia.com/gpu", "5").Obj()
		used.Spec.NodeName = tc.ns + "-a-0"
		Expect(k8sClient.Create(suiteCtx, used)).To(Succeed())

		// By hand: free GPUs are 3 and 8 in rack a, 8 in rack b.
		want := map[string]float64{
			"8/rack": 1, "8/any": 2, "4/rack": 2, "4/any": 4, "2/rack": 5, "2/any": 9, "1/rack": 11, "1/any": 19,
		}
		gauges := func() map[string]float64 {
			got := map[string]float64{}
			for _, m := range gathered("kubenexus_largest_placeable_gang") {
				l := labelsOf(m)
				if l["gpu_model"] == model && l["hardware_tier"] == hw && (l["level"] == "rack" || l["level"] == "any") {
					got[l["gpus_per_member"]+"/"+l["level"]] = m.GetGauge().GetValue()
				}
			}
			return got
		}
		Eventually(gauges).WithTimeout(testutil.Timeout).Should(Equal(want))
		// 24 GPUs: 5 allocated, 19 free, of which the 3 beside the used ones are fragmented.
		gpus := map[string]float64{}
		for _, m := range gathered("kubenexus_gpus") {
			if l := labelsOf(m); l["gpu_model"] == model && l["hardware_tier"] == hw {
				gpus[l["state"]] = m.GetGauge().GetValue()
			}
		}
		Expect(gpus).To(Equal(map[string]float64{"allocated": 5, "free": 19, "fragmented": 3}))

		status := func() map[string]int32 {
			t := &v1alpha1.HardwareTier{}
			Expect(k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(tier), t)).To(Succeed())
			got := map[string]int32{}
			for _, g := range t.Status.LargestPlaceableGangs {
				if g.Level == "rack" || g.Level == "any" {
					got[fmt.Sprintf("%d/%s", g.GPUsPerMember, g.Level)] = g.Members
				}
			}
			return got
		}
		Eventually(status).WithTimeout(testutil.Timeout).Should(Equal(map[string]int32{
			"8/rack": 1, "8/any": 2, "4/rack": 2, "4/any": 4, "2/rack": 5, "2/any": 9, "1/rack": 11, "1/any": 19,
		}))
	})
})

// onNode creates a pod of this test already bound to node, asking for gpus GPUs.
func (tc *testCluster) onNode(name, node, gpus string) {
	GinkgoHelper()
	p := tc.pod(name).Req("nvidia.com/gpu", gpus).Limit("nvidia.com/gpu", gpus).Obj()
	p.Spec.NodeName = node
	Expect(k8sClient.Create(suiteCtx, p)).To(Succeed())
}

// heldGang creates a gang of n 8-GPU members whose PodGroup asks for one member
// more: Coscheduling holds them before the queue, so they are queued demand for
// whole nodes, which the scheduler's pod informer sees before pods created after.
// release lowers the quorum to n and waits until the gang is bound.
func (tc *testCluster) heldGang(name string, n int32) (release func()) {
	GinkgoHelper()
	pg := testutil.MakePodGroup(name, tc.ns).MinMember(n + 1).Obj()
	Expect(k8sClient.Create(suiteCtx, pg)).To(Succeed())
	for i := range n {
		Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("%s-%d", name, i)).PodGroup(name).
			Req("cpu", "8", "memory", "32Gi", "nvidia.com/gpu", "8").Limit("nvidia.com/gpu", "8").Obj())).To(Succeed())
	}
	return func() {
		GinkgoHelper()
		// A merge patch of the one field, as a user would: the PodGroup's status may be
		// written meanwhile, and an Update of a stale copy would conflict.
		before := pg.DeepCopy()
		pg.Spec.MinMember = n
		Expect(k8sClient.Patch(suiteCtx, pg, client.MergeFrom(before))).To(Succeed())
		Eventually(tc.boundFn(name)).WithTimeout(testutil.Timeout).Should(Equal(int(n)))
	}
}

// inferencePod creates a 1-GPU inference pod and waits until it is bound to node.
func (tc *testCluster) inferencePod(name, node, why string) {
	GinkgoHelper()
	Expect(k8sClient.Create(suiteCtx, tc.pod(name).Label(v1alpha1.LabelWorkloadType, "inference").
		Req("cpu", "2", "memory", "8Gi", "nvidia.com/gpu", "1").Limit("nvidia.com/gpu", "1").Obj())).To(Succeed())
	Eventually(tc.nodeOf(name)).WithTimeout(testutil.Timeout).Should(Equal(node), "1-GPU pod %s should %s", name, why)
}
