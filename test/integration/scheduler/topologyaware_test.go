package scheduler_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/schedulertest"
)

var _ = Describe("TopologyAware", func() {
	It("spreads 9 replicas of one controller over 3 uneven zones with skew at most 1", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 10))
		// zone-a has four nodes, zone-b and zone-c one each: spreading by node alone
		// would put most replicas in zone-a.
		for zone, n := range map[string]int{"a": 4, "b": 1, "c": 1} {
			tc.addLabelledNodes("zone-"+zone, n, map[string]string{v1alpha1.LabelTopologyZone: tc.ns + "-" + zone}, "cpu", "8", "memory", "32Gi")
		}
		for i := range 9 {
			Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("web-%d", i)).Owner("apps/v1", "ReplicaSet", "web-5d8f").Req("cpu", "1", "memory", "1Gi").Obj())).To(Succeed())
			Eventually(tc.nodeOf(fmt.Sprintf("web-%d", i))).WithTimeout(testutil.Timeout).ShouldNot(BeEmpty())
		}
		perZone := tc.spreadOf()
		Expect(perZone).To(HaveLen(3))
		for z, n := range perZone {
			Expect(n).To(Equal(3), "zone %s has %d of 9 replicas: %v", z, n, perZone)
		}
	})
})
