package scheduler_test

import (
	"bytes"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/cmd/kubectl-kubenexus/explain"
	"github.com/kube-nexus/kubenexus/controllers/estimatedstart"
	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/schedulertest"
)

// explained returns the lines of the only section of the report on kind/name.
// estimatedStarts reads the kubenexus.io/estimated-start annotation of the PodGroups
// named ("" where it is not set).
func estimatedStarts(tc *testCluster, names ...string) func() ([]string, error) {
	return func() ([]string, error) {
		out := make([]string, len(names))
		for i, name := range names {
			pg := &v1alpha1.PodGroup{}
			if err := k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: name}, pg); err != nil {
				return nil, err
			}
			out[i] = pg.Annotations[v1alpha1.AnnotationEstimatedStart]
		}
		return out, nil
	}
}

func explained(tc *testCluster, kind, name string) func() (map[string]explain.Line, error) {
	return func() (map[string]explain.Line, error) {
		r, err := (&explain.Explainer{Client: k8sClient}).Explain(suiteCtx, tc.ns, kind, name)
		if err != nil {
			return nil, err
		}
		var out bytes.Buffer
		Expect(r.Write(&out)).To(Succeed())
		GinkgoWriter.Println(out.String())
		if len(r.Sections) != 1 {
			return nil, fmt.Errorf("%d sections, want 1:\n%s", len(r.Sections), out.String())
		}
		lines := map[string]explain.Line{}
		for _, l := range r.Sections[0].Lines {
			lines[l.Layer] = l
		}
		return lines, nil
	}
}

