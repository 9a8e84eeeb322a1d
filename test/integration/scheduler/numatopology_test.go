package scheduler_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/schedulertest"
)

var _ = Describe("NUMATopology", func() {
	It("fills NUMA cells from the snapshot before any report arrives, frees a deleted pod's cell, isolates whole cells and never refuses best-effort", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 10))
		// Two nodes whose kubelets reported two idle cells of 32 CPUs each, and never
		// report again (no exporter runs here).
		tc.addNodes("nrt", 2, "cpu", "64", "memory", "256Gi")
		for i := range 2 {
			tc.nodeResourceTopology(fmt.Sprintf("%s-nrt-%d", tc.ns, i), 2, "32", "32", "128Gi")
		}
		// A third node described by the fallback labels: two cells of 8 CPUs.
		tc.addLabelledNodes("labels", 1, map[string]string{v1alpha1.LabelNUMANodeCount: "2"}, "cpu", "16", "memory", "64Gi")

		numaPod := func(name string, policy v1alpha1.NUMAPolicy, cpus string) *corev1.Pod {
			return tc.pod(name).Annotation(v1alpha1.AnnotationNUMAPolicy, string(policy)).
				Req("cpu", cpus, "memory", "4Gi").Limit("cpu", cpus, "memory", "4Gi").Obj()
		}
		// Four 20-CPU single-numa pods: one per 32-CPU cell; the 8-CPU cells of the
		// labelled node hold none.
		for i := range 4 {
			Expect(k8sClient.Create(suiteCtx, numaPod(fmt.Sprintf("single-%d", i), v1alpha1.NUMAPolicySingleNUMA, "20"))).To(Succeed())
		}
		Eventually(tc.boundCount("single-")).WithTimeout(testutil.Timeout).Should(Equal(4))
		perNode := map[string]int{}
		for i := range 4 {
			perNode[tc.nodeOf(fmt.Sprintf("single-%d", i))()]++
		}
		Expect(perNode).To(Equal(map[string]int{tc.ns + "-nrt-0": 2, tc.ns + "-nrt-1": 2}))

		// Each NRT node still has 24 CPUs free, enough for a fifth by node totals —
		// but 12 in each cell.
		Expect(k8sClient.Create(suiteCtx, numaPod("single-4", v1alpha1.NUMAPolicySingleNUMA, "20"))).To(Succeed())
		// (The 16-CPU labelled node is refused by its totals.)
		Eventually(tc.scheduledMessage("single-4")).WithTimeout(testutil.Timeout).Should(And(
			ContainSubstring("2 single-numa: no NUMA cell with 20 CPUs free; best cell has 12 CPUs"),
			ContainSubstring("1 Insufficient cpu")))
		Consistently(tc.nodeOf("single-4")).WithTimeout(2 * time.Second).Should(BeEmpty())

		// Deleting a pod frees its cell, still without a report.
		freed := tc.nodeOf("single-0")()
		p := &corev1.Pod{}
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: "single-0"}, p)).To(Succeed())
		Expect(k8sClient.Delete(suiteCtx, p, client.GracePeriodSeconds(0))).To(Succeed())
		Eventually(tc.nodeOf("single-4")).WithTimeout(testutil.Timeout).Should(Equal(freed))

		// Isolated pods take whole cells: only the labelled node has idle ones.
		for i := range 3 {
			Expect(k8sClient.Create(suiteCtx, numaPod(fmt.Sprintf("isolated-%d", i), v1alpha1.NUMAPolicyIsolated, "1"))).To(Succeed())
		}
		Eventually(tc.boundCount("isolated-")).WithTimeout(testutil.Timeout).Should(Equal(2))
		for _, name := range []string{"isolated-0", "isolated-1"} {
			Expect(tc.nodeOf(name)()).To(Equal(tc.ns + "-labels-0"))
		}
		Eventually(tc.scheduledMessage("isolated-2")).WithTimeout(testutil.Timeout).Should(
			ContainSubstring("3 isolated: no idle NUMA cell; all 2 cells run pods with NUMA-aligned resources"))
		// The labelled node has 14 CPUs free by its totals, none for a single-numa
		// pod: its two cells belong to the isolated pods.
		Expect(k8sClient.Create(suiteCtx, numaPod("single-small", v1alpha1.NUMAPolicySingleNUMA, "1"))).To(Succeed())
		Eventually(tc.nodeOf("single-small")).WithTimeout(testutil.Timeout).Should(HavePrefix(tc.ns + "-nrt-"))

		// best-effort never refuses: 20 CPUs fit no cell anywhere, but a node with 23
		// free takes it across its cells.
		Expect(k8sClient.Create(suiteCtx, numaPod("spread", v1alpha1.NUMAPolicyBestEffort, "20"))).To(Succeed())
		Eventually(tc.nodeOf("spread")).WithTimeout(testutil.Timeout).Should(HavePrefix(tc.ns + "-nrt-"))

		// A hint that is no policy keeps the pod pending and says what is allowed.
		Expect(k8sClient.Create(suiteCtx, numaPod("typo", "single", "1"))).To(Succeed())
		Eventually(tc.scheduledMessage("typo")).WithTimeout(testutil.Timeout).Should(ContainSubstring(
			`annotation numa.scheduling.kubenexus.io/policy="single" is not a NUMA policy: use best-effort, restricted, single-numa, isolated or none`))
	})

	It("retries a refused pod when its node's report frees a cell, not each time an exporter republishes a busy node", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 10))
		tc.addNodes("busy", 1, "cpu", "64", "memory", "256Gi")
		node := tc.ns + "-busy-0"
		// The kubelet reports 24 of each cell's 32 CPUs taken by pods this scheduler
		// does not place (another scheduler's, static ones).
		tc.nodeResourceTopology(node, 2, "32", "8", "128Gi")
		pod := tc.pod("single").Annotation(v1alpha1.AnnotationNUMAPolicy, string(v1alpha1.NUMAPolicySingleNUMA)).
			Req("cpu", "20", "memory", "4Gi").Limit("cpu", "20", "memory", "4Gi").Obj()
		Expect(k8sClient.Create(suiteCtx, pod)).To(Succeed())
		Eventually(tc.scheduledMessage("single")).WithTimeout(testutil.Timeout).Should(
			ContainSubstring("single-numa: no NUMA cell with 20 CPUs free; best cell has 8 CPUs"))

		// The exporter republishes every few seconds, the node as busy or busier:
		// the pod is not tried again for it.
		before := scheduleAttempts("unschedulable")
		for _, available := range []string{"8", "6", "4"} {
			tc.republish(node, 2, "32", available, "128Gi")
			time.Sleep(500 * time.Millisecond)
		}
		Consistently(func() float64 { return scheduleAttempts("unschedulable") - before }).
			WithTimeout(3 * time.Second).Should(BeZero())

		// A cell frees 20 CPUs: the pod binds there.
		tc.republish(node, 2, "32", "24", "128Gi")
		Eventually(tc.nodeOf("single")).WithTimeout(testutil.Timeout).Should(Equal(node))
	})
})

