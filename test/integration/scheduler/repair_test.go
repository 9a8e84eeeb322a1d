package scheduler_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/schedulertest"
)

var _ = Describe("Gang repair", func() {
	gpus := []string{"cpu", "64", "memory", "512Gi", "nvidia.com/gpu", "8"}
	// twoRacks creates racks a and b of three 8-GPU nodes each.
	twoRacks := func(tc *testCluster) {
		GinkgoHelper()
		for _, r := range []string{"a", "b"} {
			tc.addLabelledNodes("rack-"+r, 3, map[string]string{v1alpha1.LabelRack: tc.ns + "-" + r}, gpus...)
		}
	}
	wholeNode := func(tc *testCluster, name string) *testutil.PodWrapper {
		return tc.pod(name).Req("cpu", "8", "memory", "32Gi", "nvidia.com/gpu", "8").Limit("nvidia.com/gpu", "8")
	}
	get := func(tc *testCluster, name string) *corev1.Pod {
		GinkgoHelper()
		p := &corev1.Pod{}
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: name}, p)).To(Succeed())
		return p
	}
	nodeOf := func(tc *testCluster, name string) func() string {
		return func() string {
			p := &corev1.Pod{}
			if err := k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: name}, p); err != nil {
				return ""
			}
			return p.Spec.NodeName
		}
	}
	rackOf := func(node string) string {
		GinkgoHelper()
		n := &corev1.Node{}
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: node}, n)).To(Succeed())
		return n.Labels[v1alpha1.LabelRack]
	}
	running := func(tc *testCluster, names ...string) {
		GinkgoHelper()
		for _, name := range names {
			Eventually(nodeOf(tc, name)).WithTimeout(testutil.Timeout).ShouldNot(BeEmpty(), name+" should be bound")
			p := get(tc, name)
			p.Status.Phase = corev1.PodRunning
			Expect(k8sClient.Status().Update(suiteCtx, p)).To(Succeed())
		}
	}
	repairing := func(tc *testCluster, name string) func() *metav1.Condition {
		return func() *metav1.Condition {
			return meta.FindStatusCondition(tc.podGroup(name).Status.Conditions, v1alpha1.PodGroupConditionRepairing)
		}
	}
	// loseNode does what kube-controller-manager does when a node stops reporting:
	// the node is tainted unreachable, and the taint manager marks its pods
	// DisruptionTarget and deletes them (they stay terminating: no kubelet confirms).
	loseNode := func(tc *testCluster, member string, opts ...client.DeleteOption) string {
		GinkgoHelper()
		p := get(tc, member)
		node := &corev1.Node{}
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: p.Spec.NodeName}, node)).To(Succeed())
		node.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule}, {Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}}
		Expect(k8sClient.Update(suiteCtx, node)).To(Succeed())
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: "DeletionByTaintManager", Message: "Taint manager: deleting due to NoExecute taint"})
		Expect(k8sClient.Status().Update(suiteCtx, p)).To(Succeed())
		Expect(k8sClient.Delete(suiteCtx, p, opts...)).To(Succeed())
		return node.Name
	}
	repairsCounted := func(outcome string) float64 {
		GinkgoHelper()
		families, err := ctrlmetrics.Registry.Gather()
		Expect(err).NotTo(HaveOccurred())
		for _, f := range families {
			if f.GetName() != "kubenexus_gang_repairs_total" {
				continue
			}
			for _, m := range f.GetMetric() {
				if labelsOf(m)["outcome"] == outcome {
					return m.GetCounter().GetValue()
				}
			}
		}
		return 0
	}

	// rackGang starts a gang of two whole-node members required in one rack, on two
	// racks of three nodes, and returns the rack it runs in.
	rackGang := func() (*testCluster, string) {
		GinkgoHelper()
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		twoRacks(tc)
		pg := testutil.MakePodGroup("train", tc.ns).MinMember(2).NetworkTopology(v1alpha1.NetworkTopologyRequired, v1alpha1.NetworkLevelRack).Obj()
		Expect(k8sClient.Create(suiteCtx, pg)).To(Succeed())
		for i := range 2 {
			Expect(k8sClient.Create(suiteCtx, wholeNode(tc, fmt.Sprintf("train-%d", i)).PodGroup("train").Obj())).To(Succeed())
		}
		running(tc, "train-0", "train-1")
		return tc, rackOf(get(tc, "train-0").Spec.NodeName)
	}

	// A gang of two required in one rack runs beside a filler pod in its rack; the
	// other rack is full. A member's node is lost; once the manager holds the
	// member's room in the gang's rack, the filler ends — and a pending 8-GPU pod of
	// no gang does not get its node: the replacement does.
	It("holds a lost member's room in its gang's rack for the replacement, then reports the gang repaired", func() {
		tc, rack := rackGang()
		Expect(rackOf(get(tc, "train-1").Spec.NodeName)).To(Equal(rack))
		// The filler takes the rack's third node; three blockers fill the other rack.
		other := tc.ns + "-a"
		if rack == other {
			other = tc.ns + "-b"
		}
		Expect(k8sClient.Create(suiteCtx, wholeNode(tc, "filler").NodeSelector(v1alpha1.LabelRack, rack).Obj())).To(Succeed())
		for i := range 3 {
			Expect(k8sClient.Create(suiteCtx, wholeNode(tc, fmt.Sprintf("blocker-%d", i)).NodeSelector(v1alpha1.LabelRack, other).Obj())).To(Succeed())
		}
		running(tc, "filler", "blocker-0", "blocker-1", "blocker-2")
		Eventually(func() v1alpha1.PodGroupPhase { return tc.podGroup("train").Status.Phase }).WithTimeout(testutil.Timeout).Should(Equal(v1alpha1.PodGroupRunning))
		Expect(k8sClient.Create(suiteCtx, wholeNode(tc, "outsider").Obj())).To(Succeed())
		Eventually(tc.scheduledMessage("outsider")).WithTimeout(testutil.Timeout).ShouldNot(BeEmpty())

		lost := loseNode(tc, "train-0")
		Eventually(repairing(tc, "train")).WithTimeout(testutil.Timeout).Should(And(Not(BeNil()),
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", v1alpha1.RepairCauseNodeLost)))
		rs := tc.podGroup("train").Status.Repair
		Expect(rs).NotTo(BeNil())
		Expect(rs.LostMembers).To(BeEquivalentTo(1))
		Expect(rs.Nodes).To(Equal([]string{lost}))
		Expect(rs.Domain).To(Equal(v1alpha1.LabelRack + "=" + rack))
		Expect(repairing(tc, "train")().Message).To(ContainSubstring("held in " + v1alpha1.LabelRack + "=" + rack))
		hold := &v1alpha1.ResourceReservation{}
		Eventually(func() error {
			return k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: "train-repair"}, hold)
		}).WithTimeout(testutil.Timeout).Should(Succeed())
		Expect(hold.Spec.NodeSelector).To(Equal(map[string]string{v1alpha1.LabelRack: rack}))
		Expect(hold.Spec.Slots).To(BeEquivalentTo(1))
		Eventually(func() v1alpha1.ReservationPhase {
			Expect(k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(hold), hold)).To(Succeed())
			return hold.Status.Phase
		}).WithTimeout(testutil.Timeout).Should(Equal(v1alpha1.ReservationReserved))

		// The filler ends; its node is the only room: held for the gang.
		fillerNode := get(tc, "filler").Spec.NodeName
		Expect(k8sClient.Delete(suiteCtx, get(tc, "filler"), client.GracePeriodSeconds(0))).To(Succeed())
		Eventually(tc.scheduledMessage("outsider")).WithTimeout(testutil.Timeout).Should(ContainSubstring("train-repair"))
		Consistently(nodeOf(tc, "outsider")).WithTimeout(3 * time.Second).Should(BeEmpty())

		// The workload's controller creates the replacement: it binds there.
		Expect(k8sClient.Create(suiteCtx, wholeNode(tc, "train-0b").PodGroup("train").Obj())).To(Succeed())
		Eventually(nodeOf(tc, "train-0b")).WithTimeout(testutil.Timeout).Should(Equal(fillerNode))
		running(tc, "train-0b")
		Eventually(repairing(tc, "train")).WithTimeout(testutil.Timeout).Should(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", v1alpha1.RepairOutcomeRepaired)))
		Expect(tc.podGroup("train").Status.Repair).To(BeNil())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(hold), &v1alpha1.ResourceReservation{}))
		}).WithTimeout(testutil.Timeout).Should(BeTrue(), "the repair's reservation should be deleted")
		// (Counted once the reservation is deleted, by the same reconcile.)
		Eventually(func() float64 { return repairsCounted("repaired") }).WithTimeout(testutil.Timeout).Should(BeNumerically(">=", 1))
		Eventually(tc.eventReasons("train")).WithTimeout(testutil.Timeout).Should(ContainElements(v1alpha1.EventReasonGangMembersLost, v1alpha1.EventReasonGangRepaired))
		Expect(nodeOf(tc, "outsider")()).To(BeEmpty())
	})

	// A workload's controller that restarts a gang whole (a LeaderWorkerSet group, a
	// JobSet) creates the new generation only once every old member is gone. The
	// manager's PodGroup of a label-only gang outlives that gap: the same PodGroup
	// (not garbage-collected, not created anew) repairs the gang, its rack held,
	// and the new generation binds there.
	It("keeps an auto-created PodGroup through a whole restart by its workload's controller: the new generation is the same gang", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		twoRacks(tc)
		member := func(name string) *corev1.Pod {
			return wholeNode(tc, name).Label("pod-group.scheduling.kubenexus.io/name", "serve").
				Label("pod-group.scheduling.kubenexus.io/min-available", "2").
				Annotation(v1alpha1.AnnotationCoLocate, "strict").Obj()
		}
		for i := range 2 {
			Expect(k8sClient.Create(suiteCtx, member(fmt.Sprintf("serve-%d", i)))).To(Succeed())
		}
		running(tc, "serve-0", "serve-1")
		rack := rackOf(get(tc, "serve-0").Spec.NodeName)
		pg := &v1alpha1.PodGroup{}
		Eventually(func() (v1alpha1.PodGroupPhase, error) {
			err := k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: "serve"}, pg)
			return pg.Status.Phase, err
		}).WithTimeout(testutil.Timeout).Should(Equal(v1alpha1.PodGroupRunning))
		Expect(pg.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "kubenexus"))
		other := tc.ns + "-a"
		if rack == other {
			other = tc.ns + "-b"
		}
		for i := range 3 {
			Expect(k8sClient.Create(suiteCtx, wholeNode(tc, fmt.Sprintf("blocker-%d", i)).NodeSelector(v1alpha1.LabelRack, other).Obj())).To(Succeed())
		}
		running(tc, "blocker-0", "blocker-1", "blocker-2")
		time.Sleep(time.Until(pg.CreationTimestamp.Add(3 * time.Second))) // past the suite's 2 s GC grace

		// A member's node is lost; the controller deletes the rest to start anew.
		loseNode(tc, "serve-0", client.GracePeriodSeconds(0))
		Expect(k8sClient.Delete(suiteCtx, get(tc, "serve-1"), client.GracePeriodSeconds(0))).To(Succeed())
		Eventually(repairing(tc, "serve")).WithTimeout(testutil.Timeout).Should(And(Not(BeNil()),
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", v1alpha1.RepairCauseNodeLost)))
		Consistently(func() (types.UID, error) {
			got := &v1alpha1.PodGroup{}
			err := k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: "serve"}, got)
			return got.UID, err
		}).WithTimeout(4*time.Second).Should(Equal(pg.UID), "the PodGroup under repair should be kept while the gang has no members")
		Eventually(func() (v1alpha1.ReservationPhase, error) {
			hold := &v1alpha1.ResourceReservation{}
			err := k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: "serve-repair"}, hold)
			return hold.Status.Phase, err
		}).WithTimeout(testutil.Timeout).Should(Equal(v1alpha1.ReservationReserved))
		// The rack's two free nodes are held: a pod of no gang does not get them.
		Expect(k8sClient.Create(suiteCtx, wholeNode(tc, "outsider").Obj())).To(Succeed())
		Eventually(func() string {
			return "bound on " + nodeOf(tc, "outsider")() + "; scheduler: " + tc.scheduledMessage("outsider")()
		}).WithTimeout(testutil.Timeout).Should(And(HavePrefix("bound on ;"), ContainSubstring("serve-repair")))

		// The new generation: the same gang, placed whole in the held rack.
		for i := range 2 {
			Expect(k8sClient.Create(suiteCtx, member(fmt.Sprintf("serve-%db", i)))).To(Succeed())
		}
		running(tc, "serve-0b", "serve-1b")
		Expect(rackOf(get(tc, "serve-0b").Spec.NodeName)).To(Equal(rack))
		Expect(rackOf(get(tc, "serve-1b").Spec.NodeName)).To(Equal(rack))
		Eventually(repairing(tc, "serve")).WithTimeout(testutil.Timeout).Should(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", v1alpha1.RepairOutcomeRepaired)))
		Expect(tc.podGroup("serve").UID).To(Equal(pg.UID))
		Expect(nodeOf(tc, "outsider")()).To(BeEmpty())
	})

	// A LeaderWorkerSet group created leader first (exclusive-topology) is a gang of
	// its leader whose PodGroup asks for one member; it runs whole only with its
	// workers. A worker is evicted: its room is held for the group — then LWS
	// (RecreateGroupOnPodRestart) deletes the leader and the other worker and
	// creates the group anew. The hold grows to the whole group: a pending group
	// of the same set, and a pod of no gang, do not get the rack; the new group
	// binds whole there (the e2e's LeaderWorkerSet repair).
	It("holds a LeaderWorkerSet group's rack from a worker's eviction through the group's recreation, then places the new group there", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		twoRacks(tc)
		tc.addLabelledNodes("rack-c", 2, map[string]string{v1alpha1.LabelRack: tc.ns + "-c"}, gpus...)
		// The pods LWS v0.7 makes for a group of three with exclusive-topology on the
		// rack label: the gang labels the pod webhook adds to a leader-first group,
		// and LWS's affinity (its own group's rack, no other group's).
		lwsPod := func(group, worker int, suffix string) *corev1.Pod {
			key := fmt.Sprintf("vllm-%d", group)
			p := wholeNode(tc, fmt.Sprintf("%s-%d%s", key, worker, suffix)).
				Label("leaderworkerset.sigs.k8s.io/name", "vllm").Label("leaderworkerset.sigs.k8s.io/group-index", fmt.Sprint(group)).
				Label("leaderworkerset.sigs.k8s.io/worker-index", fmt.Sprint(worker)).Label("leaderworkerset.sigs.k8s.io/group-key", key).
				Label(v1alpha1.LabelKubeNexusGangName, key).Label(v1alpha1.LabelKubeNexusGangMinAvailable, "1").
				Annotation("leaderworkerset.sigs.k8s.io/size", "3").Annotation(v1alpha1.AnnotationLWSExclusiveTopology, v1alpha1.LabelRack).Obj()
			p.Spec.Affinity = &corev1.Affinity{
				PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: v1alpha1.LabelRack,
					LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "leaderworkerset.sigs.k8s.io/group-key", Operator: metav1.LabelSelectorOpIn, Values: []string{key}}}}}}},
				PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: v1alpha1.LabelRack,
					LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
						{Key: "leaderworkerset.sigs.k8s.io/group-key", Operator: metav1.LabelSelectorOpExists},
						{Key: "leaderworkerset.sigs.k8s.io/group-key", Operator: metav1.LabelSelectorOpNotIn, Values: []string{key}}}}}}},
			}
			return p
		}
		// group creates the leader, then, once it is bound, the workers, as LWS does.
		group := func(g int, suffix string) string {
			GinkgoHelper()
			Expect(k8sClient.Create(suiteCtx, lwsPod(g, 0, suffix))).To(Succeed())
			leader := fmt.Sprintf("vllm-%d-0%s", g, suffix)
			running(tc, leader)
			for w := 1; w < 3; w++ {
				Expect(k8sClient.Create(suiteCtx, lwsPod(g, w, suffix))).To(Succeed())
			}
			running(tc, fmt.Sprintf("vllm-%d-1%s", g, suffix), fmt.Sprintf("vllm-%d-2%s", g, suffix))
			rack := rackOf(get(tc, leader).Spec.NodeName)
			for w := 1; w < 3; w++ {
				Expect(rackOf(get(tc, fmt.Sprintf("vllm-%d-%d%s", g, w, suffix)).Spec.NodeName)).To(Equal(rack))
			}
			return rack
		}
		rack := group(0, "")
		other := group(1, "")
		Expect(other).NotTo(Equal(rack))
		Eventually(func() (v1alpha1.PodGroupPhase, error) {
			pg := &v1alpha1.PodGroup{}
			err := k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: "vllm-0"}, pg)
			return pg.Status.Phase, err
		}).WithTimeout(testutil.Timeout).Should(Equal(v1alpha1.PodGroupRunning))
		// The third group's leader waits: no rack has three free nodes.
		Expect(k8sClient.Create(suiteCtx, lwsPod(2, 0, ""))).To(Succeed())
		Eventually(tc.scheduledMessage("vllm-2-0")).WithTimeout(testutil.Timeout).Should(ContainSubstring("in one rack; the largest rack fits 2"))
		time.Sleep(3 * time.Second) // past the suite's 2 s GC grace of an auto-created PodGroup

		// A worker of group 0 is evicted: the group lacks one of its three.
		w1 := get(tc, "vllm-0-1")
		w1.Status.Conditions = append(w1.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting"})
		Expect(k8sClient.Status().Update(suiteCtx, w1)).To(Succeed())
		Expect(k8sClient.Delete(suiteCtx, w1)).To(Succeed())
		Eventually(repairing(tc, "vllm-0")).WithTimeout(testutil.Timeout).Should(And(Not(BeNil()),
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", v1alpha1.RepairCauseEvicted),
			HaveField("Message", ContainSubstring("Lost 1 member(s) of the 3 it needs"))))
		slots := func() (int32, error) {
			hold := &v1alpha1.ResourceReservation{}
			err := k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: "vllm-0-repair"}, hold)
			return hold.Spec.Slots, err
		}
		Eventually(slots).WithTimeout(testutil.Timeout).Should(BeEquivalentTo(1))
		// The kubelet confirms the eviction: the worker's node is free, and held.
		Expect(k8sClient.Delete(suiteCtx, get(tc, "vllm-0-1"), client.GracePeriodSeconds(0))).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, wholeNode(tc, "outsider").NodeSelector(v1alpha1.LabelRack, rack).Obj())).To(Succeed())
		Eventually(tc.scheduledMessage("outsider")).WithTimeout(testutil.Timeout).Should(ContainSubstring("vllm-0-repair"))

		// LWS deletes the leader and the other worker; the kubelet confirms.
		for _, name := range []string{"vllm-0-0", "vllm-0-2"} {
			Expect(k8sClient.Delete(suiteCtx, get(tc, name))).To(Succeed())
		}
		for _, name := range []string{"vllm-0-0", "vllm-0-2"} {
			Expect(k8sClient.Delete(suiteCtx, get(tc, name), client.GracePeriodSeconds(0))).To(Succeed())
		}
		Eventually(slots).WithTimeout(testutil.Timeout).Should(BeEquivalentTo(3))
		Consistently(func() string { return nodeOf(tc, "vllm-2-0")() + nodeOf(tc, "outsider")() }).WithTimeout(3*time.Second).Should(BeEmpty(),
			"the rack group 0 left is held for it: neither the pending group nor a pod of no gang may take it")

		// The group anew: its leader, then its workers, whole in its rack again.
		Expect(group(0, "b")).To(Equal(rack))
		Eventually(repairing(tc, "vllm-0")).WithTimeout(testutil.Timeout).Should(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", v1alpha1.RepairOutcomeRepaired)))
		Expect(nodeOf(tc, "vllm-2-0")()).To(BeEmpty())
		Expect(nodeOf(tc, "outsider")()).To(BeEmpty())
	})

	// No room is left in the gang's rack but a pod of lower priority's: the
	// replacement preempts it there, inside the gang's domain, and nothing in the
	// other rack (whose pods are of the same low priority) is touched.
	It("preempts a pod of lower priority inside the gang's rack for the replacement, none outside", func() {
		priorityClass("batch-low", 10)
		priorityClass("batch-high", 1000)
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		twoRacks(tc)
		pg := testutil.MakePodGroup("train", tc.ns).MinMember(2).NetworkTopology(v1alpha1.NetworkTopologyRequired, v1alpha1.NetworkLevelRack).Obj()
		Expect(k8sClient.Create(suiteCtx, pg)).To(Succeed())
		for i := range 2 {
			Expect(k8sClient.Create(suiteCtx, wholeNode(tc, fmt.Sprintf("train-%d", i)).PodGroup("train").PriorityClass("batch-high").Obj())).To(Succeed())
		}
		running(tc, "train-0", "train-1")
		rack := rackOf(get(tc, "train-0").Spec.NodeName)
		other := tc.ns + "-a"
		if rack == other {
			other = tc.ns + "-b"
		}
		low := func(name, rack string) *corev1.Pod {
			p := wholeNode(tc, name).NodeSelector(v1alpha1.LabelRack, rack).PriorityClass("batch-low").Obj()
			p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
			return p
		}
		Expect(k8sClient.Create(suiteCtx, low("filler", rack))).To(Succeed())
		for i := range 3 {
			Expect(k8sClient.Create(suiteCtx, low(fmt.Sprintf("blocker-%d", i), other))).To(Succeed())
		}
		running(tc, "filler", "blocker-0", "blocker-1", "blocker-2")
		fillerNode := get(tc, "filler").Spec.NodeName
		Eventually(func() v1alpha1.PodGroupPhase { return tc.podGroup("train").Status.Phase }).WithTimeout(testutil.Timeout).Should(Equal(v1alpha1.PodGroupRunning))

		loseNode(tc, "train-0", client.GracePeriodSeconds(0))
		Eventually(repairing(tc, "train")).WithTimeout(testutil.Timeout).Should(And(Not(BeNil()), HaveField("Status", metav1.ConditionTrue)))
		Expect(k8sClient.Create(suiteCtx, wholeNode(tc, "train-0b").PodGroup("train").PriorityClass("batch-high").Obj())).To(Succeed())
		Eventually(func() string {
			return "bound on " + nodeOf(tc, "train-0b")() + "; scheduler: " + tc.scheduledMessage("train-0b")()
		}).WithTimeout(testutil.Timeout).Should(HavePrefix("bound on " + fillerNode + ";"))
		Expect(apierrors.IsNotFound(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: "filler"}, &corev1.Pod{}))).To(BeTrue(), "the filler should be preempted")
		for i := range 3 {
			Expect(get(tc, fmt.Sprintf("blocker-%d", i)).DeletionTimestamp).To(BeNil(), "nothing outside the gang's rack is preempted")
		}
		running(tc, "train-0b")
		Eventually(repairing(tc, "train")).WithTimeout(testutil.Timeout).Should(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", v1alpha1.RepairOutcomeRepaired)))
	})

	// A new gang required in one rack, with free nodes only across racks (two in
	// rack a, one in rack b): room is made inside one rack — rack a, where one
	// eviction does — not searched for over the cluster (there the members "fit"
	// the free nodes and preemption gave up, the gang pending for good).
	It("makes room for a new gang required in one rack inside one rack, not across racks", func() {
		priorityClass("batch-low", 10)
		priorityClass("batch-high", 1000)
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		twoRacks(tc)
		low := func(name, rack string) *corev1.Pod {
			p := wholeNode(tc, name).NodeSelector(v1alpha1.LabelRack, tc.ns+"-"+rack).PriorityClass("batch-low").Obj()
			p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
			return p
		}
		Expect(k8sClient.Create(suiteCtx, low("low-a", "a"))).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, low("low-b-0", "b"))).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, low("low-b-1", "b"))).To(Succeed())
		running(tc, "low-a", "low-b-0", "low-b-1")
		pg := testutil.MakePodGroup("train", tc.ns).MinMember(3).NetworkTopology(v1alpha1.NetworkTopologyRequired, v1alpha1.NetworkLevelRack).Obj()
		Expect(k8sClient.Create(suiteCtx, pg)).To(Succeed())
		for i := range 3 {
			Expect(k8sClient.Create(suiteCtx, wholeNode(tc, fmt.Sprintf("train-%d", i)).PodGroup("train").PriorityClass("batch-high").Obj())).To(Succeed())
		}
		Eventually(func() string {
			return "bound on " + nodeOf(tc, "train-0")() + "; scheduler: " + tc.scheduledMessage("train-0")()
		}).WithTimeout(testutil.Timeout).Should(MatchRegexp("^bound on .*rack-a"))
		running(tc, "train-0", "train-1", "train-2")
		for i := range 3 {
			Expect(rackOf(get(tc, fmt.Sprintf("train-%d", i)).Spec.NodeName)).To(Equal(tc.ns + "-a"))
		}
		Expect(apierrors.IsNotFound(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: "low-a"}, &corev1.Pod{}))).To(BeTrue(), "low-a should be preempted")
		for _, name := range []string{"low-b-0", "low-b-1"} {
			Expect(get(tc, name).DeletionTimestamp).To(BeNil(), "nothing in rack b is preempted")
		}
	})

	// A kubelet (or kwok) that confirms an eviction at once: the member is gone
	// from the API, often before the manager reconciles its gang. The manager still
	// reads the loss from the member's last state (lost with its node, on which
	// node, in which rack) and holds its room.
	It("reads a member deleted at once from its last state: the node is lost, the room is held in its rack", func() {
		tc, rack := rackGang()
		Eventually(func() v1alpha1.PodGroupPhase { return tc.podGroup("train").Status.Phase }).WithTimeout(testutil.Timeout).Should(Equal(v1alpha1.PodGroupRunning))

		lost := loseNode(tc, "train-0", client.GracePeriodSeconds(0))
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: "train-0"}, &corev1.Pod{}))
		}).WithTimeout(testutil.Timeout).Should(BeTrue())
		Eventually(repairing(tc, "train")).WithTimeout(testutil.Timeout).Should(And(Not(BeNil()),
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", v1alpha1.RepairCauseNodeLost)))
		rs := tc.podGroup("train").Status.Repair
		Expect(rs.Nodes).To(Equal([]string{lost}))
		Expect(rs.Domain).To(Equal(v1alpha1.LabelRack + "=" + rack))
		Expect(rs.Reservation).To(Equal("train-repair"))
	})

	// A member fails on a healthy node: its room frees at once. The scheduler holds
	// it for the gang from the moment its gang record sees the failure, and the
	// manager's reservation takes over: a pod of no gang that comes then does not
	// get the node, the replacement does. (A pod retried on the very event of the
	// failure can still win the room: the scheduler's queue and its gang record
	// are separate listeners of the pod informer — see the ResourceReservation
	// README.)
	It("holds a failed member's room on its node: a pod of no gang that comes after the failure does not take it, the replacement does", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		tc.addLabelledNodes("rack-a", 3, map[string]string{v1alpha1.LabelRack: tc.ns + "-a"}, gpus...)
		Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup("train", tc.ns).MinMember(3).Obj())).To(Succeed())
		for i := range 3 {
			Expect(k8sClient.Create(suiteCtx, wholeNode(tc, fmt.Sprintf("train-%d", i)).PodGroup("train").Obj())).To(Succeed())
		}
		running(tc, "train-0", "train-1", "train-2")
		Eventually(func() v1alpha1.PodGroupPhase { return tc.podGroup("train").Status.Phase }).WithTimeout(testutil.Timeout).Should(Equal(v1alpha1.PodGroupRunning))

		p := get(tc, "train-1")
		freed := p.Spec.NodeName
		p.Status.Phase = corev1.PodFailed
		Expect(k8sClient.Status().Update(suiteCtx, p)).To(Succeed())
		Eventually(repairing(tc, "train")).WithTimeout(testutil.Timeout).Should(HaveField("Reason", v1alpha1.RepairCauseMemberFailed))
		Expect(k8sClient.Create(suiteCtx, wholeNode(tc, "outsider").Obj())).To(Succeed())
		// Refused for the scheduler's own hold ("a lost member's room, held for its
		// replacement") or, once the manager's reservation exists, for that one.
		Eventually(tc.scheduledMessage("outsider")).WithTimeout(testutil.Timeout).Should(ContainSubstring("held by ResourceReservation " + tc.ns + "/train-repair (PodGroup train"))
		Consistently(nodeOf(tc, "outsider")).WithTimeout(3 * time.Second).Should(BeEmpty())

		Expect(k8sClient.Create(suiteCtx, wholeNode(tc, "train-1b").PodGroup("train").Obj())).To(Succeed())
		Eventually(nodeOf(tc, "train-1b")).WithTimeout(testutil.Timeout).Should(Equal(freed))
		running(tc, "train-1b")
		Eventually(repairing(tc, "train")).WithTimeout(testutil.Timeout).Should(HaveField("Reason", v1alpha1.RepairOutcomeRepaired))
		Expect(nodeOf(tc, "outsider")()).To(BeEmpty())
	})

	It("restarts a gang whole when no replacement comes within its timeout, then gives up", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		twoRacks(tc)
		pg := testutil.MakePodGroup("train", tc.ns).MinMember(3).Obj()
		pg.Spec.Recovery = &v1alpha1.GangRecovery{Policy: v1alpha1.RecoveryRepair, TimeoutSeconds: 2}
		Expect(k8sClient.Create(suiteCtx, pg)).To(Succeed())
		for i := range 3 {
			Expect(k8sClient.Create(suiteCtx, wholeNode(tc, fmt.Sprintf("train-%d", i)).PodGroup("train").Obj())).To(Succeed())
		}
		running(tc, "train-0", "train-1", "train-2")
		Eventually(func() v1alpha1.PodGroupPhase { return tc.podGroup("train").Status.Phase }).WithTimeout(testutil.Timeout).Should(Equal(v1alpha1.PodGroupRunning))
		p := get(tc, "train-1")
		p.Status.Phase = corev1.PodFailed
		Expect(k8sClient.Status().Update(suiteCtx, p)).To(Succeed())
		Eventually(repairing(tc, "train")).WithTimeout(testutil.Timeout).Should(And(Not(BeNil()),
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", v1alpha1.RepairCauseMemberFailed)))

		// Past the timeout every member still running is deleted.
		Eventually(func() *metav1.Time { return get(tc, "train-0").DeletionTimestamp }).WithTimeout(testutil.Timeout).ShouldNot(BeNil())
		Eventually(func() *metav1.Time { return get(tc, "train-2").DeletionTimestamp }).WithTimeout(testutil.Timeout).ShouldNot(BeNil())
		// No new generation comes: given up a minute after the restart (a
		// restarted gang has at least that long). The unit tests check the
		// restart's own message.
		Eventually(repairing(tc, "train")).WithTimeout(90 * time.Second).Should(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", v1alpha1.RepairOutcomeGaveUp),
			HaveField("Message", ContainSubstring("and was restarted"))))
		Eventually(tc.eventReasons("train")).WithTimeout(testutil.Timeout).Should(
			ContainElements(v1alpha1.EventReasonGangRestarted, v1alpha1.EventReasonGangRepairGaveUp))
		Eventually(func() float64 { return repairsCounted("gave_up") }).WithTimeout(testutil.Timeout).Should(BeNumerically(">=", 1))
	})
})
