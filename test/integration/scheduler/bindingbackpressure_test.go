package scheduler_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/schedulertest"
)

// backpressureWaits is how many scheduling cycles have waited for bindings in flight
// (the count of kubenexus_binding_backpressure_wait_seconds).
func backpressureWaits() uint64 {
	GinkgoHelper()
	if ms := gathered("kubenexus_binding_backpressure_wait_seconds"); len(ms) > 0 {
		return ms[0].GetHistogram().GetSampleCount()
	}
	return 0
}

var _ = Describe("BindingBackpressure", func() {
	It("binds a gang of 40 and 40 plain pods with one binding in flight at a time, the cycles waiting for it", func() {
		profile := schedulertest.CoschedulingProfile(1, 60) + `  - name: BindingBackpressure
    args:
      maxBindingsInFlight: 1
`
		tc := newTestCluster(profile)
		tc.addNodes("n", 10, "cpu", "16")
		before := backpressureWaits()
		tc.gang("wide", 40, "1", "")
		for i := range 40 {
			Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("plain-%d", i)).Req("cpu", "1").Obj())).To(Succeed())
		}
		Eventually(tc.boundFn("wide")).WithTimeout(testutil.Timeout).Should(Equal(40))
		Eventually(tc.boundCount("")).WithTimeout(testutil.Timeout).WithPolling(200 * time.Millisecond).Should(Equal(80))
		Expect(backpressureWaits()).To(BeNumerically(">", before), "no scheduling cycle waited for a binding with a limit of 1")
	})
})