// nodeResourceTopology publishes a kubelet NUMA report for node: `cells` cells of
// cpus CPUs (available of them free) and memory each, with the kubelet's
// single-numa-node policy off (the pods' own hints decide).
func (tc *testCluster) nodeResourceTopology(node string, cells int, cpus, available, memory string) {
	GinkgoHelper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion":       "topology.node.k8s.io/v1alpha2",
		"kind":             "NodeResourceTopology",
		"metadata":         map[string]any{"name": node},
		"topologyPolicies": []any{"None"},
		"zones":            nrtZones(cells, cpus, available, memory),
	}}
	Expect(k8sClient.Create(suiteCtx, u)).To(Succeed())
	DeferCleanup(func() {
		Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, u))).To(Succeed())
	})
}

// republish is an exporter's next report for node: each of its cells has
// available of its cpus CPUs free.
func (tc *testCluster) republish(node string, cells int, cpus, available, memory string) {
	GinkgoHelper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("topology.node.k8s.io/v1alpha2")
	u.SetKind("NodeResourceTopology")
	Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: node}, u)).To(Succeed())
	u.Object["zones"] = nrtZones(cells, cpus, available, memory)
	Expect(k8sClient.Update(suiteCtx, u)).To(Succeed())
}

// nrtZones are a report's NUMA zones: `cells` cells of `cpus` CPUs (available of them
// free) and memory, all free.
func nrtZones(cells int, cpus, available, memory string) []any {
	var zones []any
	for i := range cells {
		zones = append(zones, map[string]any{
			"name": fmt.Sprintf("node-%d", i),
			"type": "Node",
			"resources": []any{
				map[string]any{"name": "cpu", "capacity": cpus, "allocatable": cpus, "available": available},
				map[string]any{"name": "memory", "capacity": memory, "allocatable": memory, "available": memory},
			},
		})
	}
	return zones
}
