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

var _ = Describe("PodGroup lifecycle", func() {
	// setPhase does what the kubelet would: report the member's phase.
	setPhase := func(tc *testCluster, name string, phase corev1.PodPhase) {
		GinkgoHelper()
		pod := &corev1.Pod{}
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: name}, pod)).To(Succeed())
		pod.Status.Phase = phase
		Expect(k8sClient.Status().Update(suiteCtx, pod)).To(Succeed())
	}
	phase := func(tc *testCluster, name string) func() v1alpha1.PodGroupPhase {
		return func() v1alpha1.PodGroupPhase { return tc.podGroup(name).Status.Phase }
	}

	It("goes Pending → Scheduled → Running → Succeeded with its members", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 10))
		Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup("job", tc.ns).MinMember(3).Obj())).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, tc.pod("job-0").PodGroup("job").Req("cpu", "1").Obj())).To(Succeed())
		Eventually(phase(tc, "job")).WithTimeout(testutil.Timeout).Should(Equal(v1alpha1.PodGroupPending))

		tc.addNodes("n", 1, "cpu", "4")
		for i := 1; i < 3; i++ {
			Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("job-%d", i)).PodGroup("job").Req("cpu", "1").Obj())).To(Succeed())
		}
		Eventually(phase(tc, "job")).WithTimeout(testutil.Timeout).Should(Equal(v1alpha1.PodGroupScheduled))
		Expect(tc.podGroup("job").Status.ScheduleStartTime).NotTo(BeNil())

		for i := range 3 {
			setPhase(tc, fmt.Sprintf("job-%d", i), corev1.PodRunning)
		}
		Eventually(phase(tc, "job")).WithTimeout(testutil.Timeout).Should(Equal(v1alpha1.PodGroupRunning))
		Expect(tc.podGroup("job").Status.Running).To(BeEquivalentTo(3))

		for i := range 3 {
			setPhase(tc, fmt.Sprintf("job-%d", i), corev1.PodSucceeded)
		}
		Eventually(phase(tc, "job")).WithTimeout(testutil.Timeout).Should(Equal(v1alpha1.PodGroupSucceeded))
		Expect(tc.podGroup("job").Status.Succeeded).To(BeEquivalentTo(3))
	})

	It("keeps a scheduler-plugins PodGroup's status as scheduler-plugins would: Pending → Scheduling → Running → Finished", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 10))
		u := v1alpha1.NewSigsPodGroup()
		u.SetNamespace(tc.ns)
		u.SetName("tj")
		u.Object["spec"] = map[string]any{"minMember": int64(2)}
		Expect(k8sClient.Create(suiteCtx, u)).To(Succeed())
		status := func() map[string]any {
			got := v1alpha1.NewSigsPodGroup()
			Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: "tj"}, got)).To(Succeed())
			st, _ := got.Object["status"].(map[string]any)
			return st
		}
		Expect(k8sClient.Create(suiteCtx, tc.pod("tj-0").PodGroup("tj").Req("cpu", "1").Obj())).To(Succeed())
		Eventually(status).WithTimeout(testutil.Timeout).Should(HaveKeyWithValue("phase", "Pending"))

		tc.addNodes("n", 1, "cpu", "4")
		Expect(k8sClient.Create(suiteCtx, tc.pod("tj-1").PodGroup("tj").Req("cpu", "1").Obj())).To(Succeed())
		Eventually(tc.boundFn("tj")).WithTimeout(testutil.Timeout).Should(Equal(2))
		Eventually(status).WithTimeout(testutil.Timeout).Should(And(HaveKeyWithValue("phase", "Scheduling"), HaveKey("scheduleStartTime")))
		for i := range 2 {
			setPhase(tc, fmt.Sprintf("tj-%d", i), corev1.PodRunning)
		}
		Eventually(status).WithTimeout(testutil.Timeout).Should(And(HaveKeyWithValue("phase", "Running"), HaveKeyWithValue("running", BeEquivalentTo(2))))
		for i := range 2 {
			setPhase(tc, fmt.Sprintf("tj-%d", i), corev1.PodSucceeded)
		}
		Eventually(status).WithTimeout(testutil.Timeout).Should(And(HaveKeyWithValue("phase", "Finished"), HaveKeyWithValue("succeeded", BeEquivalentTo(2))))
		// No KubeNexus PodGroup was created beside it.
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: "tj"}, &v1alpha1.PodGroup{})).NotTo(Succeed())
	})

	It("fails when a member fails and too few are left", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 10))
		tc.addNodes("n", 1, "cpu", "4")
		tc.gang("mpi", 2, "1", "")
		Eventually(tc.boundFn("mpi")).WithTimeout(testutil.Timeout).Should(Equal(2))
		setPhase(tc, "mpi-0", corev1.PodRunning)
		setPhase(tc, "mpi-1", corev1.PodFailed)
		Eventually(phase(tc, "mpi")).WithTimeout(testutil.Timeout).Should(Equal(v1alpha1.PodGroupFailed))
		Eventually(tc.scheduledReason("mpi")).WithTimeout(testutil.Timeout).Should(Equal("MembersFailed"))
	})
})