// kubectl kubenexus explain against the real scheduler: each spec builds a situation
// that holds a workload at one layer, checks that layer's line, lifts the block and
// checks that the line is gone once the workload is placed.
var _ = Describe("kubectl kubenexus explain", func() {
	line := func(layer, verdict, text string) types.GomegaMatcher {
		return HaveKeyWithValue(layer, And(HaveField("Verdict", verdict), HaveField("Text", text)))
	}
	gpuPod := func(tc *testCluster, name string) *testutil.PodWrapper {
		return tc.pod(name).Req("cpu", "8", "memory", "32Gi", "nvidia.com/gpu", "8").Limit("nvidia.com/gpu", "8")
	}
	gpuNodes := func(tc *testCluster, prefix string, n int, labels map[string]string) {
		GinkgoHelper()
		tc.addLabelledNodes(prefix, n, labels, "cpu", "64", "memory", "512Gi", "nvidia.com/gpu", "8")
	}

	It("topology: says no rack holds the gang and how many the largest holds, until one does", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		for r := range 2 {
			gpuNodes(tc, fmt.Sprintf("r%d", r), 2, map[string]string{v1alpha1.LabelRack: fmt.Sprintf("%s-rack-%d", tc.ns, r)})
		}
		pg := testutil.MakePodGroup("wide", tc.ns).MinMember(3).Obj()
		pg.Spec.NetworkTopology = &v1alpha1.NetworkTopologyPolicy{Mode: v1alpha1.NetworkTopologyRequired, Level: v1alpha1.NetworkLevelRack}
		Expect(k8sClient.Create(suiteCtx, pg)).To(Succeed())
		for i := range 3 {
			Expect(k8sClient.Create(suiteCtx, gpuPod(tc, fmt.Sprintf("wide-%d", i)).PodGroup("wide").Obj())).To(Succeed())
		}
		Eventually(tc.scheduledReason("wide")).WithTimeout(testutil.Timeout).ShouldNot(BeEmpty())

		Eventually(explained(tc, "podgroup", "wide")).WithTimeout(testutil.Timeout).Should(And(
			HaveKeyWithValue(explain.LayerGang, And(HaveField("Verdict", explain.Waiting), HaveField("Text", HavePrefix("0 of its quorum of 3 bound, 3 waiting for a node")))),
			line(explain.LayerTopology, explain.Blocked, "one rack must hold all 3: the largest holds 2 ("+tc.ns+"-rack-0)"),
			line(explain.LayerCapacity, explain.OK, "32 nvidia.com/gpu free on the nodes open to them, 24 needed (3 × 8 nvidia.com/gpu): enough in total, not in one rack"),
			HaveKeyWithValue(explain.LayerStart, HaveField("Verdict", explain.Unknown)),
		))

		// A third node in rack 0: the gang fits there, and binds; its wait is recorded
		// once, under its tier and class.
		waits := func() map[string]uint64 {
			out := map[string]uint64{}
			for _, m := range gathered("kubenexus_gang_wait_seconds") {
				l := labelsOf(m)
				out[l["tenant_tier"]+"/"+l["workload_class"]] += m.GetHistogram().GetSampleCount()
			}
			return out
		}
		before := waits()
		gpuNodes(tc, "r0-extra", 1, map[string]string{v1alpha1.LabelRack: tc.ns + "-rack-0"})
		Eventually(tc.boundFn("wide")).WithTimeout(testutil.Timeout).Should(Equal(3))
		after := waits()
		Expect(after["bronze/batch"]-before["bronze/batch"]).To(Equal(uint64(1)), "gang waits before %v, after %v", before, after)
		Eventually(explained(tc, "podgroup", "wide")).WithTimeout(testutil.Timeout).Should(And(
			line(explain.LayerGang, explain.OK, "quorum bound: 3 of its quorum of 3 bound, 0 waiting for a node"),
			line(explain.LayerTopology, explain.OK, "no member waits for a node (3 bound)"),
			Not(HaveKey(explain.LayerCapacity)), Not(HaveKey(explain.LayerStart)),
		))
	})

	// A running gang loses a member and its rack has no room left for the
	// replacement: the scheduler keeps a required gang to the rack its members run in,
	// and explain must say what the scheduler says, naming the rack by its rack label
	// (each node here is its own NVLink domain too, whose label explain once printed).
	lostMember := func(mode v1alpha1.NetworkTopologyMode) (tc *testCluster, rack, other string) {
		GinkgoHelper()
		tc = newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		for r := range 2 {
			for i := range 2 {
				gpuNodes(tc, fmt.Sprintf("r%d-%d", r, i), 1, map[string]string{
					v1alpha1.LabelRack: fmt.Sprintf("%s-rack-%d", tc.ns, r), v1alpha1.LabelGPUClique: fmt.Sprintf("%s-clique-%d-%d", tc.ns, r, i)})
			}
		}
		pg := testutil.MakePodGroup("chaos", tc.ns).MinMember(2).Obj()
		pg.Spec.NetworkTopology = &v1alpha1.NetworkTopologyPolicy{Mode: mode, Level: v1alpha1.NetworkLevelRack}
		Expect(k8sClient.Create(suiteCtx, pg)).To(Succeed())
		for i := range 2 {
			Expect(k8sClient.Create(suiteCtx, gpuPod(tc, fmt.Sprintf("chaos-%d", i)).PodGroup("chaos").Obj())).To(Succeed())
		}
		Eventually(tc.boundFn("chaos")).WithTimeout(testutil.Timeout).Should(Equal(2))
		lostOn := tc.nodeOf("chaos-1")()
		node := &corev1.Node{}
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: lostOn}, node)).To(Succeed())
		rack = node.Labels[v1alpha1.LabelRack]
		other = tc.ns + "-rack-0"
		if rack == other {
			other = tc.ns + "-rack-1"
		}
		// The member is lost and another pod takes its GPUs before the replacement
		// comes (as a filler does).
		Expect(k8sClient.Delete(suiteCtx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: tc.ns, Name: "chaos-1"}}, client.GracePeriodSeconds(0))).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, gpuPod(tc, "filler").Node(lostOn).Obj())).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, gpuPod(tc, "chaos-2").PodGroup("chaos").Obj())).To(Succeed())
		return tc, rack, other
	}

	It("topology: a required gang's replacement must join the rack its members run in, and explain says it does not fit there", func() {
		tc, rack, _ := lostMember(v1alpha1.NetworkTopologyRequired)
		Eventually(tc.scheduledMessage("chaos-2")).WithTimeout(testutil.Timeout).Should(ContainSubstring(
			"in rack/" + rack + ", where its placed members run; it fits 0"))
		Eventually(explained(tc, "podgroup", "chaos")).WithTimeout(testutil.Timeout).Should(And(
			line(explain.LayerTopology, explain.Blocked, "its bound members run in rack "+rack+", which holds 0 of the 1 still needed"),
			line(explain.LayerCapacity, explain.Blocked, "0 nvidia.com/gpu free in rack "+rack+", where its placed members run, on the nodes open to them, 8 needed (1 × 8 nvidia.com/gpu)"),
			HaveKeyWithValue(explain.LayerStart, HaveField("Verdict", Not(Equal(explain.OK)))),
		))
		Consistently(tc.nodeOf("chaos-2")).WithTimeout(2 * time.Second).Should(BeEmpty())
	})

	It("topology: a preferred gang's replacement may go to another rack, and explain says it fits there", func() {
		tc, _, other := lostMember(v1alpha1.NetworkTopologyPreferred)
		Eventually(tc.nodeOf("chaos-2")).WithTimeout(testutil.Timeout).Should(HavePrefix(tc.ns + "-r"))
		n := &corev1.Node{}
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: tc.nodeOf("chaos-2")()}, n)).To(Succeed())
		Expect(n.Labels[v1alpha1.LabelRack]).To(Equal(other))
	})

	// boundedFleet is two 8-GPU nodes, each full with a pod that may run 20 or 40
	// minutes, and when those pods end.
	boundedFleet := func() (*testCluster, []time.Time) {
		GinkgoHelper()
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		gpuNodes(tc, "n", 2, nil)
		var ends []time.Time
		for i, minutes := range []int64{20, 40} {
			p := gpuPod(tc, fmt.Sprintf("running-%d", i)).Node(fmt.Sprintf("%s-n-%d", tc.ns, i)).ActiveDeadline(ptr.To(minutes * 60)).Obj()
			Expect(k8sClient.Create(suiteCtx, p)).To(Succeed())
			ends = append(ends, p.CreationTimestamp.Add(time.Duration(minutes)*time.Minute))
		}
		return tc, ends
	}

	It("start: gives the earliest time the gang fits from the runtime bounds of the pods in its way", func() {
		tc, ends := boundedFleet()
		Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup("next", tc.ns).MinMember(2).Obj())).To(Succeed())
		for i := range 2 {
			Expect(k8sClient.Create(suiteCtx, gpuPod(tc, fmt.Sprintf("next-%d", i)).PodGroup("next").Obj())).To(Succeed())
		}
		Eventually(explained(tc, "podgroup", "next")).WithTimeout(testutil.Timeout).Should(And(
			line(explain.LayerCapacity, explain.Blocked, "0 nvidia.com/gpu free on the nodes open to them, 16 needed (2 × 8 nvidia.com/gpu); they hold 0 of the 2 members"),
			HaveKeyWithValue(explain.LayerStart, And(HaveField("Verdict", explain.Waiting),
				HaveField("Text", HavePrefix("earliest "+ends[1].UTC().Format(time.RFC3339)+" (in ")))),
		))
		// Explaining one member says the same of its gang.
		Expect(explained(tc, "pod", "next-1")()).To(HaveKeyWithValue(explain.LayerStart,
			HaveField("Text", ContainSubstring("earliest "+ends[1].UTC().Format(time.RFC3339)))))

		for i := range 2 {
			Expect(k8sClient.Delete(suiteCtx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: tc.ns, Name: fmt.Sprintf("running-%d", i)}}, client.GracePeriodSeconds(0))).To(Succeed())
		}
		Eventually(tc.boundFn("next")).WithTimeout(testutil.Timeout).Should(Equal(2))
		Eventually(explained(tc, "podgroup", "next")).WithTimeout(testutil.Timeout).Should(Not(HaveKey(explain.LayerStart)))
	})

	It("start: counts the gangs queued ahead, which take the room that frees first", func() {
		tc, ends := boundedFleet()
		// "early", queued first, may run 30 minutes: it takes the node freed at 20
		// minutes; "late" starts when the second node frees, at 40.
		for _, name := range []string{"early", "late"} {
			Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup(name, tc.ns).MinMember(1).Obj())).To(Succeed())
			Expect(k8sClient.Create(suiteCtx, gpuPod(tc, name+"-0").PodGroup(name).ActiveDeadline(ptr.To(int64(30*60))).Obj())).To(Succeed())
			time.Sleep(1100 * time.Millisecond) // creation times are to the second
		}
		Eventually(explained(tc, "podgroup", "late")).WithTimeout(testutil.Timeout).Should(
			HaveKeyWithValue(explain.LayerStart, And(HaveField("Verdict", explain.Waiting), HaveField("Text", And(
				HavePrefix("earliest "+ends[1].UTC().Format(time.RFC3339)+" (in "),
				HaveSuffix("behind 1 gang queued ahead (1 of them start first); assumes running pods end at their runtime bounds, gangs ahead run to theirs"))))))
		// Nothing is queued ahead of "early": the first room that frees.
		Expect(explained(tc, "podgroup", "early")()).To(HaveKeyWithValue(explain.LayerStart,
			HaveField("Text", HavePrefix("earliest "+ends[0].UTC().Format(time.RFC3339)+" (in "))))
		// A pod created now would queue behind both: it starts when "early" ends.
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(gpuPod(tc, "what").Obj())
		Expect(err).NotTo(HaveOccurred())
		u := &unstructured.Unstructured{Object: obj}
		u.SetAPIVersion("v1")
		u.SetKind("Pod")
		r, err := (&explain.Explainer{Client: k8sClient}).WhatIf(suiteCtx, tc.ns, []*unstructured.Unstructured{u})
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Sections).To(HaveLen(1))
		Expect(r.Sections[0].Lines).To(ContainElement(And(HaveField("Layer", explain.LayerStart), HaveField("Text", And(
			HavePrefix("earliest "+ends[0].Add(30*time.Minute).UTC().Format(time.RFC3339)+" (in "),
			ContainSubstring("behind 2 gangs queued ahead (2 of them start first)"))))))

		// The manager keeps the same forecast on each PodGroup, for the whole queue at
		// once; a gang no node set can hold gets "unknown".
		Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup("huge", tc.ns).MinMember(3).Obj())).To(Succeed())
		for i := range 3 {
			Expect(k8sClient.Create(suiteCtx, gpuPod(tc, fmt.Sprintf("huge-%d", i)).PodGroup("huge").Obj())).To(Succeed())
		}
		Eventually(estimatedStarts(tc, "early", "late", "huge")).WithTimeout(testutil.Timeout).Should(Equal([]string{
			ends[0].UTC().Format(time.RFC3339), ends[1].UTC().Format(time.RFC3339), estimatedstart.Unknown}))
		// Once a gang starts, its PodGroup no longer carries an estimate.
		for i := range 2 {
			Expect(k8sClient.Delete(suiteCtx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: tc.ns, Name: fmt.Sprintf("running-%d", i)}}, client.GracePeriodSeconds(0))).To(Succeed())
		}
		Eventually(tc.boundFn("late")).WithTimeout(testutil.Timeout).Should(Equal(1))
		Eventually(estimatedStarts(tc, "early", "late", "huge")).WithTimeout(testutil.Timeout).Should(Equal([]string{"", "", estimatedstart.Unknown}))
	})

	It("start: counts a CompositePodGroup tree queued ahead as one gang, as the scheduler queues it", func() {
		tc, ends := boundedFleet()
		// "serve" needs both of its PodGroups, a member each: one gang of two,
		// queued first; "late" after it.
		Expect(k8sClient.Create(suiteCtx, testutil.CompositePodGroup(tc.ns, "serve", 2, ""))).To(Succeed())
		for _, part := range []string{"serve-a", "serve-b"} {
			Expect(k8sClient.Create(suiteCtx, testutil.CompositeChild(tc.ns, part, "serve", 1, ""))).To(Succeed())
			Expect(k8sClient.Create(suiteCtx, gpuPod(tc, part+"-0").SchedulingGroup(part).ActiveDeadline(ptr.To(int64(30*60))).Obj())).To(Succeed())
		}
		time.Sleep(1100 * time.Millisecond) // creation times are to the second
		Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup("late", tc.ns).MinMember(1).Obj())).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, gpuPod(tc, "late-0").PodGroup("late").Obj())).To(Succeed())
		// The tree waits for both nodes (at 40 minutes); "late" needs one and takes
		// the first that frees, at 20, behind one gang that does not start first. (As
		// two gangs of one member, the PodGroups would take both nodes first.)
		Eventually(explained(tc, "podgroup", "late")).WithTimeout(testutil.Timeout).Should(
			HaveKeyWithValue(explain.LayerStart, And(HaveField("Verdict", explain.Waiting), HaveField("Text", And(
				HavePrefix("earliest "+ends[0].UTC().Format(time.RFC3339)+" (in "),
				ContainSubstring("behind 1 gang queued ahead (0 of them start first)"))))))
	})

	It("tier: names the HardwareTier that refuses the tenant, until it admits it", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		tc.setTier(v1alpha1.TenantTierGold)
		hw := "explain-" + tc.ns
		gpuNodes(tc, "n", 2, map[string]string{"hw": hw})
		tier := testutil.MakeHardwareTier(hw, 10).Selector(metav1.LabelSelector{MatchLabels: map[string]string{"hw": hw}}).Tenants(v1alpha1.TenantTierSilver).Obj()
		createHardwareTiers(tier)
		Expect(k8sClient.Create(suiteCtx, gpuPod(tc, "solo").Obj())).To(Succeed())
		Eventually(tc.scheduledMessage("solo")).WithTimeout(testutil.Timeout).ShouldNot(BeEmpty())

		Eventually(explained(tc, "pod", "solo")).WithTimeout(testutil.Timeout).Should(And(
			line(explain.LayerGang, explain.None, "in no gang"),
			HaveKeyWithValue(explain.LayerTier, And(HaveField("Verdict", explain.Blocked),
				HaveField("Text", "tenant tier gold: HardwareTier "+hw+" refuses it on all 2 nodes the pods could otherwise use"),
				HaveField("Action", ContainSubstring("or allow gold there")))),
			// The tier line says it all: no capacity counted over no nodes.
			Not(HaveKey(explain.LayerCapacity)),
		))

		Expect(k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(tier), tier)).To(Succeed())
		tier.Spec.AllowedTenantTiers = append(tier.Spec.AllowedTenantTiers, v1alpha1.TenantTierGold)
		Expect(k8sClient.Update(suiteCtx, tier)).To(Succeed())
		Eventually(tc.nodeOf("solo")).WithTimeout(testutil.Timeout).ShouldNot(BeEmpty())
		Eventually(explained(tc, "pod", "solo")).WithTimeout(testutil.Timeout).Should(And(
			line(explain.LayerTopology, explain.OK, "no member waits for a node (1 bound)"), Not(HaveKey(explain.LayerTier))))
	})

	It("node: says no node's NUMA cells could hold the pod under its policy, by its NodeResourceTopology or labels, until one could", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		// Two nodes of 16-CPU cells: one described by its kubelet's report, one by labels.
		tc.addNodes("nrt", 1, "cpu", "32", "memory", "128Gi")
		tc.nodeResourceTopology(tc.ns+"-nrt-0", 2, "16", "16", "64Gi")
		tc.addLabelledNodes("labels", 1, map[string]string{v1alpha1.LabelNUMANodeCount: "4"}, "cpu", "64", "memory", "256Gi")
		Expect(k8sClient.Create(suiteCtx, tc.pod("aligned").Annotation(v1alpha1.AnnotationNUMAPolicy, string(v1alpha1.NUMAPolicySingleNUMA)).
			Req("cpu", "24", "memory", "8Gi").Limit("cpu", "24", "memory", "8Gi").Obj())).To(Succeed())
		Eventually(tc.scheduledMessage("aligned")).WithTimeout(testutil.Timeout).Should(ContainSubstring("no NUMA cell with 24 CPUs free"))

		Eventually(explained(tc, "pod", "aligned")).WithTimeout(testutil.Timeout).Should(And(
			HaveKeyWithValue(explain.LayerNode, And(HaveField("Verdict", explain.Blocked),
				HaveField("Text", "NUMA: the cells of all 2 nodes otherwise open to the pods cannot hold one under its NUMA policy, even with nothing else on them (node "+
					tc.ns+"-labels-0: single-numa: no NUMA cell with 24 CPUs free; best cell has 16 CPUs)"),
				HaveField("Action", ContainSubstring("select nodes with larger NUMA cells")))),
			// The tier line counts those nodes as open: the node line says why they are not.
			HaveKeyWithValue(explain.LayerTier, And(HaveField("Verdict", explain.OK), HaveField("Text", HavePrefix("tenant tier bronze: 2 nodes of ")))),
			Not(HaveKey(explain.LayerCapacity)),
		))

		// Two cells of 32 CPUs on the labelled node: the pod fits one, and binds.
		node := &corev1.Node{}
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: tc.ns + "-labels-0"}, node)).To(Succeed())
		node.Labels[v1alpha1.LabelNUMANodeCount] = "2"
		Expect(k8sClient.Update(suiteCtx, node)).To(Succeed())
		Eventually(tc.nodeOf("aligned")).WithTimeout(testutil.Timeout).Should(Equal(tc.ns + "-labels-0"))
		Eventually(explained(tc, "pod", "aligned")).WithTimeout(testutil.Timeout).Should(And(
			line(explain.LayerTopology, explain.OK, "no member waits for a node (1 bound)"), Not(HaveKey(explain.LayerNode))))
	})

	It("gang: says the PodGroup its pods name does not exist, until it does", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		gpuNodes(tc, "n", 1, nil)
		Expect(k8sClient.Create(suiteCtx, gpuPod(tc, "orphan-0").PodGroup("orphan").Obj())).To(Succeed())
		Eventually(explained(tc, "pod", "orphan-0")).WithTimeout(testutil.Timeout).Should(
			HaveKeyWithValue(explain.LayerGang, And(HaveField("Verdict", explain.Blocked),
				HaveField("Text", "its pods name PodGroup orphan, which does not exist"),
				HaveField("Action", "create PodGroup orphan in "+tc.ns+" with spec.minMember"))))

		Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup("orphan", tc.ns).MinMember(1).Obj())).To(Succeed())
		Eventually(tc.nodeOf("orphan-0")).WithTimeout(testutil.Timeout).ShouldNot(BeEmpty())
		Eventually(explained(tc, "podgroup", "orphan")).WithTimeout(testutil.Timeout).Should(
			line(explain.LayerGang, explain.OK, "quorum bound: 1 of its quorum of 1 bound, 0 waiting for a node"))
	})

	It("gang: reads a scheduler-plugins PodGroup as the scheduler does", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		gpuNodes(tc, "n", 1, nil)
		Expect(k8sClient.Create(suiteCtx, testutil.ForeignPodGroup(v1alpha1.NewSigsPodGroup(), tc.ns, "tj", map[string]any{"minMember": int64(2)}))).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, gpuPod(tc, "tj-0").PodGroup("tj").Obj())).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, gpuPod(tc, "tj-1").PodGroup("tj").Obj())).To(Succeed())
		// One 8-GPU node for two 8-GPU members.
		Eventually(explained(tc, "pod", "tj-1")).WithTimeout(testutil.Timeout).Should(And(
			HaveKeyWithValue(explain.LayerGang, And(HaveField("Verdict", explain.Waiting),
				HaveField("Text", HavePrefix("PodGroup of scheduling.x-k8s.io/v1alpha1: 0 of its quorum of 2 bound, 2 waiting for a node")))),
			line(explain.LayerCapacity, explain.Blocked, "8 nvidia.com/gpu free on the nodes open to them, 16 needed (2 × 8 nvidia.com/gpu); they hold 1 of the 2 members"),
		))
	})

	It("admission: says the pods' gang labels are invalid, until they are fixed", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		tc.addNodes("n", 1, "cpu", "8", "memory", "32Gi")
		Expect(k8sClient.Create(suiteCtx, tc.pod("labelled").Label(v1alpha1.LabelKubeNexusGangName, "g").
			Label(v1alpha1.LabelKubeNexusGangMinAvailable, "lots").Req("cpu", "1").Obj())).To(Succeed())
		Eventually(explained(tc, "pod", "labelled")).WithTimeout(testutil.Timeout).Should(
			HaveKeyWithValue(explain.LayerAdmission, And(HaveField("Verdict", explain.Blocked),
				HaveField("Text", ContainSubstring("its gang labels are invalid: ")), HaveField("Text", ContainSubstring(v1alpha1.LabelKubeNexusGangMinAvailable)),
				HaveField("Action", "fix the pod template's gang labels"))))

		// The scheduler writes the pod's status meanwhile: read, change and write again
		// on a conflict.
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			p := &corev1.Pod{}
			if err := k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: "labelled"}, p); err != nil {
				return err
			}
			p.Labels[v1alpha1.LabelKubeNexusGangMinAvailable] = "1"
			return k8sClient.Update(suiteCtx, p)
		})).To(Succeed())
		Eventually(explained(tc, "pod", "labelled")).WithTimeout(testutil.Timeout).Should(
			HaveKeyWithValue(explain.LayerAdmission, And(HaveField("Verdict", explain.OK), HaveField("Text", ContainSubstring("ganged as g")))))
	})

	It("refuses what it cannot explain with the kinds it can", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		_, err := (&explain.Explainer{Client: k8sClient}).Explain(suiteCtx, tc.ns, "configmap", "x")
		Expect(err).To(MatchError(ContainSubstring(`cannot explain a "configmap": explain takes `)))
		_, err = (&explain.Explainer{Client: k8sClient}).Explain(suiteCtx, tc.ns, "pytorchjob", "absent")
		Expect(err).To(MatchError("PyTorchJob " + tc.ns + "/absent has no pods and no Kueue Workload: nothing is waiting (or it does not exist)"))
	})
})
