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

var _ = Describe("ResourceFragmentation", func() {
	It("puts 1-GPU pods on the fragmented node while a queued gang needs whole nodes, and the gang then fits", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		tc.addNodes("gpu", 3, "cpu", "64", "memory", "512Gi", "nvidia.com/gpu", "8")
		nodes := &corev1.NodeList{}
		Expect(k8sClient.List(suiteCtx, nodes, client.MatchingLabels{"kubenexus.io/test": tc.nodeLabel})).To(Succeed())
		fragmented := nodes.Items[0].Name
		used := tc.pod("used").Req("nvidia.com/gpu", "5").Limit("nvidia.com/gpu", "5").Obj()
		used.Spec.NodeName = fragmented
		Expect(k8sClient.Create(suiteCtx, used)).To(Succeed())

		// A gang of two 8-GPU members waits for its third member: its pods are queued
		// (held before the queue, as Coscheduling holds gangs short of their quorum),
		// and the scheduler's pod informer sees them before the pods created after.
		pg := testutil.MakePodGroup("train", tc.ns).MinMember(3).Obj()
		Expect(k8sClient.Create(suiteCtx, pg)).To(Succeed())
		for i := range 2 {
			Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("train-%d", i)).PodGroup("train").
				Req("cpu", "8", "memory", "32Gi", "nvidia.com/gpu", "8").Limit("nvidia.com/gpu", "8").Obj())).To(Succeed())
		}

		// Inference replicas of one GPU each: WorkloadAware spreads them (the stock
		// least-allocated score would too), onto the whole nodes the gang needs.
		for i := range 3 {
			name := fmt.Sprintf("infer-%d", i)
			Expect(k8sClient.Create(suiteCtx, tc.pod(name).Label(v1alpha1.LabelWorkloadType, "inference").
				Req("cpu", "2", "memory", "8Gi", "nvidia.com/gpu", "1").Limit("nvidia.com/gpu", "1").Obj())).To(Succeed())
			Eventually(tc.nodeOf(name)).WithTimeout(testutil.Timeout).Should(Equal(fragmented), "1-GPU pod %s should fill the fragmented node", name)
		}

		Expect(k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(pg), pg)).To(Succeed())
		pg.Spec.MinMember = 2
		Expect(k8sClient.Update(suiteCtx, pg)).To(Succeed())
		Eventually(tc.boundFn("train")).WithTimeout(testutil.Timeout).Should(Equal(2))
	})
})
