package scheduler_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/schedulertest"
)

// batchHints is how many pods kube-scheduler's opportunistic batching placed on the
// node the previous, identical pod's ranking named (scheduler_batch_attempts_total,
// result hint_used) in this process so far.
func batchHints() float64 {
	GinkgoHelper()
	return countedWithResult("scheduler_batch_attempts_total", "hint_used")
}

// queueWhileStopped stops the test's scheduler, runs create, and starts the
// scheduler again: the pods create makes are all queued when scheduling begins, so
// identical ones are scheduled one after the other.
func (tc *testCluster) queueWhileStopped(profile string, create func()) {
	GinkgoHelper()
	tc.stopScheduler()
	create()
	tc.startScheduler(profile)
}

// spreadOf counts, per zone label value, this test's bound pods.
func (tc *testCluster) spreadOf() map[string]int {
	GinkgoHelper()
	perZone := map[string]int{}
	pods := &corev1.PodList{}
	Expect(k8sClient.List(suiteCtx, pods, client.InNamespace(tc.ns))).To(Succeed())
	for _, p := range pods.Items {
		node := &corev1.Node{}
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: p.Spec.NodeName}, node)).To(Succeed())
		perZone[node.Labels[v1alpha1.LabelTopologyZone]]++
	}
	return perZone
}

var _ = Describe("Opportunistic batching with the KubeNexus profile", func() {
	It("places identical plain pods from the previous pod's ranking, one per node", func() {
		profile := schedulertest.CoschedulingProfile(1, 10)
		tc := newTestCluster(profile)
		tc.addNodes("n", 20, "cpu", "4", "memory", "16Gi")
		before := batchHints()
		tc.queueWhileStopped(profile, func() {
			for i := range 20 {
				Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("p-%02d", i)).Req("cpu", "3", "memory", "1Gi").Obj())).To(Succeed())
			}
		})
		Eventually(tc.boundCount("p-")).WithTimeout(testutil.Timeout).Should(Equal(20))
		nodes := map[string]string{}
		for i := range 20 {
			name := fmt.Sprintf("p-%02d", i)
			node := tc.nodeOf(name)()
			Expect(nodes).NotTo(HaveKey(node), "%s and %s share node %s (3 of its 4 CPUs each)", nodes[node], name, node)
			nodes[node] = name
		}
		// Every KubeNexus plugin signs a plain pod, and the profile has no system
		// default spread constraints (which make kube-scheduler's PodTopologySpread
		// refuse every pod): batching serves them.
		Expect(batchHints() - before).To(BeNumerically(">=", 1))
	})

	It("does not batch the replicas TopologyAware spreads: 9 queued at once end 3 per zone", func() {
		profile := schedulertest.CoschedulingProfile(1, 10)
		tc := newTestCluster(profile)
		for zone, n := range map[string]int{"a": 4, "b": 1, "c": 1} {
			tc.addLabelledNodes("zone-"+zone, n, map[string]string{v1alpha1.LabelTopologyZone: tc.ns + "-" + zone}, "cpu", "8", "memory", "32Gi")
		}
		before := batchHints()
		tc.queueWhileStopped(profile, func() {
			for i := range 9 {
				Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("web-%d", i)).Owner("apps/v1", "ReplicaSet", "web-5d8f").Req("cpu", "1", "memory", "1Gi").Obj())).To(Succeed())
			}
		})
		Eventually(tc.boundCount("web-")).WithTimeout(testutil.Timeout).Should(Equal(9))
		perZone := tc.spreadOf()
		Expect(perZone).To(HaveLen(3))
		for z, n := range perZone {
			Expect(n).To(Equal(3), "zone %s has %d of 9 replicas: %v", z, n, perZone)
		}
		Expect(batchHints() - before).To(BeZero())
	})
})
