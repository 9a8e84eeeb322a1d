package scheduler_test

import (
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/schedulertest"
)

var _ = Describe("WorkloadAware", func() {
	// nodesUsed maps each node of this test to how many pods with the prefix it runs.
	nodesUsed := func(tc *testCluster, prefix string) map[string]int {
		GinkgoHelper()
		pods := &corev1.PodList{}
		Expect(k8sClient.List(suiteCtx, pods, client.InNamespace(tc.ns))).To(Succeed())
		used := map[string]int{}
		for _, p := range pods.Items {
			if strings.HasPrefix(p.Name, prefix) && p.Spec.NodeName != "" {
				used[p.Spec.NodeName]++
			}
		}
		return used
	}

	It("keeps CPU-only pods off GPU nodes while CPU nodes have room, and still runs them when only GPU nodes do", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 10))
		tc.addNodes("cpu", 2, "cpu", "4", "memory", "16Gi")
		tc.addNodes("gpu", 2, "cpu", "64", "memory", "512Gi", "nvidia.com/gpu", "8")
		for i := range 8 {
			Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("web-%d", i)).Label("workload.kubenexus.io/type", "service").Req("cpu", "1", "memory", "2Gi").Obj())).To(Succeed())
			Eventually(tc.nodeOf(fmt.Sprintf("web-%d", i))).WithTimeout(testutil.Timeout).Should(ContainSubstring("-cpu-"))
		}
		// The CPU nodes are full: the next CPU-only pod runs on a GPU node.
		Expect(k8sClient.Create(suiteCtx, tc.pod("web-8").Label("workload.kubenexus.io/type", "service").Req("cpu", "1", "memory", "2Gi").Obj())).To(Succeed())
		Eventually(tc.nodeOf("web-8")).WithTimeout(testutil.Timeout).Should(ContainSubstring("-gpu-"))
	})

	It("packs batch pods onto fewer nodes and spreads services", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 10))
		tc.addNodes("n", 4, "cpu", "8", "memory", "32Gi")
		for i := range 8 {
			Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("job-%d", i)).Label("workload.kubenexus.io/type", "batch").Req("cpu", "1", "memory", "4Gi").Obj())).To(Succeed())
			Eventually(tc.nodeOf(fmt.Sprintf("job-%d", i))).WithTimeout(testutil.Timeout).ShouldNot(BeEmpty())
		}
		// Stock scoring (least-allocated) would put two on each of the 4 nodes.
		Expect(nodesUsed(tc, "job-")).To(HaveLen(1), "8 batch pods of 1 CPU fit one 8-CPU node")
		for i := range 3 {
			Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("svc-%d", i)).Label("workload.kubenexus.io/type", "service").Req("cpu", "1", "memory", "4Gi").Obj())).To(Succeed())
			Eventually(tc.nodeOf(fmt.Sprintf("svc-%d", i))).WithTimeout(testutil.Timeout).ShouldNot(BeEmpty())
		}
		Expect(nodesUsed(tc, "svc-")).To(HaveLen(3), "3 services on 3 different nodes")
	})
})
