package scheduler_test

import (
	"fmt"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/cmd/kubectl-kubenexus/explain"
	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/schedulertest"
)

var _ = Describe("Kubernetes' PodGroups (scheduling.k8s.io/v1beta1)", func() {
	BeforeEach(func() {
		if !nativeWorkloads {
			Skip("this kube-apiserver is older than 1.37: it does not serve scheduling.k8s.io/v1beta1 PodGroups")
		}
	})

	// initiallyScheduled returns the group's PodGroupInitiallyScheduled condition.
	initiallyScheduled := func(tc *testCluster, name string) func() *metav1.Condition {
		return func() *metav1.Condition {
			pg := &schedulingv1beta1.PodGroup{}
			Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: name}, pg)).To(Succeed())
			return meta.FindStatusCondition(pg.Status.Conditions, schedulingv1beta1.PodGroupInitiallyScheduled)
		}
	}
	// compositeScheduled returns the composite's CompositePodGroupInitiallyScheduled condition.
	compositeScheduled := func(tc *testCluster, name string) func() *metav1.Condition {
		return func() *metav1.Condition {
			c := &schedulingv1alpha3.CompositePodGroup{}
			Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: name}, c)).To(Succeed())
			return meta.FindStatusCondition(c.Status.Conditions, v1alpha1.CompositeInitiallyScheduled)
		}
	}

	It("gangs pods that name one in spec.schedulingGroup with its minCount, all-or-nothing, and keeps its PodGroupInitiallyScheduled condition", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 10))
		tc.addNodes("n", 2, "cpu", "2")
		var names []string
		for i := range 5 {
			name := fmt.Sprintf("native-%d", i)
			names = append(names, name)
			Expect(k8sClient.Create(suiteCtx, tc.pod(name).SchedulingGroup("native").Req("cpu", "1").Obj())).To(Succeed())
		}
		// The group does not exist yet: the pods say which one to create, and where.
		Eventually(tc.scheduledMessage("native-0")).WithTimeout(testutil.Timeout).Should(And(
			ContainSubstring(`no PodGroup "native" (scheduling.k8s.io/v1beta1) exists in namespace `+tc.ns),
			ContainSubstring("spec.schedulingGroup.podGroupName")))

		// Five members, room for four: none is placed.
		Expect(k8sClient.Create(suiteCtx, testutil.NativeGangPodGroup(tc.ns, "native", 5))).To(Succeed())
		Eventually(initiallyScheduled(tc, "native")).WithTimeout(testutil.Timeout).Should(And(
			Not(BeNil()),
			HaveField("Status", metav1.ConditionFalse),
			HaveField("Reason", schedulingv1beta1.PodGroupReasonUnschedulable),
			HaveField("Message", ContainSubstring(v1alpha1.ReasonInsufficientCapacity))))
		Consistently(tc.boundOf(names...)).WithTimeout(3 * time.Second).Should(Equal(0))

		// Room for the fifth: all five together.
		tc.addNodes("more", 1, "cpu", "1")
		Eventually(tc.boundOf(names...)).WithTimeout(testutil.Timeout).Should(Equal(5))
		Eventually(initiallyScheduled(tc, "native")).WithTimeout(testutil.Timeout).Should(And(
			Not(BeNil()),
			HaveField("Status", metav1.ConditionTrue),
			HaveField("Reason", v1alpha1.NativeScheduledReason)))
	})

	It("holds a group to one domain of the node label its schedulingConstraints.topology names, and refuses it, naming the constraint, where none holds it", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 10))
		// Upstream's label, which the KubeNexusConfig declares no level for (its rack
		// level reads network.kubenexus.io/rack): a level of its own.
		const rackKey = "topology.kubernetes.io/rack"
		for r := range 2 {
			tc.addLabelledNodes(fmt.Sprintf("r%d", r), 2, map[string]string{rackKey: fmt.Sprintf("%s-rack-%d", tc.ns, r)},
				"cpu", "64", "memory", "256Gi", "nvidia.com/gpu", "8")
		}
		group := func(name string, n int) []string {
			pg := testutil.NativeGangPodGroup(tc.ns, name, int32(n))
			pg.Spec.SchedulingConstraints = &schedulingv1beta1.PodGroupSchedulingConstraints{Topology: []schedulingv1beta1.TopologyConstraint{{Key: rackKey}}}
			Expect(k8sClient.Create(suiteCtx, pg)).To(Succeed())
			var names []string
			for i := range n {
				names = append(names, fmt.Sprintf("%s-%d", name, i))
				Expect(k8sClient.Create(suiteCtx, tc.pod(names[i]).SchedulingGroup(name).
					Req("cpu", "8", "memory", "32Gi", "nvidia.com/gpu", "8").Limit("nvidia.com/gpu", "8").Obj())).To(Succeed())
			}
			return names
		}
		// Three members of a whole node each: two racks of two nodes hold them
		// together, no one rack does.
		wide := group("wide", 3)
		Eventually(tc.scheduledMessage(wide[0])).WithTimeout(testutil.Timeout).Should(And(
			ContainSubstring("TopologyUnsatisfiable: gang "+tc.ns+"/wide needs 3 members (3 × 8 nvidia.com/gpu) in one "+rackKey+"; the largest "+rackKey+" fits 2"),
			ContainSubstring("spec.schedulingConstraints.topology")))
		Consistently(tc.boundOf(wide...)).WithTimeout(3 * time.Second).Should(Equal(0))
		Expect(k8sClient.DeleteAllOf(suiteCtx, &corev1.Pod{}, client.InNamespace(tc.ns), client.GracePeriodSeconds(0))).To(Succeed())
		// Two members: one rack.
		pair := group("pair", 2)
		Eventually(tc.boundOf(pair...)).WithTimeout(testutil.Timeout).Should(Equal(2))
		racks := map[string]bool{}
		for _, p := range pair {
			node := &corev1.Node{}
			Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: tc.nodeOf(p)()}, node)).To(Succeed())
			racks[node.Labels[rackKey]] = true
		}
		Expect(racks).To(HaveLen(1))
	})

	It("places the members of a group with the basic policy one by one", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 10))
		tc.addNodes("n", 1, "cpu", "2")
		pg := testutil.NativeGangPodGroup(tc.ns, "basic", 1)
		pg.Spec.SchedulingPolicy = schedulingv1beta1.PodGroupSchedulingPolicy{Basic: &schedulingv1beta1.BasicSchedulingPolicy{}}
		Expect(k8sClient.Create(suiteCtx, pg)).To(Succeed())
		for i := range 3 {
			Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("basic-%d", i)).SchedulingGroup("basic").Req("cpu", "1").Obj())).To(Succeed())
		}
		// Two fit, the third does not: two are placed, not none.
		Eventually(tc.boundOf("basic-0", "basic-1", "basic-2")).WithTimeout(testutil.Timeout).Should(Equal(2))
		Consistently(tc.boundOf("basic-0", "basic-1", "basic-2")).WithTimeout(2 * time.Second).Should(Equal(2))
	})

	It("leaves a group whose pods ask for another scheduler alone", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 10))
		Expect(k8sClient.Create(suiteCtx, testutil.NativeGangPodGroup(tc.ns, "theirs", 2))).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, testutil.NativeGangPodGroup(tc.ns, "ours", 2))).To(Succeed())
		for i := range 2 {
			pod := tc.pod(fmt.Sprintf("theirs-%d", i)).SchedulingGroup("theirs").Req("cpu", "1").Obj()
			pod.Spec.SchedulerName = corev1.DefaultSchedulerName
			Expect(k8sClient.Create(suiteCtx, pod)).To(Succeed())
		}
		// A group of kubenexus-scheduler's pods created after it gets its condition
		// (no node: the gang waits for room); by then the other group has been seen too.
		for i := range 2 {
			Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("ours-%d", i)).SchedulingGroup("ours").Req("cpu", "1").Obj())).To(Succeed())
		}
		Eventually(initiallyScheduled(tc, "ours")).WithTimeout(testutil.Timeout).Should(And(
			Not(BeNil()), HaveField("Status", metav1.ConditionFalse)))
		Consistently(initiallyScheduled(tc, "theirs")).WithTimeout(3 * time.Second).Should(BeNil())
	})

	It("gangs the PodGroups of a CompositePodGroup all-or-nothing: each child in one domain of its own key, all in one of the composite's", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		tc.addPrefillDecodeFleet()
		Expect(k8sClient.Create(suiteCtx, testutil.CompositePodGroup(tc.ns, "serve", 2, v1alpha1.LabelRack))).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, testutil.CompositeChild(tc.ns, "prefill", "serve", 2, v1alpha1.LabelGPUClique))).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, testutil.CompositeChild(tc.ns, "decode", "serve", 4, v1alpha1.LabelGPUClique))).To(Succeed())
		create := func(role string, n int, gpus string) []string {
			var names []string
			for i := range n {
				names = append(names, fmt.Sprintf("%s-%d", role, i))
				Expect(k8sClient.Create(suiteCtx, tc.pod(names[i]).SchedulingGroup(role).
					Req("cpu", "4", "memory", "16Gi", "nvidia.com/gpu", gpus).Limit("nvidia.com/gpu", gpus).Obj())).To(Succeed())
			}
			return names
		}
		// decode has its quorum, the composite does not (prefill has no pod): none binds.
		decode := create("decode", 4, "4")
		Consistently(tc.boundOf(decode...)).WithTimeout(4*time.Second).Should(Equal(0), "decode started without prefill")
		Eventually(compositeScheduled(tc, "serve")).WithTimeout(testutil.Timeout).Should(And(
			Not(BeNil()),
			HaveField("Status", metav1.ConditionFalse),
			HaveField("Reason", v1alpha1.ReasonWaitingForMembers),
			HaveField("Message", ContainSubstring("prefill 0/2"))))
		// explain tells the same of a decode pod, of its PodGroup and of the composite.
		waiting := HaveKeyWithValue(explain.LayerGang, And(
			HaveField("Verdict", explain.Waiting),
			HaveField("Text", HavePrefix("4 of 6 members exist (CompositePodGroup of scheduling.k8s.io/v1alpha3: 0 of its quorum of 6 bound, 4 waiting for a node)"))))
		for _, subject := range [][2]string{{"pod", "decode-0"}, {"podgroup", "decode"}, {"compositepodgroup", "serve"}} {
			Eventually(explained(tc, subject[0], subject[1])).WithTimeout(testutil.Timeout).Should(waiting, "explain %s/%s", subject[0], subject[1])
		}
		prefill := create("prefill", 2, "8")
		Eventually(tc.boundOf(append(decode, prefill...)...)).WithTimeout(testutil.Timeout).Should(Equal(6), "the composite should start whole")
		tc.expectPairPlaced(prefill, decode)
		// The composite's condition says it started; each child's PodGroupInitiallyScheduled
		// condition is kept as a PodGroup's.
		Eventually(compositeScheduled(tc, "serve")).WithTimeout(testutil.Timeout).Should(And(
			Not(BeNil()),
			HaveField("Status", metav1.ConditionTrue),
			HaveField("Reason", v1alpha1.NativeScheduledReason)))
		Eventually(initiallyScheduled(tc, "decode")).WithTimeout(testutil.Timeout).Should(And(
			Not(BeNil()), HaveField("Status", metav1.ConditionTrue)))
	})

	It("holds the pods of a composite's PodGroup until the CompositePodGroup it names exists, then starts one needing one of its two children with either", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 10))
		tc.addNodes("n", 2, "cpu", "2")
		Expect(k8sClient.Create(suiteCtx, testutil.CompositeChild(tc.ns, "a", "either", 2, ""))).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, testutil.CompositeChild(tc.ns, "b", "either", 2, ""))).To(Succeed())
		for i := range 2 {
			Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("a-%d", i)).SchedulingGroup("a").Req("cpu", "1").Obj())).To(Succeed())
		}
		// a has its minCount, but its composite is not there to say whether that is
		// enough: the pods say what they wait for, and none binds.
		Eventually(tc.scheduledMessage("a-0")).WithTimeout(testutil.Timeout).Should(
			ContainSubstring(`no CompositePodGroup "either" (scheduling.k8s.io/v1alpha3) exists in namespace ` + tc.ns))
		Consistently(tc.boundOf("a-0", "a-1")).WithTimeout(3*time.Second).Should(Equal(0), "a started before its composite was seen")
		// One of the two children is enough: a starts though b has no pod.
		Expect(k8sClient.Create(suiteCtx, testutil.CompositePodGroup(tc.ns, "either", 1, ""))).To(Succeed())
		Eventually(tc.boundOf("a-0", "a-1")).WithTimeout(testutil.Timeout).Should(Equal(2))
	})

	It("starts a composite needing one of its two children only when one child has its minCount: a member of each, meeting neither, waits", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 10))
		tc.addNodes("n", 2, "cpu", "4")
		Expect(k8sClient.Create(suiteCtx, testutil.CompositePodGroup(tc.ns, "either", 1, ""))).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, testutil.CompositeChild(tc.ns, "a", "either", 2, ""))).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, testutil.CompositeChild(tc.ns, "b", "either", 2, ""))).To(Succeed())
		// Two members: the quorum's count (the smaller minCount), but neither child's.
		for _, name := range []string{"a-0", "b-0"} {
			Expect(k8sClient.Create(suiteCtx, tc.pod(name).SchedulingGroup(name[:1]).Req("cpu", "1").Obj())).To(Succeed())
		}
		// The pods are held before the queue (no message reaches them); the
		// composite's condition says what the gang waits for.
		Eventually(compositeScheduled(tc, "either")).WithTimeout(testutil.Timeout).Should(And(
			Not(BeNil()),
			HaveField("Reason", v1alpha1.ReasonWaitingForMembers),
			HaveField("Message", ContainSubstring("with the minimums of 1 of its roles; roles short (any 1 of 2 would do): a 1/2, b 1/2"))))
		Consistently(tc.boundOf("a-0", "b-0")).WithTimeout(3*time.Second).Should(Equal(0), "started with no child at its minCount")
		// a's second member: a has its minCount, and the gang starts.
		Expect(k8sClient.Create(suiteCtx, tc.pod("a-1").SchedulingGroup("a").Req("cpu", "1").Obj())).To(Succeed())
		Eventually(tc.boundOf("a-0", "a-1")).WithTimeout(testutil.Timeout).Should(Equal(2))
	})

	It("gangs a tree of composites under its root: a deployment needing one of two replicas, each replica both its prefill and its decode", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 10))
		tc.addNodes("n", 2, "cpu", "4")
		Expect(k8sClient.Create(suiteCtx, testutil.CompositePodGroup(tc.ns, "serve", 1, ""))).To(Succeed())
		for _, r := range []string{"r0", "r1"} {
			replica := testutil.CompositePodGroup(tc.ns, r, 2, "")
			replica.Spec.ParentCompositePodGroupName = ptr.To("serve")
			Expect(k8sClient.Create(suiteCtx, replica)).To(Succeed())
			for _, part := range []string{"prefill", "decode"} {
				Expect(k8sClient.Create(suiteCtx, testutil.CompositeChild(tc.ns, r+"-"+part, r, 1, ""))).To(Succeed())
			}
		}
		// r0's prefill and r1's decode: two members, the quorum's count, but no
		// replica whole.
		Expect(k8sClient.Create(suiteCtx, tc.pod("r0-prefill-0").SchedulingGroup("r0-prefill").Req("cpu", "1").Obj())).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, tc.pod("r1-decode-0").SchedulingGroup("r1-decode").Req("cpu", "1").Obj())).To(Succeed())
		Eventually(compositeScheduled(tc, "serve")).WithTimeout(testutil.Timeout).Should(And(
			Not(BeNil()),
			HaveField("Reason", v1alpha1.ReasonWaitingForMembers),
			HaveField("Message", ContainSubstring("with the minimums its composites need; roles short (serve needs 1 of r0, r1; r0 needs 2 of r0-decode, r0-prefill; "+
				"r1 needs 2 of r1-decode, r1-prefill): r0-decode 0/1, r1-prefill 0/1"))))
		Consistently(tc.boundOf("r0-prefill-0", "r1-decode-0")).WithTimeout(3*time.Second).Should(Equal(0), "started with no replica whole")
		// r0's decode makes r0 whole: the gang starts.
		Expect(k8sClient.Create(suiteCtx, tc.pod("r0-decode-0").SchedulingGroup("r0-decode").Req("cpu", "1").Obj())).To(Succeed())
		Eventually(tc.boundOf("r0-prefill-0", "r0-decode-0")).WithTimeout(testutil.Timeout).Should(Equal(2))
		Eventually(compositeScheduled(tc, "serve")).WithTimeout(testutil.Timeout).Should(HaveField("Status", metav1.ConditionTrue))
		// Each replica has its own condition: r0 is placed, r1 (which the root
		// did not need) is not.
		Eventually(compositeScheduled(tc, "r0")).WithTimeout(testutil.Timeout).Should(And(Not(BeNil()), HaveField("Status", metav1.ConditionTrue)))
		Eventually(compositeScheduled(tc, "r1")).WithTimeout(testutil.Timeout).Should(And(Not(BeNil()), HaveField("Status", metav1.ConditionFalse),
			HaveField("Message", ContainSubstring("r1-prefill 0/1"))))
	})

	It("keeps each nested composite's PodGroups together in one rack of its key, each PodGroup in one NVLink domain, within the root's zone", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		// Two racks of zone-0, each of two NVLink domains of one 8-GPU node: a rack
		// holds one replica (a prefill of 8 GPUs, a decode of two 4-GPU pods).
		for r := range 2 {
			for d := range 2 {
				tc.addLabelledNodes(fmt.Sprintf("r%d-d%d", r, d), 1, map[string]string{v1alpha1.LabelTopologyZone: tc.ns + "-zone-0",
					v1alpha1.LabelRack: fmt.Sprintf("%s-rack-%d", tc.ns, r), v1alpha1.LabelGPUClique: fmt.Sprintf("%s-r%d-d%d", tc.ns, r, d)},
					"cpu", "64", "memory", "512Gi", "nvidia.com/gpu", "8")
			}
		}
		Expect(k8sClient.Create(suiteCtx, testutil.CompositePodGroup(tc.ns, "serve", 2, v1alpha1.LabelTopologyZone))).To(Succeed())
		pods := map[string][]string{}
		for _, r := range []string{"a", "b"} {
			replica := testutil.CompositePodGroup(tc.ns, r, 2, v1alpha1.LabelRack)
			replica.Spec.ParentCompositePodGroupName = ptr.To("serve")
			Expect(k8sClient.Create(suiteCtx, replica)).To(Succeed())
			for _, part := range []struct {
				name, gpus string
				n          int32
			}{{"prefill", "8", 1}, {"decode", "4", 2}} {
				child := r + "-" + part.name
				Expect(k8sClient.Create(suiteCtx, testutil.CompositeChild(tc.ns, child, r, part.n, v1alpha1.LabelGPUClique))).To(Succeed())
				for i := range part.n {
					name := fmt.Sprintf("%s-%d", child, i)
					pods[r] = append(pods[r], name)
					Expect(k8sClient.Create(suiteCtx, tc.pod(name).SchedulingGroup(child).
						Req("cpu", "4", "memory", "16Gi", "nvidia.com/gpu", part.gpus).Limit("nvidia.com/gpu", part.gpus).Obj())).To(Succeed())
				}
			}
		}
		Eventually(tc.boundOf(append(slices.Clone(pods["a"]), pods["b"]...)...)).WithTimeout(testutil.Timeout).Should(Equal(6), "serve should start whole")
		racks := map[string]bool{}
		for _, r := range []string{"a", "b"} {
			_, on := tc.domainsOf(pods[r]...)
			Expect(on).To(HaveLen(1), "replica %s's PodGroups in one rack", r)
			for rack := range on {
				racks[rack] = true
			}
			for _, part := range []string{"prefill", "decode"} {
				var mine []string
				for _, p := range pods[r] {
					if strings.HasPrefix(p, r+"-"+part) {
						mine = append(mine, p)
					}
				}
				cliques, _ := tc.domainsOf(mine...)
				Expect(cliques).To(HaveLen(1), "%s-%s in one NVLink domain", r, part)
			}
		}
		Expect(racks).To(HaveLen(2), "one replica per rack")
	})

	It("gangs a composite under a basic one as a root of its own, and keeps its condition", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 10))
		tc.addNodes("n", 1, "cpu", "4")
		fleet := testutil.CompositePodGroup(tc.ns, "fleet", 1, "")
		fleet.Spec.SchedulingPolicy = schedulingv1alpha3.CompositePodGroupSchedulingPolicy{Basic: &schedulingv1alpha3.CompositeBasicSchedulingPolicy{}}
		Expect(k8sClient.Create(suiteCtx, fleet)).To(Succeed())
		serve := testutil.CompositePodGroup(tc.ns, "serve", 1, "")
		serve.Spec.ParentCompositePodGroupName = ptr.To("fleet")
		Expect(k8sClient.Create(suiteCtx, serve)).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, testutil.CompositeChild(tc.ns, "serve-a", "serve", 2, ""))).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, tc.pod("serve-a-0").SchedulingGroup("serve-a").Req("cpu", "1").Obj())).To(Succeed())
		// One member of serve-a's two: serve's gang waits, and says so.
		Eventually(compositeScheduled(tc, "serve")).WithTimeout(testutil.Timeout).Should(And(Not(BeNil()), HaveField("Reason", v1alpha1.ReasonWaitingForMembers)))
		Consistently(tc.boundOf("serve-a-0")).WithTimeout(2 * time.Second).Should(Equal(0))
		Expect(k8sClient.Create(suiteCtx, tc.pod("serve-a-1").SchedulingGroup("serve-a").Req("cpu", "1").Obj())).To(Succeed())
		Eventually(tc.boundOf("serve-a-0", "serve-a-1")).WithTimeout(testutil.Timeout).Should(Equal(2))
		Eventually(compositeScheduled(tc, "serve")).WithTimeout(testutil.Timeout).Should(HaveField("Status", metav1.ConditionTrue))
		Expect(compositeScheduled(tc, "fleet")()).To(BeNil(), "a basic composite gangs nothing and gets no condition")
	})

	It("refuses, as a tenant may write them, a cycle of composites and one nested deeper than four, naming the composite; nothing of theirs binds", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 10))
		tc.addNodes("n", 1, "cpu", "4")
		nestedUnder := func(name, parent string) {
			GinkgoHelper()
			c := testutil.CompositePodGroup(tc.ns, name, 1, "")
			c.Spec.ParentCompositePodGroupName = ptr.To(parent)
			Expect(k8sClient.Create(suiteCtx, c)).To(Succeed())
		}
		// loop-a's parent is loop-b, loop-b's is loop-a.
		nestedUnder("loop-a", "loop-b")
		nestedUnder("loop-b", "loop-a")
		Expect(k8sClient.Create(suiteCtx, testutil.CompositeChild(tc.ns, "in-loop", "loop-a", 1, ""))).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, tc.pod("in-loop-0").SchedulingGroup("in-loop").Req("cpu", "1").Obj())).To(Succeed())
		// deep-1 (a root) … deep-5: five composites deep.
		Expect(k8sClient.Create(suiteCtx, testutil.CompositePodGroup(tc.ns, "deep-1", 1, ""))).To(Succeed())
		for i := 2; i <= 5; i++ {
			nestedUnder(fmt.Sprintf("deep-%d", i), fmt.Sprintf("deep-%d", i-1))
		}
		Expect(k8sClient.Create(suiteCtx, testutil.CompositeChild(tc.ns, "in-deep", "deep-5", 1, ""))).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, tc.pod("in-deep-0").SchedulingGroup("in-deep").Req("cpu", "1").Obj())).To(Succeed())

		Eventually(tc.scheduledMessage("in-loop-0")).WithTimeout(testutil.Timeout).Should(ContainSubstring(
			"PodGroup cannot be read as a gang " + tc.ns + "/loop-a: CompositePodGroup " + tc.ns + "/loop-a (scheduling.k8s.io/v1alpha3): spec.parentCompositePodGroupName: it is its own ancestor"))
		Eventually(tc.scheduledMessage("in-deep-0")).WithTimeout(testutil.Timeout).Should(ContainSubstring(
			"CompositePodGroup " + tc.ns + "/deep-5 (scheduling.k8s.io/v1alpha3): nested 5 CompositePodGroups deep; at most 4 are read"))
		Consistently(tc.boundOf("in-loop-0", "in-deep-0")).WithTimeout(2 * time.Second).Should(Equal(0))
	})
})
