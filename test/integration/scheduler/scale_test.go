package scheduler_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/schedulertest"
)

var _ = Describe("Coscheduling at scale", func() {
	It("forms a 1000-member gang in one attempt", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 300))
		tc.addNodes("n", 125, "cpu", "8")
		tc.gang("big", 1000, "1", "")
		Eventually(tc.boundFn("big")).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Equal(1000))
		Eventually(tc.eventReasons("big")).WithTimeout(testutil.Timeout).Should(ContainElement(v1alpha1.ReasonGangScheduled))
		reasons := tc.eventReasons("big")()
		Expect(reasons).NotTo(ContainElement(v1alpha1.ReasonInsufficientCapacity))
		Expect(reasons).NotTo(ContainElement(v1alpha1.ReasonTimeout))
	})

	It("leaves no gang partially bound when the scheduler is killed and restarted while 20 gangs form", func() {
		profile := schedulertest.CoschedulingProfile(1, 10)
		tc := newTestCluster(profile)
		// Room for 15 of the 20 gangs of 4.
		tc.addNodes("n", 15, "cpu", "4")
		for i := range 20 {
			tc.gang(fmt.Sprintf("g%02d", i), 4, "1", "")
		}
		total := func() int {
			n := 0
			for i := range 20 {
				n += tc.bound(fmt.Sprintf("g%02d", i))
			}
			return n
		}
		Eventually(total).WithTimeout(testutil.Timeout).WithPolling(20 * time.Millisecond).Should(BeNumerically(">=", 4))
		tc.stopScheduler()
		tc.startScheduler(profile)

		perGang := func() []int {
			out := make([]int, 20)
			for i := range out {
				out[i] = tc.bound(fmt.Sprintf("g%02d", i))
			}
			return out
		}
		Eventually(total).WithTimeout(testutil.Timeout).Should(Equal(60))
		Consistently(perGang).WithTimeout(3 * time.Second).Should(HaveEach(Or(Equal(0), Equal(4))))
		for i := range 20 {
			name := fmt.Sprintf("g%02d", i)
			if tc.bound(name) == 4 {
				continue
			}
			// The five gangs left out say so.
			Eventually(func() string {
				if c := meta.FindStatusCondition(tc.podGroup(name).Status.Conditions, v1alpha1.PodGroupConditionScheduled); c != nil {
					return c.Reason
				}
				return ""
			}).WithTimeout(testutil.Timeout).Should(Equal(v1alpha1.ReasonInsufficientCapacity), "PodGroup %s", name)
		}
	})
})
