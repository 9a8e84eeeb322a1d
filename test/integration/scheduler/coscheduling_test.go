package scheduler_test

import (
	"fmt"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/coscheduling"
	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/schedulertest"
	"github.com/kube-nexus/kubenexus/test/util/testenv"
)

var _ = Describe("Coscheduling", func() {
	It("binds all 8 members of a gang when they fit", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 10))
		tc.addNodes("n", 4, "cpu", "4")
		tc.gang("train", 8, "2", "")
		Eventually(tc.boundFn("train")).WithTimeout(testutil.Timeout).Should(Equal(8))
		Eventually(tc.eventReasons("train")).WithTimeout(testutil.Timeout).Should(ContainElement("GangScheduled"))
		Eventually(func() v1alpha1.PodGroupPhase { return tc.podGroup("train").Status.Phase }).
			WithTimeout(testutil.Timeout).Should(Equal(v1alpha1.PodGroupScheduled))
		Expect(tc.podGroup("train").Status.Scheduled).To(BeEquivalentTo(8))
	})

	It("binds a gang whose PodGroup and members exist before the scheduler starts", func() {
		// At start-up the scheduling queue receives the members before the KubeNexus
		// object cache has listed the PodGroup (an idle custom resource lists in about
		// a second on 1.37): PreEnqueue must neither wait for it under the queue's lock
		// nor lose the members it turns away meanwhile.
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 10))
		tc.addNodes("n", 2, "cpu", "4")
		tc.stopScheduler()
		tc.gang("early", 4, "2", "")
		tc.startScheduler(schedulertest.CoschedulingProfile(1, 10))
		Eventually(tc.boundFn("early")).WithTimeout(testutil.Timeout).Should(Equal(4))
		Eventually(tc.eventReasons("early")).WithTimeout(testutil.Timeout).Should(ContainElement("GangScheduled"))
	})

	It("binds none of an 8-member gang when only 7 fit, and says why", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 10))
		tc.addNodes("n", 7, "cpu", "2")
		tc.gang("train", 8, "2", "")
		Eventually(tc.eventReasons("train")).WithTimeout(testutil.Timeout).Should(ContainElement("InsufficientCapacity"))
		Consistently(tc.boundFn("train")).WithTimeout(5 * time.Second).Should(Equal(0))
		Eventually(tc.scheduledReason("train")).WithTimeout(testutil.Timeout).Should(Equal(v1alpha1.ReasonInsufficientCapacity))
		Expect(tc.podGroup("train").Status.Phase).To(Equal(v1alpha1.PodGroupScheduling))

		pod := &corev1.Pod{}
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: "train-0"}, pod)).To(Succeed())
		var cond *corev1.PodCondition
		for i := range pod.Status.Conditions {
			if pod.Status.Conditions[i].Type == corev1.PodScheduled {
				cond = &pod.Status.Conditions[i]
			}
		}
		Expect(cond).NotTo(BeNil())
		Expect(cond.Reason).To(Equal(corev1.PodReasonUnschedulable))
	})

	It("binds one of two gangs that together exceed capacity, and the other once the first is gone", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 10))
		tc.addNodes("n", 4, "cpu", "4")
		tc.gang("first", 8, "2", "")
		tc.gang("second", 8, "2", "")
		Eventually(func() int { return tc.bound("first") + tc.bound("second") }).WithTimeout(testutil.Timeout).Should(Equal(8))
		Consistently(func() []int { return []int{tc.bound("first"), tc.bound("second")} }).WithTimeout(3 * time.Second).
			Should(Or(Equal([]int{8, 0}), Equal([]int{0, 8})))

		winner, loser := "first", "second"
		if tc.bound("second") == 8 {
			winner, loser = "second", "first"
		}
		Expect(k8sClient.DeleteAllOf(suiteCtx, &corev1.Pod{}, client.InNamespace(tc.ns),
			client.MatchingLabels{"scheduling.x-k8s.io/pod-group": winner}, client.GracePeriodSeconds(0))).To(Succeed())
		Eventually(tc.boundFn(loser)).WithTimeout(testutil.Timeout).Should(Equal(8))
	})

	It("tries a gang rejected for want of room as soon as room frees, not when its backoff runs out", func() {
		// A backoff of ten minutes: the gang binds within the test's timeout only if
		// the room that frees ends it.
		tc := newTestCluster(schedulertest.CoschedulingProfile(600, 10))
		tc.addNodes("n", 2, "cpu", "4")
		Expect(k8sClient.Create(suiteCtx, tc.pod("running").Req("cpu", "4").Node(tc.ns+"-n-0").Obj())).To(Succeed())
		tc.gang("next", 2, "4", "")
		// One member is refused for want of room and the gang backs off: the other
		// says so.
		Eventually(func() string { return tc.scheduledMessage("next-0")() + tc.scheduledMessage("next-1")() }).WithTimeout(testutil.Timeout).
			Should(ContainSubstring(coscheduling.ErrReasonBackoff))
		Expect(k8sClient.Delete(suiteCtx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: tc.ns, Name: "running"}}, client.GracePeriodSeconds(0))).To(Succeed())
		Eventually(tc.boundFn("next")).WithTimeout(testutil.Timeout).Should(Equal(2))
	})

	It("holds a gang whose minResources exceed the cluster's free capacity, and says so", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 10))
		tc.addNodes("n", 2, "cpu", "4")
		// Spark-operator style: minMember 1, the real need in minResources.
		Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup("spark", tc.ns).MinMember(1).
			MinResources(testutil.ResourceList("cpu", "12")).Obj())).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, tc.pod("spark-driver").PodGroup("spark").Req("cpu", "1").Obj())).To(Succeed())
		Eventually(tc.scheduledMessage("spark-driver")).WithTimeout(testutil.Timeout).Should(ContainSubstring("cluster lacks the gang's minResources: " + tc.ns + "/spark needs 4 cpu more than the cluster has free"))
		Expect(tc.bound("spark")).To(Equal(0))

		// More capacity arrives: the driver is placed.
		tc.addNodes("more", 1, "cpu", "4")
		Eventually(tc.boundFn("spark")).WithTimeout(testutil.Timeout).Should(Equal(1))
	})

	It("forms a gang whose members arrive over longer than the Permit timeout", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 2))
		tc.addNodes("n", 2, "cpu", "4")
		Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup("slow", tc.ns).MinMember(4).Obj())).To(Succeed())
		for i := range 4 {
			Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("slow-%d", i)).PodGroup("slow").Req("cpu", "1").Obj())).To(Succeed())
			if i < 3 {
				Consistently(tc.boundFn("slow")).WithTimeout(1500 * time.Millisecond).Should(Equal(0))
			}
		}
		Eventually(tc.boundFn("slow")).WithTimeout(testutil.Timeout).Should(Equal(4))
		Expect(tc.eventReasons("slow")()).NotTo(ContainElement("Timeout"))
	})

	It("tries each member that arrives after the quorum once, not again at every later arrival, and places them when capacity comes", func() {
		// An elastic gang (minMember 2 of up to 12, as Spark dynamic allocation or an
		// elastic PyTorch job makes): its quorum binds, then ten more members arrive one
		// by one while no node has room. Each is tried and stays pending; a later
		// arrival gives the earlier ones no new chance and must not send them round the
		// queue again (that made a gang of n pending members cost n² attempts). With the
		// quorum bound, a late member is placed as room allows, like a pod of its own:
		// it is told what its node lacks.
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		tc.addNodes("n", 1, "cpu", "2")
		tc.gang("elastic", 2, "1", "")
		Eventually(tc.boundFn("elastic")).WithTimeout(testutil.Timeout).Should(Equal(2))
		before := scheduleAttempts("unschedulable")
		const late = 10
		for i := 2; i < 2+late; i++ {
			name := fmt.Sprintf("elastic-%d", i)
			Expect(k8sClient.Create(suiteCtx, tc.pod(name).PodGroup("elastic").Req("cpu", "1").Obj())).To(Succeed())
			Eventually(tc.scheduledMessage(name)).WithTimeout(testutil.Timeout).Should(ContainSubstring("1 Insufficient cpu"))
		}
		Consistently(tc.boundFn("elastic")).WithTimeout(time.Second).Should(Equal(2))
		// One attempt per late member, a few more for races between the queue and the
		// informer; re-trying every pending member at each arrival makes 55.
		Expect(scheduleAttempts("unschedulable") - before).To(BeNumerically("<=", late+5))

		tc.addNodes("more", 1, "cpu", "10")
		Eventually(tc.boundFn("elastic")).WithTimeout(testutil.Timeout).Should(Equal(2 + late))
	})

	It("lets a higher-priority gang overtake a lower-priority one queued before it", func() {
		profile := schedulertest.CoschedulingProfile(1, 10)
		tc := newTestCluster(profile)
		priorityClass("batch-low", 10)
		priorityClass("batch-high", 1000)
		tc.gang("low", 4, "2", "batch-low")
		tc.gang("high", 4, "2", "batch-high")
		// No nodes yet: both gangs are queued, low first. Capacity for one gang arrives
		// while the scheduler restarts, so that it arrives whole: nodes created one by
		// one would let a gang be tried, and rejected, on the first node alone.
		Eventually(tc.scheduledMessage("low-0")).WithTimeout(testutil.Timeout).ShouldNot(BeEmpty())
		tc.stopScheduler()
		tc.addNodes("n", 2, "cpu", "4")
		tc.startScheduler(profile)
		Eventually(tc.boundFn("high")).WithTimeout(testutil.Timeout).Should(Equal(4))
		Consistently(tc.boundFn("low")).WithTimeout(3 * time.Second).Should(Equal(0))
	})

	It("orders a gang by its PodGroup's priorityClassName capped at its members' own priority, never above it", func() {
		profile := schedulertest.CoschedulingProfile(1, 10)
		tc := newTestCluster(profile)
		priorityClass("batch-low", 10)
		priorityClass("batch-mid", 500)
		priorityClass("batch-high", 1000)
		// Capacity for one gang. The scheduler is down while the gangs are submitted,
		// so that when it starts all are in its queue at once and the queue order
		// alone decides which gang gets the nodes.
		tc.addNodes("n", 2, "cpu", "4")
		tc.stopScheduler()
		// "pods-mid": its members carry 500 themselves. "group-lowered": members of
		// 1000 whose PodGroup names batch-low, so the gang is queued at 10.
		// "group-raised": members of 0 whose PodGroup names batch-high — a tenant
		// reaching above its pods' admission — queued at 0, not 1000.
		tc.gang("pods-mid", 4, "2", "batch-mid")
		Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup("group-lowered", tc.ns).MinMember(4).PriorityClassName("batch-low").Obj())).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup("group-raised", tc.ns).MinMember(4).PriorityClassName("batch-high").Obj())).To(Succeed())
		for i := range 4 {
			Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("group-lowered-%d", i)).PodGroup("group-lowered").PriorityClass("batch-high").Req("cpu", "2").Obj())).To(Succeed())
			Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("group-raised-%d", i)).PodGroup("group-raised").Req("cpu", "2").Obj())).To(Succeed())
		}
		tc.startScheduler(profile)
		Eventually(tc.boundFn("pods-mid")).WithTimeout(testutil.Timeout).Should(Equal(4))
		Consistently(func() int { return tc.boundFn("group-lowered")() + tc.boundFn("group-raised")() }).WithTimeout(3 * time.Second).Should(Equal(0))
	})

	It("tells a member whose PodGroup does not exist which one to create, in each object dialect, and schedules it once it exists", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 10))
		tc.addNodes("n", 1, "cpu", "4")
		Expect(k8sClient.Create(suiteCtx, tc.pod("by-label").PodGroup("ghost").Req("cpu", "1").Obj())).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, tc.pod("by-volcano").Annotation(v1alpha1.AnnotationVolcanoGroupName, "phantom").Req("cpu", "1").Obj())).To(Succeed())
		Eventually(tc.scheduledMessage("by-label")).WithTimeout(testutil.Timeout).Should(And(
			ContainSubstring(`no PodGroup "ghost" exists in namespace `+tc.ns+" (named by the pod's label scheduling.x-k8s.io/pod-group)"),
			ContainSubstring("apiVersion scheduling.kubenexus.io/v1alpha1, kind PodGroup")))
		Eventually(tc.scheduledMessage("by-volcano")).WithTimeout(testutil.Timeout).Should(
			ContainSubstring(`no PodGroup "phantom" exists in namespace ` + tc.ns + " (named by the pod's annotation scheduling.k8s.io/group-name)"))
		Eventually(func() []string {
			evs := &corev1.EventList{}
			Expect(k8sClient.List(suiteCtx, evs, client.InNamespace(tc.ns))).To(Succeed())
			var msgs []string
			for _, e := range evs.Items {
				if e.InvolvedObject.Name == "by-label" && e.Reason == "FailedScheduling" {
					msgs = append(msgs, e.Message)
				}
			}
			return msgs
		}).WithTimeout(testutil.Timeout).Should(ContainElement(ContainSubstring(`no PodGroup "ghost" exists`)))

		Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup("ghost", tc.ns).MinMember(1).Obj())).To(Succeed())
		Eventually(tc.nodeOf("by-label")).WithTimeout(testutil.Timeout).ShouldNot(BeEmpty())
		Expect(tc.nodeOf("by-volcano")()).To(BeEmpty())
	})

	It("honours scheduler-plugins' PodGroups (scheduling.x-k8s.io): minMember all-or-nothing and minResources", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 10))
		tc.addNodes("n", 2, "cpu", "4")
		sigsPodGroup := func(name string, spec map[string]any) {
			Expect(k8sClient.Create(suiteCtx, testutil.ForeignPodGroup(v1alpha1.NewSigsPodGroup(), tc.ns, name, spec))).To(Succeed())
		}
		sigsPodGroup("sp", map[string]any{"minMember": int64(3), "scheduleTimeoutSeconds": int64(10)})
		for i := range 2 {
			Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("sp-%d", i)).PodGroup("sp").Req("cpu", "1").Obj())).To(Succeed())
		}
		Consistently(tc.boundFn("sp")).WithTimeout(2 * time.Second).Should(Equal(0))
		Expect(k8sClient.Create(suiteCtx, tc.pod("sp-2").PodGroup("sp").Req("cpu", "1").Obj())).To(Succeed())
		Eventually(tc.boundFn("sp")).WithTimeout(testutil.Timeout).Should(Equal(3))

		// minResources beyond the cluster: refused before any member is placed.
		sigsPodGroup("big", map[string]any{"minMember": int64(1), "minResources": map[string]any{"cpu": "100"}})
		Expect(k8sClient.Create(suiteCtx, tc.pod("big-0").PodGroup("big").Req("cpu", "1").Obj())).To(Succeed())
		Eventually(tc.scheduledMessage("big-0")).WithTimeout(testutil.Timeout).Should(ContainSubstring(coscheduling.ErrReasonMinResources))
		Expect(tc.nodeOf("big-0")()).To(BeEmpty())
	})

	It("does not count members held by another system's scheduling gate, and never removes the gate", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 10))
		tc.addNodes("n", 2, "cpu", "4")
		Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup("gated", tc.ns).MinMember(4).Obj())).To(Succeed())
		for i := range 3 {
			Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("gated-%d", i)).PodGroup("gated").Req("cpu", "1").Obj())).To(Succeed())
		}
		Expect(k8sClient.Create(suiteCtx, tc.pod("gated-3").PodGroup("gated").Req("cpu", "1").Gate("kueue.x-k8s.io/admission").Obj())).To(Succeed())
		Consistently(tc.boundFn("gated")).WithTimeout(3 * time.Second).Should(Equal(0))
		Eventually(func() string {
			c := meta.FindStatusCondition(tc.podGroup("gated").Status.Conditions, v1alpha1.PodGroupConditionScheduled)
			if c == nil {
				return ""
			}
			return c.Message
		}).WithTimeout(testutil.Timeout).Should(HavePrefix("WaitingForMembers 3/4"))

		gatedPod := &corev1.Pod{}
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: "gated-3"}, gatedPod)).To(Succeed())
		Expect(gatedPod.Spec.SchedulingGates).To(HaveLen(1))

		// The other system admits the pod: the gang forms.
		gatedPod.Spec.SchedulingGates = nil
		Expect(k8sClient.Update(suiteCtx, gatedPod)).To(Succeed())
		Eventually(tc.boundFn("gated")).WithTimeout(testutil.Timeout).Should(Equal(4))
	})

	It("schedules a label-only gang (pod-group.scheduling.kubenexus.io labels) all-or-nothing", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 10))
		tc.addNodes("n", 1, "cpu", "4")
		for i := range 3 {
			Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("etl-%d", i)).
				Label("pod-group.scheduling.kubenexus.io/name", "etl").
				Label("pod-group.scheduling.kubenexus.io/min-available", "3").
				Req("cpu", "2").Obj())).To(Succeed())
		}
		Consistently(tc.boundCount("")).WithTimeout(4 * time.Second).Should(Equal(0))

		// The manager created the PodGroup for the label-only gang.
		Eventually(func() error {
			return k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: "etl"}, &v1alpha1.PodGroup{})
		}).WithTimeout(testutil.Timeout).Should(Succeed())
		pg := tc.podGroup("etl")
		Expect(pg.Spec.MinMember).To(BeEquivalentTo(3))
		Expect(pg.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "kubenexus"))
		Eventually(func() ([]string, error) {
			return testenv.EventNotes(suiteCtx, k8sClient, tc.ns, "etl", v1alpha1.EventReasonPodGroupCreated)
		}).WithTimeout(testutil.Timeout).Should(ConsistOf("Normal: Created for the label-only gang: minMember 3"))

		// Once every member is gone, the auto-created group is garbage-collected.
		Expect(k8sClient.DeleteAllOf(suiteCtx, &corev1.Pod{}, client.InNamespace(tc.ns), client.GracePeriodSeconds(0))).To(Succeed())
		Eventually(func() bool {
			err := k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: "etl"}, &v1alpha1.PodGroup{})
			return apierrors.IsNotFound(err)
		}).WithTimeout(testutil.Timeout).Should(BeTrue())
	})

	It("refuses to schedule a pod whose gang labels are malformed, saying which label", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 10))
		tc.addNodes("n", 1, "cpu", "4")
		Expect(k8sClient.Create(suiteCtx, tc.pod("typo").
			Label("pod-group.scheduling.kubenexus.io/name", "etl").
			Label("pod-group.scheduling.kubenexus.io/min-available", "three").Obj())).To(Succeed())
		Eventually(tc.scheduledMessage("typo")).WithTimeout(testutil.Timeout).Should(ContainSubstring(`pod-group.scheduling.kubenexus.io/min-available="three" must be an integer`))
	})

	It("places the LeaderWorkerSet groups of a serving PodGroup only whole, at admission and when a set scales up", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 5))
		tc.addNodes("n", 5, "cpu", "2")
		Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup("serve", tc.ns).MinMember(4).
			MinMemberPerRole("prefill", 2).MinMemberPerRole("decode", 2).Obj())).To(Succeed())
		// A pod of group g of LeaderWorkerSet set (a leader and a worker, one node each),
		// as LWS labels and annotates them.
		member := func(set, role string, g, worker int) *corev1.Pod {
			return tc.pod(fmt.Sprintf("%s-%d-%d", set, g, worker)).PodGroup("serve").Label(v1alpha1.LabelWorkloadRole, role).
				Label("leaderworkerset.sigs.k8s.io/name", set).Label("leaderworkerset.sigs.k8s.io/group-index", strconv.Itoa(g)).
				Label("leaderworkerset.sigs.k8s.io/worker-index", strconv.Itoa(worker)).
				Annotation("leaderworkerset.sigs.k8s.io/size", "2").Req("cpu", "2").Obj()
		}
		for _, p := range []*corev1.Pod{member("decode", "decode", 0, 0), member("decode", "decode", 0, 1), member("prefill", "prefill", 0, 0), member("prefill", "prefill", 0, 1)} {
			Expect(k8sClient.Create(suiteCtx, p)).To(Succeed())
		}
		Eventually(tc.boundFn("serve")).WithTimeout(testutil.Timeout).Should(Equal(4))

		// The prefill set scales up by a group; one node is free for its two pods. The
		// gang is running, but the group is placed only whole: neither pod binds.
		Expect(k8sClient.Create(suiteCtx, member("prefill", "prefill", 1, 0))).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, member("prefill", "prefill", 1, 1))).To(Succeed())
		Eventually(func() string {
			return tc.scheduledMessage("prefill-1-0")() + tc.scheduledMessage("prefill-1-1")()
		}).WithTimeout(testutil.Timeout).ShouldNot(BeEmpty())
		Consistently(tc.boundFn("serve")).WithTimeout(8 * time.Second).Should(Equal(4))

		// A node joins: the group binds, both pods.
		tc.addNodes("m", 1, "cpu", "2")
		Eventually(tc.boundFn("serve")).WithTimeout(testutil.Timeout).Should(Equal(6))
	})

	It("holds a gang until every role of minMemberPerRole has its members, binds none while a role fits nowhere, and all once it fits", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 10))
		tc.addNodes("n", 2, "cpu", "4")
		Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup("etl", tc.ns).MinMember(3).
			MinMemberPerRole("driver", 1).MinMemberPerRole("executor", 2).Obj())).To(Succeed())
		member := func(name, role, cpu string) *corev1.Pod {
			return tc.pod(name).PodGroup("etl").Label(v1alpha1.LabelWorkloadRole, role).Req("cpu", cpu).Obj()
		}
		// Three executors make minMember, but the gang has no driver: nothing binds,
		// and the PodGroup says which role is short.
		for i := range 3 {
			Expect(k8sClient.Create(suiteCtx, member(fmt.Sprintf("etl-exec-%d", i), "executor", "1"))).To(Succeed())
		}
		Eventually(func() string {
			c := meta.FindStatusCondition(tc.podGroup("etl").Status.Conditions, v1alpha1.PodGroupConditionScheduled)
			if c == nil {
				return ""
			}
			return c.Message
		}).WithTimeout(testutil.Timeout).Should(ContainSubstring("WaitingForMembers 3/3: the gang starts when 3 members exist, with every role's minimum; roles short: driver 0/1"))
		Consistently(tc.boundFn("etl")).WithTimeout(3 * time.Second).Should(Equal(0))
		Expect(tc.podGroup("etl").Status.Phase).To(Equal(v1alpha1.PodGroupPending))

		// A driver that fits no node: the executors fit, but the gang is rejected
		// whole instead of binding them without their driver.
		Expect(k8sClient.Create(suiteCtx, member("etl-driver", "driver", "8"))).To(Succeed())
		Eventually(tc.scheduledMessage("etl-driver")).WithTimeout(testutil.Timeout).Should(ContainSubstring("gang rejected: member etl-driver fits no node"))
		Consistently(tc.boundFn("etl")).WithTimeout(3 * time.Second).Should(Equal(0))

		// The driver is recreated smaller: the whole gang binds.
		Expect(k8sClient.Delete(suiteCtx, member("etl-driver", "driver", "8"), client.GracePeriodSeconds(0))).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, member("etl-driver2", "driver", "1"))).To(Succeed())
		Eventually(tc.boundFn("etl")).WithTimeout(testutil.Timeout).Should(Equal(4))
		Eventually(func() v1alpha1.PodGroupPhase { return tc.podGroup("etl").Status.Phase }).
			WithTimeout(testutil.Timeout).Should(Equal(v1alpha1.PodGroupScheduled))
		Eventually(tc.eventReasons("etl")).WithTimeout(testutil.Timeout).Should(ContainElement("GangScheduled"))
	})
})
