package scheduler_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/cmd/kubectl-kubenexus/explain"
	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/schedulertest"
)

// Consolidation: the fleet's free GPUs are in pieces (two 2-GPU pods on every
// 8-GPU node: 4 GPUs free on each); a gang of two 8-GPU members of the same
// priority fits them only in total. GangPreemption moves the fewest pods that may
// move to empty two nodes, and their replacements fit on the others.
var _ = Describe("GangPreemption consolidation", func() {
	// fragment runs two 2-GPU pods of ReplicaSet filler on each of n 8-GPU nodes
	// (pods go at once when evicted: there is no kubelet).
	fragment := func(tc *testCluster, n int, preemptible bool) {
		GinkgoHelper()
		tc.addNodes("n", n, "cpu", "64", "memory", "256Gi", "nvidia.com/gpu", "8")
		for i := range n {
			for j := range 2 {
				p := tc.filler(fmt.Sprintf("filler-%d-%d", i, j), preemptible).Node(fmt.Sprintf("%s-n-%d", tc.ns, i)).Obj()
				Expect(k8sClient.Create(suiteCtx, p)).To(Succeed())
			}
		}
	}
	gang := func(tc *testCluster, name string, n int32) {
		GinkgoHelper()
		Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup(name, tc.ns).MinMember(n).Obj())).To(Succeed())
		for i := range n {
			Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("%s-%d", name, i)).PodGroup(name).Label(v1alpha1.LabelWorkloadType, "training").
				Req("cpu", "8", "memory", "32Gi").GPUs(8).Obj())).To(Succeed())
		}
	}
	// gone are the filler pods deleted (moved).
	gone := func(tc *testCluster, n int) func() []string {
		return func() []string {
			var out []string
			for i := range n {
				for j := range 2 {
					name := fmt.Sprintf("filler-%d-%d", i, j)
					if apierrors.IsNotFound(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: name}, &corev1.Pod{})) {
						out = append(out, name)
					}
				}
			}
			return out
		}
	}

	It("moves 4 preemptible pods to start a gang of two 8-GPU members that the free GPUs hold only in pieces; their replacements fit elsewhere", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		fragment(tc, 4, true)
		gang(tc, "train", 2)
		Eventually(gone(tc, 4)).WithTimeout(testutil.Timeout).Should(HaveLen(4))
		moved := gone(tc, 4)()
		// What the ReplicaSet controller does: a replacement for each pod evicted.
		for _, name := range moved {
			Expect(k8sClient.Create(suiteCtx, tc.filler(name+"-r", true).Obj())).To(Succeed())
		}
		Eventually(tc.boundFn("train")).WithTimeout(testutil.Timeout).Should(Equal(2))
		trainNodes := map[string]bool{tc.nodeOf("train-0")(): true, tc.nodeOf("train-1")(): true}
		Expect(trainNodes).To(HaveLen(2))
		for _, name := range moved {
			Eventually(tc.nodeOf(name + "-r")).WithTimeout(testutil.Timeout).ShouldNot(BeEmpty())
			Expect(trainNodes).NotTo(HaveKey(tc.nodeOf(name+"-r")()), "a replacement took the gang's room")
		}
		Consistently(gone(tc, 4)).WithTimeout(2*time.Second).Should(HaveLen(4), "no more than the 4 pods of two nodes are moved")
		Eventually(tc.eventReasons("train")).WithTimeout(testutil.Timeout).Should(ContainElement("Consolidating"))
		Eventually(func() []string { return tc.podEvents(moved[0], "Preempted") }).WithTimeout(testutil.Timeout).Should(ContainElement(ContainSubstring(
			fmt.Sprintf("KubeNexus GangPreemption: moved to make one whole place for gang %s/train (priority 0); pod %s/%s (priority 0), whose replacement fits on", tc.ns, tc.ns, moved[0]))))
	})

	// The pods arrive before their PodGroup: until it is seen the gang's size is not
	// known, and nothing is moved for the one member the scheduler knows of (the room
	// made for it was held while the other member had none, and the gang stalled).
	It("moves nothing for a gang whose PodGroup it has not seen yet, then makes room for the whole gang", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		fragment(tc, 4, true)
		for i := range 2 {
			Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("train-%d", i)).PodGroup("train").Label(v1alpha1.LabelWorkloadType, "training").
				Req("cpu", "8", "memory", "32Gi").GPUs(8).Obj())).To(Succeed())
		}
		Eventually(tc.scheduledMessage("train-0")).WithTimeout(testutil.Timeout).Should(ContainSubstring("no PodGroup \"train\" exists"))
		Consistently(gone(tc, 4)).WithTimeout(2*time.Second).Should(BeEmpty(), "pods were moved for a gang of unknown size")
		Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup("train", tc.ns).MinMember(2).Obj())).To(Succeed())
		Eventually(gone(tc, 4)).WithTimeout(testutil.Timeout).Should(HaveLen(4))
		for _, name := range gone(tc, 4)() {
			Expect(k8sClient.Create(suiteCtx, tc.filler(name+"-r", true).Obj())).To(Succeed())
		}
		Eventually(tc.boundFn("train")).WithTimeout(testutil.Timeout).Should(Equal(2))
	})

	// Racks interleaved by name (r0, r2 in rack a; r1, r3 in rack b), every node
	// fragmented: a gang required in one rack gets both nodes of one rack emptied,
	// not the first two by name, which straddle the racks.
	It("makes the whole place inside one rack for a gang that requires one", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		rackOf := map[string]string{}
		for i, rack := range []string{"a", "b", "a", "b"} {
			prefix := fmt.Sprintf("r%d", i)
			tc.addLabelledNodes(prefix, 1, map[string]string{v1alpha1.LabelRack: tc.ns + "-" + rack}, "cpu", "64", "memory", "256Gi", "nvidia.com/gpu", "8")
			node := fmt.Sprintf("%s-%s-0", tc.ns, prefix)
			rackOf[node] = rack
			for j := range 2 {
				Expect(k8sClient.Create(suiteCtx, tc.filler(fmt.Sprintf("filler-%d-%d", i, j), true).Node(node).Obj())).To(Succeed())
			}
		}
		Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup("train", tc.ns).MinMember(2).
			NetworkTopology(v1alpha1.NetworkTopologyRequired, v1alpha1.NetworkLevelRack).Obj())).To(Succeed())
		for i := range 2 {
			Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("train-%d", i)).PodGroup("train").Label(v1alpha1.LabelWorkloadType, "training").
				Req("cpu", "8", "memory", "32Gi").GPUs(8).Obj())).To(Succeed())
		}
		Eventually(gone(tc, 4)).WithTimeout(testutil.Timeout).Should(HaveLen(4))
		moved := gone(tc, 4)()
		for _, name := range moved {
			Expect(k8sClient.Create(suiteCtx, tc.filler(name+"-r", true).Obj())).To(Succeed())
		}
		Eventually(tc.boundFn("train")).WithTimeout(testutil.Timeout).Should(Equal(2))
		a, b := tc.nodeOf("train-0")(), tc.nodeOf("train-1")()
		Expect(a).NotTo(Equal(b))
		Expect(rackOf[a]).To(Equal(rackOf[b]), "the gang runs on %s and %s, across racks", a, b)
		Consistently(gone(tc, 4)).WithTimeout(2*time.Second).Should(HaveLen(4), "only the pods of the gang's two nodes are moved")
	})

	// As a bronze tenant whose gang's pods claim gold: a gold tenant's preemptible
	// pods (same priority) are of a higher tier than the gang's namespace, and none
	// moves; the gold tenant's own gang moves them.
	It("moves no pod of a higher tenant tier for a bronze gang, whatever tier its pods claim", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		tc.setTier(v1alpha1.TenantTierBronze)
		gold := tc.tenantNamespace(v1alpha1.TenantTierGold)
		fragment(gold, 4, true)
		Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup("train", tc.ns).MinMember(2).Obj())).To(Succeed())
		for i := range 2 {
			Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("train-%d", i)).PodGroup("train").Label(v1alpha1.LabelWorkloadType, "training").
				Label(v1alpha1.LabelTenantTier, "gold").Req("cpu", "8", "memory", "32Gi").GPUs(8).Obj())).To(Succeed())
		}
		Eventually(tc.scheduledMessage("train-0")).WithTimeout(testutil.Timeout).Should(ContainSubstring("preemption: no running pod or gang of lower priority may be evicted for it"))
		Consistently(gone(gold, 4)).WithTimeout(3*time.Second).Should(BeEmpty(), "a bronze gang moved a gold tenant's pods")

		gang(gold, "gold-train", 2)
		Eventually(gone(gold, 4)).WithTimeout(testutil.Timeout).Should(HaveLen(4), "the gold tenant's gang moves its own tier's pods")
		Eventually(gold.boundFn("gold-train")).WithTimeout(testutil.Timeout).Should(Equal(2))
		Expect(tc.boundFn("train")()).To(Equal(0))
	})

	It("moves no pod that is not labelled preemptible", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		fragment(tc, 4, false)
		gang(tc, "train", 2)
		Eventually(tc.scheduledMessage("train-0")).WithTimeout(testutil.Timeout).Should(ContainSubstring("preemption: no running pod or gang of lower priority may be evicted for it"))
		Consistently(gone(tc, 4)).WithTimeout(2 * time.Second).Should(BeEmpty())
	})

	It("moves no pod of a higher priority", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		priorityClass("serving-high", 1000)
		tc.addNodes("n", 4, "cpu", "64", "memory", "256Gi", "nvidia.com/gpu", "8")
		for i := range 4 {
			for j := range 2 {
				p := tc.filler(fmt.Sprintf("filler-%d-%d", i, j), true).PriorityClass("serving-high").Node(fmt.Sprintf("%s-n-%d", tc.ns, i)).Obj()
				Expect(k8sClient.Create(suiteCtx, p)).To(Succeed())
			}
		}
		gang(tc, "train", 2)
		Eventually(tc.scheduledMessage("train-0")).WithTimeout(testutil.Timeout).Should(ContainSubstring("preemption: no running pod or gang of lower priority may be evicted for it"))
		Consistently(gone(tc, 4)).WithTimeout(2 * time.Second).Should(BeEmpty())
	})

	It("keeps to maxEvictionsPerGang: a gang that needs 6 pods moved waits, saying so", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		fragment(tc, 6, true)
		gang(tc, "train", 3)
		Eventually(tc.scheduledMessage("train-0")).WithTimeout(testutil.Timeout).Should(ContainSubstring(
			"consolidation: one whole place needs 6 pods moved, over spec.plugins.gangPreemption.consolidation.maxEvictionsPerGang (4)"))
		Consistently(gone(tc, 6)).WithTimeout(2 * time.Second).Should(BeEmpty())
		// kubectl kubenexus explain's dry run names the same plan and the budget.
		r, err := (&explain.Explainer{Client: k8sClient}).Explain(suiteCtx, tc.ns, "podgroup", "train")
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Sections).To(HaveLen(1))
		var preemption string
		for _, l := range r.Sections[0].Lines {
			if l.Layer == explain.LayerPreemption {
				preemption = l.Text
			}
		}
		Expect(preemption).To(MatchRegexp(`; consolidation would move 6 pods \(%s/filler-\d-\d(, %s/filler-\d-\d){5}\) to place them in one piece on the cluster, \d+\.\d GPU-hours lost — over spec.plugins.gangPreemption.consolidation.maxEvictionsPerGang \(4\): it waits for pods to end instead`, tc.ns, tc.ns))
	})
})

// filler is a 2-GPU pod of ReplicaSet filler (preemptible: labelled so), gone at
// once when evicted.
func (tc *testCluster) filler(name string, preemptible bool) *testutil.PodWrapper {
	w := tc.pod(name).Owner("apps/v1", "ReplicaSet", "filler").Label(v1alpha1.LabelWorkloadType, "batch").Req("cpu", "2", "memory", "8Gi").GPUs(2)
	if preemptible {
		w = w.Label(v1alpha1.LabelPreemptible, "true")
	}
	w.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
	return w
}
