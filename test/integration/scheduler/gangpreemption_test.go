package scheduler_test

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/schedulertest"
)

var _ = Describe("GangPreemption", func() {
	// A full cluster: four nodes of 4 CPUs hold two priority-10 gangs of four 2-CPU
	// members; a fifth node is full of priority-0 service pods.
	fill := func(tc *testCluster) {
		GinkgoHelper()
		priorityClass("batch-low", 10)
		priorityClass("batch-high", 1000)
		tc.addNodes("n", 5, "cpu", "4", "memory", "16Gi")
		for i := range 4 {
			svc := tc.pod(fmt.Sprintf("web-%d", i)).Label(v1alpha1.LabelWorkloadType, "service").Req("cpu", "1").Obj()
			svc.Spec.NodeName = tc.ns + "-n-4"
			Expect(k8sClient.Create(suiteCtx, svc)).To(Succeed())
		}
		for _, g := range []string{"low-a", "low-b"} {
			tc.preemptibleGang(g, 4, "2", "batch-low")
			Eventually(tc.boundFn(g)).WithTimeout(testutil.Timeout).Should(Equal(4))
		}
	}
	// left counts a gang's pods that still exist (evicted ones are deleted at once:
	// their grace period is 0, and there is no kubelet).
	left := func(tc *testCluster, group string) func() int {
		return func() int {
			pods := &corev1.PodList{}
			Expect(k8sClient.List(suiteCtx, pods, client.InNamespace(tc.ns), client.MatchingLabels{v1alpha1.LabelPodGroup: group})).To(Succeed())
			return len(pods.Items)
		}
	}
	services := func(tc *testCluster) int {
		pods := &corev1.PodList{}
		Expect(k8sClient.List(suiteCtx, pods, client.InNamespace(tc.ns), client.MatchingLabels{v1alpha1.LabelWorkloadType: "service"})).To(Succeed())
		return len(pods.Items)
	}

	It("evicts exactly one whole lower-priority gang, no service, for a priority-1000 gang of 4 on a full cluster", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		fill(tc)
		tc.preemptibleGang("high", 4, "2", "batch-high")
		Eventually(tc.boundFn("high")).WithTimeout(testutil.Timeout).Should(Equal(4))
		a, b := left(tc, "low-a")(), left(tc, "low-b")()
		Expect([]int{a, b}).To(ConsistOf(0, 4), "one whole gang evicted, the other untouched")
		Expect(services(tc)).To(Equal(4))
		Eventually(tc.eventReasons("high")).WithTimeout(testutil.Timeout).Should(ContainElement("Preempting"))
		victim := "low-a"
		if a == 4 {
			victim = "low-b"
		}
		Eventually(func() []string { return tc.podEvents(victim+"-0", "Preempted") }).WithTimeout(testutil.Timeout).Should(ContainElement(ContainSubstring(
			fmt.Sprintf("KubeNexus GangPreemption: preempted by gang %s/high (priority 1000); gang %s/%s (4 pods, priority 10) is evicted whole", tc.ns, tc.ns, victim))))
		// The survivors keep running.
		Consistently(func() int { return left(tc, "low-a")() + left(tc, "low-b")() }).WithTimeout(2 * time.Second).Should(Equal(4))
	})

	It("picks another gang when a PodDisruptionBudget forbids evicting the cheapest", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		fill(tc)
		// low-a sorts first; its budget allows no disruption.
		pdb := &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: "low-a", Namespace: tc.ns},
			Spec: policyv1.PodDisruptionBudgetSpec{
				MinAvailable: ptr.To(intstr.FromInt32(4)),
				Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.LabelPodGroup: "low-a"}},
			},
		}
		Expect(k8sClient.Create(suiteCtx, pdb)).To(Succeed())
		// No disruption controller runs here: write the status it would.
		pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: 0, CurrentHealthy: 4, DesiredHealthy: 4, ExpectedPods: 4}
		Expect(k8sClient.Status().Update(suiteCtx, pdb)).To(Succeed())

		tc.preemptibleGang("high", 4, "2", "batch-high")
		Eventually(tc.boundFn("high")).WithTimeout(testutil.Timeout).Should(Equal(4))
		Expect(left(tc, "low-a")()).To(Equal(4))
		Expect(left(tc, "low-b")()).To(Equal(0))
	})

	It("holds a gang's members back while their victims terminate, saying so, and places the gang once they are gone", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		fill(tc)
		// Whichever gang is evicted terminates only when the finalizer is lifted.
		const finalizer = "test.kubenexus.io/hold"
		setFinalizer := func(on bool) {
			GinkgoHelper()
			for _, g := range []string{"low-a", "low-b"} {
				for i := range 4 {
					Eventually(func() error {
						p := &corev1.Pod{}
						if err := k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: fmt.Sprintf("%s-%d", g, i)}, p); err != nil {
							return client.IgnoreNotFound(err)
						}
						p.Finalizers = nil
						if on {
							p.Finalizers = []string{finalizer}
						}
						return k8sClient.Update(suiteCtx, p)
					}).WithTimeout(testutil.Timeout).Should(Succeed())
				}
			}
		}
		setFinalizer(true)
		errored := scheduleAttempts("error")
		tc.preemptibleGang("high", 4, "2", "batch-high")
		held := func() int {
			n := 0
			for i := range 4 {
				p := &corev1.Pod{}
				Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: fmt.Sprintf("high-%d", i)}, p)).To(Succeed())
				for _, c := range p.Status.Conditions {
					// Unschedulable, not SchedulerError: waiting is not a failure.
					if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonUnschedulable &&
						strings.Contains(c.Message, "waiting for the pods preempted for it to terminate") {
						n++
					}
				}
			}
			return n
		}
		Eventually(held).WithTimeout(testutil.Timeout).Should(BeNumerically(">=", 1), "a member attempted while the victims terminate says what it waits for")
		Expect(scheduleAttempts("error")-errored).To(BeZero(), "no scheduling attempt errs while members wait for their victims")
		Consistently(tc.boundFn("high")).WithTimeout(2*time.Second).Should(Equal(0), "no member binds while its room is held by terminating victims")
		setFinalizer(false)
		Eventually(tc.boundFn("high")).WithTimeout(testutil.Timeout).Should(Equal(4))
		a, b := left(tc, "low-a")(), left(tc, "low-b")()
		Expect([]int{a, b}).To(ConsistOf(0, 4), "one whole gang evicted, the other untouched")
	})

	It("finishes a preemption a stopped scheduler began: a gang with one member marked is evicted whole", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		fill(tc)
		tc.stopScheduler()
		// As a scheduler that stopped after marking its first victim leaves it.
		p := &corev1.Pod{}
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: "low-b-2"}, p)).To(Succeed())
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: corev1.PodReasonPreemptionByScheduler, Message: "KubeNexus GangPreemption: preempted by gang x/high (priority 1000)", LastTransitionTime: metav1.Now()})
		Expect(k8sClient.Status().Update(suiteCtx, p)).To(Succeed())
		tc.startScheduler(schedulertest.CoschedulingProfile(1, 20))
		Eventually(left(tc, "low-b")).WithTimeout(testutil.Timeout).Should(Equal(0))
		Consistently(left(tc, "low-a")).WithTimeout(2 * time.Second).Should(Equal(4))
		Expect(services(tc)).To(Equal(4))
		// Preemption leaves no reservation behind.
		rrs := &v1alpha1.ResourceReservationList{}
		Expect(k8sClient.List(suiteCtx, rrs, client.InNamespace(tc.ns))).To(Succeed())
		Expect(rrs.Items).To(BeEmpty())
	})

	// KAI's reclaim: an elastic gang (minMember 2) runs four members on the four
	// nodes; a gang of higher priority reclaims two nodes. The elastic gang gives
	// back exactly its surplus and keeps running at its minimum.
	It("shrinks an elastic gang to exactly its minimum for a gang of higher priority, and keeps it running", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		priorityClass("batch-low", 10)
		priorityClass("batch-high", 1000)
		tc.addNodes("n", 4, "cpu", "4", "memory", "16Gi")
		Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup("elastic", tc.ns).MinMember(2).Obj())).To(Succeed())
		for i := range 4 {
			p := tc.pod(fmt.Sprintf("elastic-%d", i)).PodGroup("elastic").Label(v1alpha1.LabelWorkloadRole, "worker").Req("cpu", "4").PriorityClass("batch-low").Obj()
			p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
			Expect(k8sClient.Create(suiteCtx, p)).To(Succeed())
		}
		Eventually(tc.boundFn("elastic")).WithTimeout(testutil.Timeout).Should(Equal(4))
		// (No kubelet here: a placed gang stays Scheduled.)
		Eventually(func() v1alpha1.PodGroupPhase { return tc.podGroup("elastic").Status.Phase }).WithTimeout(testutil.Timeout).Should(Equal(v1alpha1.PodGroupScheduled))

		tc.preemptibleGang("high", 2, "4", "batch-high")
		Eventually(tc.boundFn("high")).WithTimeout(testutil.Timeout).Should(Equal(2))
		Expect(left(tc, "elastic")()).To(Equal(2))
		Consistently(left(tc, "elastic")).WithTimeout(2*time.Second).Should(Equal(2), "the elastic gang keeps its minimum")
		Expect(tc.boundFn("elastic")()).To(Equal(2))
		Expect(tc.podGroup("elastic").Status.Phase).To(Equal(v1alpha1.PodGroupScheduled), "the gang is still placed whole")
		var notes []string
		for i := range 4 {
			notes = append(notes, tc.podEvents(fmt.Sprintf("elastic-%d", i), "Preempted")...)
		}
		Expect(notes).To(ContainElement(ContainSubstring(fmt.Sprintf("of gang %s/elastic, shed: it keeps 2 member(s) running (priority 10)", tc.ns))))
	})

	// young, of the lowest priority, would be the victim; within its minimum
	// runtime it is spared for plain, of a higher priority but still below high's.
	It("spares a pod within the minimum runtime it declares and preempts one that declares none", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		priorityClass("batch-low", 10)
		priorityClass("batch-mid", 20)
		priorityClass("batch-high", 1000)
		tc.addNodes("n", 2, "cpu", "4", "memory", "16Gi")
		young := tc.pod("young").Req("cpu", "4").PriorityClass("batch-low").Annotation(v1alpha1.AnnotationMinRuntime, "1h").Obj()
		plain := tc.pod("plain").Req("cpu", "4").PriorityClass("batch-mid").Obj()
		for _, p := range []*corev1.Pod{young, plain} {
			p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
			Expect(k8sClient.Create(suiteCtx, p)).To(Succeed())
		}
		Eventually(func() int { return tc.boundCount("young")() + tc.boundCount("plain")() }).WithTimeout(testutil.Timeout).Should(Equal(2))
		high := tc.pod("high").Req("cpu", "4").PriorityClass("batch-high").Obj()
		Expect(k8sClient.Create(suiteCtx, high)).To(Succeed())
		Eventually(tc.boundCount("high")).WithTimeout(testutil.Timeout).Should(Equal(1))
		Expect(apierrors.IsNotFound(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: "plain"}, &corev1.Pod{}))).To(BeTrue(), "the pod with no minimum runtime is the victim")
		p := &corev1.Pod{}
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: "young"}, p)).To(Succeed())
		Expect(p.DeletionTimestamp).To(BeNil(), "the pod within its minimum runtime is spared")
	})

	// As a bronze tenant: its pod declares the longest minimum runtime and labels
	// itself gold. The minimum runtime holds back a preemptor of its own tier; the
	// gold label it wrote is not its tier (its namespace's is), so a silver
	// preemptor takes its node — and not the node of a gold tenant's pod within its
	// own minimum runtime.
	It("holds a minimum runtime against preemptors of the victim's namespace tier or lower, whatever tier its pod claims", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		tc.setTier(v1alpha1.TenantTierBronze)
		silver := tc.tenantNamespace(v1alpha1.TenantTierSilver)
		gold := tc.tenantNamespace(v1alpha1.TenantTierGold)
		priorityClass("batch-low", 10)
		priorityClass("batch-high", 1000)
		tc.addNodes("n", 2, "cpu", "4", "memory", "16Gi")
		young := func(c *testCluster, name string) {
			p := c.pod(name).Req("cpu", "4").PriorityClass("batch-low").Label(v1alpha1.LabelTenantTier, "gold").
				Annotation(v1alpha1.AnnotationMinRuntime, "4h").Obj()
			p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
			Expect(k8sClient.Create(suiteCtx, p)).To(Succeed())
			Eventually(c.boundCount(name)).WithTimeout(testutil.Timeout).Should(Equal(1))
		}
		young(tc, "squatter")
		young(gold, "gold-young")

		Expect(k8sClient.Create(suiteCtx, tc.pod("bronze-high").Req("cpu", "4").PriorityClass("batch-high").Obj())).To(Succeed())
		Eventually(tc.scheduledMessage("bronze-high")).WithTimeout(testutil.Timeout).Should(ContainSubstring("preemption: no running pod or gang of lower priority may be evicted for it"))
		Consistently(tc.boundCount("squatter")).WithTimeout(2*time.Second).Should(Equal(1), "a bronze preemptor waits out a bronze pod's minimum runtime")

		Expect(k8sClient.Create(suiteCtx, silver.pod("silver-high-0").Req("cpu", "4").PriorityClass("batch-high").Obj())).To(Succeed())
		Eventually(silver.boundCount("silver-high-0")).WithTimeout(testutil.Timeout).Should(Equal(1))
		Expect(apierrors.IsNotFound(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: "squatter"}, &corev1.Pod{}))).To(BeTrue(),
			"the pod's own gold label does not lift it above a silver preemptor")
		Expect(k8sClient.Create(suiteCtx, silver.pod("silver-high-1").Req("cpu", "4").PriorityClass("batch-high").Obj())).To(Succeed())
		Eventually(silver.scheduledMessage("silver-high-1")).WithTimeout(testutil.Timeout).Should(ContainSubstring("preemption: no running pod or gang of lower priority may be evicted for it"))
		Consistently(gold.boundCount("gold-young")).WithTimeout(2*time.Second).Should(Equal(1), "a silver preemptor waits out a gold pod's minimum runtime")
	})

	It("finishes a shed a stopped scheduler began: the member marked shed is evicted alone, its gang runs on", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		priorityClass("batch-low", 10)
		tc.addNodes("n", 3, "cpu", "4", "memory", "16Gi")
		Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup("elastic", tc.ns).MinMember(2).Obj())).To(Succeed())
		for i := range 3 {
			p := tc.pod(fmt.Sprintf("elastic-%d", i)).PodGroup("elastic").Req("cpu", "4").PriorityClass("batch-low").Obj()
			p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
			Expect(k8sClient.Create(suiteCtx, p)).To(Succeed())
		}
		Eventually(tc.boundFn("elastic")).WithTimeout(testutil.Timeout).Should(Equal(3))
		tc.stopScheduler()
		p := &corev1.Pod{}
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: "elastic-2"}, p)).To(Succeed())
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: corev1.PodReasonPreemptionByScheduler, Message: "KubeNexus GangPreemption: shed from gang " + tc.ns + "/elastic, which keeps running; preempted by gang x/high (priority 1000)",
			LastTransitionTime: metav1.Now()})
		Expect(k8sClient.Status().Update(suiteCtx, p)).To(Succeed())
		tc.startScheduler(schedulertest.CoschedulingProfile(1, 20))
		Eventually(left(tc, "elastic")).WithTimeout(testutil.Timeout).Should(Equal(2))
		Consistently(left(tc, "elastic")).WithTimeout(2*time.Second).Should(Equal(2), "only the member marked shed goes")
	})

	It("evicts a bronze borrower from premium when a gold gang needs the node, whatever the borrower's priority", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		priorityClass("batch-high", 1000)
		hw := "premium-" + tc.ns
		tc.addLabelledNodes("p", 1, map[string]string{"hw": hw}, "cpu", "8", "memory", "32Gi")
		tier := testutil.MakeHardwareTier(hw, 100).Selector(metav1.LabelSelector{MatchLabels: map[string]string{"hw": hw}}).
			Tenants(v1alpha1.TenantTierGold).Borrowing(v1alpha1.BorrowingPreemptible).Obj()
		Expect(k8sClient.Create(suiteCtx, tier)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, tier))).To(Succeed()) })
		tc.setTier(v1alpha1.TenantTierGold)
		// A bronze namespace's preemptible pod, of high priority, borrows the premium node.
		bronze := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bronze-", Labels: map[string]string{v1alpha1.LabelTenantTier: "bronze"}}}
		Expect(k8sClient.Create(suiteCtx, bronze)).To(Succeed())
		DeferCleanup(func() {
			Expect(k8sClient.DeleteAllOf(suiteCtx, &corev1.Pod{}, client.InNamespace(bronze.Name), client.GracePeriodSeconds(0))).To(Succeed())
		})
		borrower := testutil.MakePod("borrower", bronze.Name).SchedulerName(schedulertest.SchedulerName).NodeSelector("kubenexus.io/test", tc.nodeLabel).
			Label(v1alpha1.LabelPreemptible, "true").PriorityClass("batch-high").Req("cpu", "8").Obj()
		borrower.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
		Expect(k8sClient.Create(suiteCtx, borrower)).To(Succeed())
		Eventually(func() string {
			p := &corev1.Pod{}
			Expect(k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(borrower), p)).To(Succeed())
			return p.Spec.NodeName
		}).WithTimeout(testutil.Timeout).Should(Equal(tc.ns + "-p-0"))

		// A gold gang of priority 0 needs the node: the borrower goes, the gang runs.
		tc.preemptibleGang("gold", 2, "4", "")
		Eventually(tc.boundFn("gold")).WithTimeout(testutil.Timeout).Should(Equal(2))
		Expect(apierrors.IsNotFound(k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(borrower), &corev1.Pod{}))).To(BeTrue())
	})

	It("gives a tenant's gang whose PodGroup names system-node-critical only its pods' own priority: it evicts nothing", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		fill(tc)
		// The pods carry no class (priority 0); their PodGroup names the API server's
		// own system-node-critical (2000001000), as any tenant could write it.
		Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup("crit", tc.ns).MinMember(4).PriorityClassName("system-node-critical").Obj())).To(Succeed())
		for i := range 4 {
			Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("crit-%d", i)).PodGroup("crit").Req("cpu", "2").Obj())).To(Succeed())
		}
		Eventually(tc.scheduledMessage("crit-0")).WithTimeout(testutil.Timeout).Should(ContainSubstring("preemption: no running pod or gang of lower priority may be evicted for it"))
		Consistently(func() int { return left(tc, "low-a")() + left(tc, "low-b")() }).WithTimeout(3 * time.Second).Should(Equal(8))
		Expect(tc.boundFn("crit")()).To(Equal(0))
		Expect(tc.podEvents("low-a-0", "Preempted")).To(BeEmpty())
	})

	It("gives a tenant's CompositePodGroup that names a higher class only its pods' own priority: it evicts nothing", func() {
		if !nativeWorkloads {
			Skip("this kube-apiserver is older than 1.37: it does not serve CompositePodGroups")
		}
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		fill(tc)
		// The pods carry no class (priority 0); their composite names batch-high (1000),
		// above the running gangs' 10, as any tenant could write it.
		composite := testutil.CompositePodGroup(tc.ns, "lift", 2, "")
		composite.Spec.PriorityClassName = "batch-high"
		Expect(k8sClient.Create(suiteCtx, composite)).To(Succeed())
		for _, child := range []string{"lift-a", "lift-b"} {
			Expect(k8sClient.Create(suiteCtx, testutil.CompositeChild(tc.ns, child, "lift", 2, ""))).To(Succeed())
			for i := range 2 {
				Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("%s-%d", child, i)).SchedulingGroup(child).Label("app", "lift").Req("cpu", "2").Obj())).To(Succeed())
			}
		}
		Eventually(tc.scheduledMessage("lift-a-0")).WithTimeout(testutil.Timeout).Should(ContainSubstring("preemption: no running pod or gang of lower priority may be evicted for it"))
		Consistently(func() int { return left(tc, "low-a")() + left(tc, "low-b")() }).WithTimeout(3 * time.Second).Should(Equal(8))
		Expect(tc.podEvents("low-a-0", "Preempted")).To(BeEmpty())

		// The same composite whose pods are of batch-high themselves evicts one gang.
		Expect(k8sClient.DeleteAllOf(suiteCtx, &corev1.Pod{}, client.InNamespace(tc.ns), client.MatchingLabels{"app": "lift"}, client.GracePeriodSeconds(0))).To(Succeed())
		own := testutil.CompositePodGroup(tc.ns, "own", 2, "")
		own.Spec.PriorityClassName = "batch-high"
		Expect(k8sClient.Create(suiteCtx, own)).To(Succeed())
		var names []string
		for _, child := range []string{"own-a", "own-b"} {
			Expect(k8sClient.Create(suiteCtx, testutil.CompositeChild(tc.ns, child, "own", 2, ""))).To(Succeed())
			for i := range 2 {
				names = append(names, fmt.Sprintf("%s-%d", child, i))
				Expect(k8sClient.Create(suiteCtx, tc.pod(names[len(names)-1]).SchedulingGroup(child).PriorityClass("batch-high").Req("cpu", "2").Obj())).To(Succeed())
			}
		}
		Eventually(func() int {
			n := 0
			for _, name := range names {
				if tc.nodeOf(name)() != "" {
					n++
				}
			}
			return n
		}).WithTimeout(testutil.Timeout).Should(Equal(4))
		Expect(left(tc, "low-a")()+left(tc, "low-b")()).To(Equal(4), "one whole low gang evicted")
	})

	It("gives a tenant's KAI PodGroup that names a higher class and non-preemptible only its pods' own priority: it evicts nothing", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		fill(tc)
		// The pods carry no class (priority 0); their KAI PodGroup names batch-high
		// (1000), above the running gangs' 10, as any tenant could write it.
		kaiGang := func(name, podClass string) []string {
			pg := testutil.KAIPodGroup(tc.ns, name, 0, "",
				testutil.KAISubGroup{Name: "a", MinMember: 2}, testutil.KAISubGroup{Name: "b", MinMember: 2})
			pg.Object["spec"].(map[string]any)["priorityClassName"] = "batch-high"
			pg.Object["spec"].(map[string]any)["preemptibility"] = "non-preemptible"
			Expect(k8sClient.Create(suiteCtx, pg)).To(Succeed())
			var names []string
			for _, sub := range []string{"a", "b"} {
				for i := range 2 {
					names = append(names, fmt.Sprintf("%s-%s-%d", name, sub, i))
					w := tc.pod(names[len(names)-1]).KAIGroup(name, sub).Label("app", name).Req("cpu", "2")
					if podClass != "" {
						w = w.PriorityClass(podClass)
					}
					Expect(k8sClient.Create(suiteCtx, w.Obj())).To(Succeed())
				}
			}
			return names
		}
		lift := kaiGang("lift", "")
		Eventually(tc.scheduledMessage(lift[0])).WithTimeout(testutil.Timeout).Should(ContainSubstring("preemption: no running pod or gang of lower priority may be evicted for it"))
		Consistently(func() int { return left(tc, "low-a")() + left(tc, "low-b")() }).WithTimeout(3 * time.Second).Should(Equal(8))
		Expect(tc.podEvents("low-a-0", "Preempted")).To(BeEmpty())

		// The same PodGroup whose pods are of batch-high themselves evicts one gang.
		Expect(k8sClient.DeleteAllOf(suiteCtx, &corev1.Pod{}, client.InNamespace(tc.ns), client.MatchingLabels{"app": "lift"}, client.GracePeriodSeconds(0))).To(Succeed())
		own := kaiGang("own", "batch-high")
		Eventually(tc.boundOf(own...)).WithTimeout(testutil.Timeout).Should(Equal(4))
		Expect(left(tc, "low-a")()+left(tc, "low-b")()).To(Equal(4), "one whole low gang evicted")
	})

	It("keeps plain pods' preemption: a high-priority pod evicts the lowest-priority pod on one node, never a service for batch", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		priorityClass("batch-low", 10)
		priorityClass("batch-high", 1000)
		tc.addNodes("n", 2, "cpu", "4", "memory", "16Gi")
		svc := tc.pod("web").Label(v1alpha1.LabelWorkloadType, "service").Req("cpu", "4").Obj()
		svc.Spec.NodeName = tc.ns + "-n-0"
		Expect(k8sClient.Create(suiteCtx, svc)).To(Succeed())
		for i := range 2 {
			p := tc.pod(fmt.Sprintf("low-%d", i)).Label(v1alpha1.LabelWorkloadType, "batch").PriorityClass("batch-low").Req("cpu", "2").Obj()
			p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
			Expect(k8sClient.Create(suiteCtx, p)).To(Succeed())
			Eventually(tc.nodeOf(p.Name)).WithTimeout(testutil.Timeout).Should(Equal(tc.ns + "-n-1"))
		}
		Expect(k8sClient.Create(suiteCtx, tc.pod("high").Label(v1alpha1.LabelWorkloadType, "batch").PriorityClass("batch-high").Req("cpu", "2").Obj())).To(Succeed())
		Eventually(tc.nodeOf("high")).WithTimeout(testutil.Timeout).Should(Equal(tc.ns + "-n-1"))
		Expect(tc.boundCount("low-")()).To(Equal(1), "one 2-CPU pod makes room for one 2-CPU pod")
		Expect(services(tc)).To(Equal(1))
	})
})

// preemptibleGang is gang with members that go at once when evicted (grace period
// 0: there is no kubelet to finish a graceful deletion).
func (tc *testCluster) preemptibleGang(name string, n int32, cpu string, priorityClass string) {
	GinkgoHelper()
	Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup(name, tc.ns).MinMember(n).Obj())).To(Succeed())
	for i := range n {
		p := tc.pod(fmt.Sprintf("%s-%d", name, i)).PodGroup(name).Req("cpu", cpu).PriorityClass(priorityClass).Obj()
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
		Expect(k8sClient.Create(suiteCtx, p)).To(Succeed())
	}
}

// podEvents returns the notes of the pod's events with the given reason.
func (tc *testCluster) podEvents(pod, reason string) []string {
	GinkgoHelper()
	evs := &corev1.EventList{}
	Expect(k8sClient.List(suiteCtx, evs, client.InNamespace(tc.ns))).To(Succeed())
	var out []string
	for _, e := range evs.Items {
		if e.InvolvedObject.Kind == "Pod" && e.InvolvedObject.Name == pod && e.Reason == reason {
			out = append(out, e.Message)
		}
	}
	return out
}
