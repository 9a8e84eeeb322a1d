package scheduler_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
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
		Expect(k8sClient.Create(suiteCtx, testutil.ForeignPodGroup(v1alpha1.NewSigsPodGroup(), tc.ns, "tj", map[string]any{"minMember": int64(2)}))).To(Succeed())
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

	It("takes Volcano's role when spec.volcano.enabled: Inqueue once minResources fit, then Running and Completed; steps aside while a Volcano scheduler holds its lease", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 10))
		// The operator's namespace and the scheduler's ServiceAccount, as the chart
		// installs them, so that the KubeNexusConfig's conditions speak of Volcano alone.
		Expect(client.IgnoreAlreadyExists(k8sClient.Create(suiteCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kubenexus-system"}}))).To(Succeed())
		Expect(client.IgnoreAlreadyExists(k8sClient.Create(suiteCtx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "kubenexus-system", Name: "kubenexus-scheduler"}}))).To(Succeed())
		knc := testutil.MakeKubeNexusConfig(v1alpha1.DefaultConfigName).Volcano(func(v *v1alpha1.VolcanoSpec) { v.Enabled = ptr.To(true) }).Obj()
		Expect(k8sClient.Create(suiteCtx, knc)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, knc))).To(Succeed()) })
		volcanoPodGroup := func(name string, spec map[string]any) {
			Expect(k8sClient.Create(suiteCtx, testutil.ForeignPodGroup(v1alpha1.NewVolcanoPodGroup(), tc.ns, name, spec))).To(Succeed())
		}
		volcanoPhase := func(name string) func() string {
			return func() string {
				u := v1alpha1.NewVolcanoPodGroup()
				Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: name}, u)).To(Succeed())
				p, _, _ := unstructured.NestedString(u.Object, "status", "phase")
				return p
			}
		}
		// 4 CPUs in the cluster; the group needs 6 before its controller creates pods.
		tc.addNodes("n", 1, "cpu", "4")
		volcanoPodGroup("vj", map[string]any{"minMember": int64(2), "minResources": map[string]any{"cpu": "6"}})
		Eventually(volcanoPhase("vj")).WithTimeout(testutil.Timeout).Should(Equal("Pending"))
		Consistently(volcanoPhase("vj")).WithTimeout(2 * time.Second).Should(Equal("Pending"))
		tc.addNodes("m", 1, "cpu", "4")
		Eventually(volcanoPhase("vj")).WithTimeout(testutil.Timeout).Should(Equal("Inqueue"))

		// The controller creates the pods, naming the gang by Volcano's annotation.
		for i := range 2 {
			Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("vj-%d", i)).Annotation(v1alpha1.AnnotationVolcanoGroupName, "vj").Req("cpu", "3").Obj())).To(Succeed())
		}
		Eventually(func() int {
			n := 0
			for i := range 2 {
				if tc.nodeOf(fmt.Sprintf("vj-%d", i))() != "" {
					n++
				}
			}
			return n
		}).WithTimeout(testutil.Timeout).Should(Equal(2))
		for i := range 2 {
			setPhase(tc, fmt.Sprintf("vj-%d", i), corev1.PodRunning)
		}
		Eventually(volcanoPhase("vj")).WithTimeout(testutil.Timeout).Should(Equal("Running"))
		for i := range 2 {
			setPhase(tc, fmt.Sprintf("vj-%d", i), corev1.PodSucceeded)
		}
		Eventually(volcanoPhase("vj")).WithTimeout(testutil.Timeout).Should(Equal("Completed"))

		// A Volcano scheduler holding its lease owns its PodGroups: KubeNexus waits and
		// says so on the KubeNexusConfig; once the lease lapses, it takes over.
		volcanoNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "volcano-system"}}
		Expect(client.IgnoreAlreadyExists(k8sClient.Create(suiteCtx, volcanoNS))).To(Succeed())
		lease := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: "volcano-system", Name: "volcano"},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("vc-scheduler-0"), LeaseDurationSeconds: ptr.To[int32](3600), RenewTime: &metav1.MicroTime{Time: time.Now()}},
		}
		Expect(k8sClient.Create(suiteCtx, lease)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, lease))).To(Succeed()) })
		Eventually(func() string {
			got := &v1alpha1.KubeNexusConfig{}
			Expect(k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(knc), got)).To(Succeed())
			if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionDegraded); c != nil && c.Status == metav1.ConditionTrue {
				return c.Reason
			}
			return ""
		}).WithTimeout(testutil.Timeout).Should(Equal("VolcanoSchedulerActive"))
		volcanoPodGroup("vj2", map[string]any{"minMember": int64(1)})
		Consistently(volcanoPhase("vj2")).WithTimeout(3 * time.Second).Should(BeEmpty())
		Expect(k8sClient.Delete(suiteCtx, lease)).To(Succeed())
		Eventually(volcanoPhase("vj2")).WithTimeout(testutil.Timeout).Should(Equal("Inqueue"))
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
