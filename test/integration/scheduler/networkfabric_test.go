package scheduler_test

import (
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/schedulertest"
)

var _ = Describe("NetworkFabric", func() {
	// racks creates racks of perRack 8-GPU nodes, two ToRs per rack.
	racks := func(tc *testCluster, n, perRack int) {
		GinkgoHelper()
		for r := range n {
			for t := range 2 {
				tc.addLabelledNodes(fmt.Sprintf("r%d-t%d", r, t), perRack/2, map[string]string{
					v1alpha1.LabelRack: fmt.Sprintf("%s-rack-%d", tc.ns, r),
					v1alpha1.LabelToR:  fmt.Sprintf("%s-rack-%d-tor-%d", tc.ns, r, t),
				}, "cpu", "64", "memory", "512Gi", "nvidia.com/gpu", "8")
			}
		}
	}
	// gpuGang creates a PodGroup and its members of 8 GPUs each.
	gpuGang := func(tc *testCluster, name string, n int, policy *v1alpha1.NetworkTopologyPolicy) {
		GinkgoHelper()
		pg := testutil.MakePodGroup(name, tc.ns).MinMember(int32(n)).Obj()
		pg.Spec.NetworkTopology = policy
		Expect(k8sClient.Create(suiteCtx, pg)).To(Succeed())
		for i := range n {
			Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("%s-%d", name, i)).PodGroup(name).
				Req("cpu", "8", "memory", "32Gi", "nvidia.com/gpu", "8").Limit("nvidia.com/gpu", "8").Obj())).To(Succeed())
		}
	}
	// domainsOf returns the racks and ToRs the gang's bound members are on.
	domainsOf := func(tc *testCluster, gang string) (racks, tors map[string]int) {
		GinkgoHelper()
		pods := &corev1.PodList{}
		Expect(k8sClient.List(suiteCtx, pods, client.InNamespace(tc.ns), client.MatchingLabels{v1alpha1.LabelPodGroup: gang})).To(Succeed())
		racks, tors = map[string]int{}, map[string]int{}
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" {
				continue
			}
			node := &corev1.Node{}
			Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: p.Spec.NodeName}, node)).To(Succeed())
			racks[node.Labels[v1alpha1.LabelRack]]++
			tors[node.Labels[v1alpha1.LabelToR]]++
		}
		return racks, tors
	}

	It("keeps NVLink domains whole: single-node pods fill the domain they already broke, and gangs that need a whole domain find one", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		for _, d := range []string{"a", "b", "c"} {
			tc.addLabelledNodes("nvl-"+d, 3, map[string]string{v1alpha1.LabelGPUClique: tc.ns + "-nvl-" + d},
				"cpu", "32", "memory", "256Gi", "nvidia.com/gpu", "4")
		}
		domainOf := func(pod string) string {
			GinkgoHelper()
			p := &corev1.Pod{}
			Eventually(func() string {
				_ = k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: pod}, p)
				return p.Spec.NodeName
			}).WithTimeout(testutil.Timeout).ShouldNot(BeEmpty(), pod+" should be bound")
			node := &corev1.Node{}
			Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: p.Spec.NodeName}, node)).To(Succeed())
			return node.Labels[v1alpha1.LabelGPUClique]
		}
		// Three CPU-only pods that each fill a node, one after another: each goes to
		// the domain the first broke (without keeping domains whole, all three land in
		// one domain 1 time in 28).
		var broken string
		for i := range 3 {
			name := fmt.Sprintf("cpu-%d", i)
			Expect(k8sClient.Create(suiteCtx, tc.pod(name).Req("cpu", "30", "memory", "16Gi").Obj())).To(Succeed())
			d := domainOf(name)
			if i == 0 {
				broken = d
			}
			Expect(d).To(Equal(broken), name+" should go to the domain already broken")
		}
		// A single-GPU pod goes there too.
		Expect(k8sClient.Create(suiteCtx, tc.pod("infer").Req("cpu", "1", "memory", "8Gi", "nvidia.com/gpu", "1").Limit("nvidia.com/gpu", "1").Obj())).To(Succeed())
		Expect(domainOf("infer")).To(Equal(broken), "a single-GPU pod should go to the domain already broken")
		// The per-domain gauges: the broken domain is not whole and holds 3 members of
		// 4 GPUs less one GPU (2 of them); each whole domain holds 3.
		domainGauges := func() map[string]float64 {
			got := map[string]float64{}
			for _, m := range gathered("kubenexus_domain_whole") {
				if l := labelsOf(m); l["level"] == "nvlink" && strings.HasPrefix(l["domain"], tc.ns) {
					got["whole/"+strings.TrimPrefix(l["domain"], tc.ns+"-nvl-")] = m.GetGauge().GetValue()
				}
			}
			for _, m := range gathered("kubenexus_domain_placeable_gang") {
				if l := labelsOf(m); l["level"] == "nvlink" && l["gpus_per_member"] == "4" && strings.HasPrefix(l["domain"], tc.ns) {
					got["4gpu/"+strings.TrimPrefix(l["domain"], tc.ns+"-nvl-")] = m.GetGauge().GetValue()
				}
			}
			return got
		}
		want := map[string]float64{}
		for _, d := range []string{"a", "b", "c"} {
			want["whole/"+d], want["4gpu/"+d] = 1, 3
		}
		b := strings.TrimPrefix(broken, tc.ns+"-nvl-")
		want["whole/"+b], want["4gpu/"+b] = 0, 2
		Eventually(domainGauges).WithTimeout(testutil.Timeout).Should(Equal(want))
		// Two gangs that each need a whole domain (3 members × 4 GPUs, required in one
		// NVLink domain) both run.
		for _, g := range []string{"train-0", "train-1"} {
			pg := testutil.MakePodGroup(g, tc.ns).MinMember(3).NetworkTopology(v1alpha1.NetworkTopologyRequired, v1alpha1.NetworkLevelNVLink).Obj()
			Expect(k8sClient.Create(suiteCtx, pg)).To(Succeed())
			for i := range 3 {
				Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("%s-%d", g, i)).PodGroup(g).
					Req("cpu", "8", "memory", "64Gi", "nvidia.com/gpu", "4").Limit("nvidia.com/gpu", "4").Obj())).To(Succeed())
			}
		}
		for _, g := range []string{"train-0", "train-1"} {
			Eventually(tc.boundFn(g)).WithTimeout(testutil.Timeout).Should(Equal(3), g+" should find a whole NVLink domain")
			d := domainOf(g + "-0")
			Expect(d).NotTo(Equal(broken))
			for i := 1; i < 3; i++ {
				Expect(domainOf(fmt.Sprintf("%s-%d", g, i))).To(Equal(d), g+"'s members should share one domain")
			}
		}
	})

	It("places a gang in one rack where one holds it, and in one ToR where one does", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		racks(tc, 2, 8)
		gpuGang(tc, "big", 8, nil) // no policy: preferred, as compact as fits
		Eventually(tc.boundFn("big")).WithTimeout(testutil.Timeout).Should(Equal(8))
		r, _ := domainsOf(tc, "big")
		Expect(r).To(HaveLen(1), "8 members of 8 GPUs fit one rack of 8 nodes")

		gpuGang(tc, "small", 4, &v1alpha1.NetworkTopologyPolicy{Mode: v1alpha1.NetworkTopologyRequired, Level: v1alpha1.NetworkLevelRack})
		Eventually(tc.boundFn("small")).WithTimeout(testutil.Timeout).Should(Equal(4))
		_, t := domainsOf(tc, "small")
		Expect(t).To(HaveLen(1), "4 members fit one ToR of 4 nodes: a lower level than the required rack")
	})

	It("binds nothing of a gang whose required rack no rack holds, and says why", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		racks(tc, 2, 4)
		gpuGang(tc, "wide", 6, &v1alpha1.NetworkTopologyPolicy{Mode: v1alpha1.NetworkTopologyRequired, Level: v1alpha1.NetworkLevelRack})
		Eventually(tc.scheduledMessage("wide-0")).WithTimeout(testutil.Timeout).Should(ContainSubstring(
			"TopologyUnsatisfiable: gang " + tc.ns + "/wide needs 6 members (6 × 8 nvidia.com/gpu) in one rack; the largest rack fits 4"))
		Eventually(tc.scheduledReason("wide")).WithTimeout(testutil.Timeout).Should(Equal(v1alpha1.ReasonTopologyUnsatisfiable))
		Expect(tc.bound("wide")).To(Equal(0))
	})

	It("places a LeaderWorkerSet group whose exclusive-topology names the rack label in one rack, and binds nothing of one no rack holds", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		racks(tc, 2, 4)
		// The pods LeaderWorkerSet v0.7 makes for group g of a set of size n (leader,
		// then workers), with the gang labels the pod webhook adds and the annotation
		// LWS copies from the set to every pod.
		lwsGroup := func(set string, group, n int) string {
			gang := fmt.Sprintf("%s-%d", set, group)
			for w := range n {
				Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("%s-%d", gang, w)).
					Label("leaderworkerset.sigs.k8s.io/name", set).Label("leaderworkerset.sigs.k8s.io/group-index", fmt.Sprint(group)).
					Label("leaderworkerset.sigs.k8s.io/worker-index", fmt.Sprint(w)).
					Label(v1alpha1.LabelKubeNexusGangName, gang).Label(v1alpha1.LabelKubeNexusGangMinAvailable, fmt.Sprint(n)).
					Annotation(v1alpha1.AnnotationLWSExclusiveTopology, v1alpha1.LabelRack).
					Req("cpu", "8", "memory", "32Gi", "nvidia.com/gpu", "8").Limit("nvidia.com/gpu", "8").Obj())).To(Succeed())
			}
			return gang
		}
		boundIn := func(gang string) (bound int, racks map[string]int) {
			pods := &corev1.PodList{}
			Expect(k8sClient.List(suiteCtx, pods, client.InNamespace(tc.ns), client.MatchingLabels{v1alpha1.LabelKubeNexusGangName: gang})).To(Succeed())
			racks = map[string]int{}
			for _, p := range pods.Items {
				if p.Spec.NodeName == "" {
					continue
				}
				node := &corev1.Node{}
				Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: p.Spec.NodeName}, node)).To(Succeed())
				racks[node.Labels[v1alpha1.LabelRack]]++
				bound++
			}
			return bound, racks
		}
		// Six members: both racks together hold them, no one rack does.
		wide := lwsGroup("vllm-wide", 0, 6)
		Eventually(tc.scheduledMessage(wide + "-0")).WithTimeout(testutil.Timeout).Should(ContainSubstring(
			"TopologyUnsatisfiable: gang " + tc.ns + "/" + wide + " needs 6 members (6 × 8 nvidia.com/gpu) in one rack; the largest rack fits 4"))
		n, _ := boundIn(wide)
		Expect(n).To(Equal(0))
		// Three members, beside it: one rack (a preferred gang of 3 could take two).
		small := lwsGroup("vllm", 0, 3)
		Eventually(func() int { n, _ := boundIn(small); return n }).WithTimeout(testutil.Timeout).Should(Equal(3))
		_, r := boundIn(small)
		Expect(r).To(HaveLen(1))
	})

	It("plans each LeaderWorkerSet group of a serving PodGroup in one rack of its own, where no rack holds the whole PodGroup", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		racks(tc, 2, 2)
		pg := testutil.MakePodGroup("serve", tc.ns).MinMember(4).MinMemberPerRole("prefill", 2).MinMemberPerRole("decode", 2).Obj()
		pg.Spec.NetworkTopology = &v1alpha1.NetworkTopologyPolicy{Mode: v1alpha1.NetworkTopologyRequired, Level: v1alpha1.NetworkLevelRack}
		Expect(k8sClient.Create(suiteCtx, pg)).To(Succeed())
		// One group (a leader and a worker, 8 GPUs each) of a prefill and of a decode
		// LeaderWorkerSet, labelled and annotated as LWS v0.7 makes them.
		for _, set := range []string{"prefill", "decode"} {
			for w := range 2 {
				Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("%s-0-%d", set, w)).PodGroup("serve").Label(v1alpha1.LabelWorkloadRole, set).
					Label("leaderworkerset.sigs.k8s.io/name", set).Label("leaderworkerset.sigs.k8s.io/group-index", "0").
					Label("leaderworkerset.sigs.k8s.io/worker-index", fmt.Sprint(w)).Annotation("leaderworkerset.sigs.k8s.io/size", "2").
					Req("cpu", "8", "memory", "32Gi", "nvidia.com/gpu", "8").Limit("nvidia.com/gpu", "8").Obj())).To(Succeed())
			}
		}
		Eventually(tc.boundFn("serve")).WithTimeout(testutil.Timeout).Should(Equal(4))
		rackOf := map[string]string{}
		for _, set := range []string{"prefill", "decode"} {
			for w := range 2 {
				p := &corev1.Pod{}
				Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: fmt.Sprintf("%s-0-%d", set, w)}, p)).To(Succeed())
				node := &corev1.Node{}
				Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: p.Spec.NodeName}, node)).To(Succeed())
				if r, seen := rackOf[set]; seen {
					Expect(node.Labels[v1alpha1.LabelRack]).To(Equal(r), "the %s group's two pods share a rack", set)
				}
				rackOf[set] = node.Labels[v1alpha1.LabelRack]
			}
		}
		Expect(rackOf["prefill"]).NotTo(Equal(rackOf["decode"]))
	})

	It("puts two gangs that each fit one rack, submitted together, in different racks, with nothing partially bound", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		racks(tc, 2, 4)
		req := &v1alpha1.NetworkTopologyPolicy{Mode: v1alpha1.NetworkTopologyRequired, Level: v1alpha1.NetworkLevelRack}
		gpuGang(tc, "a", 4, req)
		gpuGang(tc, "b", 4, req)
		Eventually(func() int { return tc.bound("a") + tc.bound("b") }).WithTimeout(testutil.Timeout).Should(Equal(8))
		ra, _ := domainsOf(tc, "a")
		rb, _ := domainsOf(tc, "b")
		Expect(ra).To(HaveLen(1))
		Expect(rb).To(HaveLen(1))
		for k := range ra {
			Expect(rb).NotTo(HaveKey(k))
		}
	})

	It("keeps a gang's late member in the rack its placed members run in, waiting while that rack is full", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		racks(tc, 2, 4)
		pg := testutil.MakePodGroup("elastic", tc.ns).MinMember(2).Obj()
		pg.Spec.NetworkTopology = &v1alpha1.NetworkTopologyPolicy{Mode: v1alpha1.NetworkTopologyRequired, Level: v1alpha1.NetworkLevelRack}
		Expect(k8sClient.Create(suiteCtx, pg)).To(Succeed())
		member := func(name string) *testutil.PodWrapper {
			return tc.pod(name).PodGroup("elastic").Req("cpu", "8", "memory", "32Gi", "nvidia.com/gpu", "8").Limit("nvidia.com/gpu", "8")
		}
		Expect(k8sClient.Create(suiteCtx, member("elastic-0").Obj())).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, member("elastic-1").Obj())).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, member("elastic-2").Gate("example.com/later").Obj())).To(Succeed())
		Eventually(tc.boundFn("elastic")).WithTimeout(testutil.Timeout).Should(Equal(2))
		placed, _ := domainsOf(tc, "elastic")
		Expect(placed).To(HaveLen(1))
		var rack string
		for r := range placed {
			rack = r
		}

		// Fill the rest of that rack outside the scheduler; the other rack stays empty.
		nodes := &corev1.NodeList{}
		Expect(k8sClient.List(suiteCtx, nodes, client.MatchingLabels{v1alpha1.LabelRack: rack})).To(Succeed())
		used := map[string]bool{}
		for _, n := range []string{"elastic-0", "elastic-1"} {
			used[tc.nodeOf(n)()] = true
		}
		var fillers []string
		for _, n := range nodes.Items {
			if used[n.Name] {
				continue
			}
			f := tc.pod(fmt.Sprintf("filler-%d", len(fillers))).Req("nvidia.com/gpu", "8").Limit("nvidia.com/gpu", "8").Obj()
			f.Spec.NodeName = n.Name
			Expect(k8sClient.Create(suiteCtx, f)).To(Succeed())
			fillers = append(fillers, f.Name)
		}
		Expect(fillers).To(HaveLen(2))

		late := &corev1.Pod{}
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: "elastic-2"}, late)).To(Succeed())
		late.Spec.SchedulingGates = nil
		Expect(k8sClient.Update(suiteCtx, late)).To(Succeed())
		Eventually(tc.scheduledMessage("elastic-2")).WithTimeout(testutil.Timeout).Should(ContainSubstring(
			"TopologyUnsatisfiable: gang " + tc.ns + "/elastic needs 1 more members (1 × 8 nvidia.com/gpu) in rack/" + rack + ", where its placed members run; it fits 0"))
		Expect(tc.nodeOf("elastic-2")()).To(BeEmpty(), "the other rack is empty, but the gang requires one rack")

		Expect(k8sClient.Delete(suiteCtx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: tc.ns, Name: fillers[0]}}, client.GracePeriodSeconds(0))).To(Succeed())
		Eventually(tc.nodeOf("elastic-2")).WithTimeout(testutil.Timeout).ShouldNot(BeEmpty())
		placed, _ = domainsOf(tc, "elastic")
		Expect(placed).To(Equal(map[string]int{rack: 3}))
	})

	It("spills a preferred gang that no rack holds over the fewest racks", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		// rack-0 has four 8-GPU nodes, rack-1 and rack-2 two each.
		for r, n := range []int{4, 2, 2} {
			tc.addLabelledNodes(fmt.Sprintf("r%d", r), n, map[string]string{v1alpha1.LabelRack: fmt.Sprintf("%s-rack-%d", tc.ns, r)},
				"cpu", "64", "memory", "512Gi", "nvidia.com/gpu", "8")
		}
		gpuGang(tc, "spill", 6, &v1alpha1.NetworkTopologyPolicy{Mode: v1alpha1.NetworkTopologyPreferred, Level: v1alpha1.NetworkLevelRack})
		Eventually(tc.boundFn("spill")).WithTimeout(testutil.Timeout).Should(Equal(6))
		r, _ := domainsOf(tc, "spill")
		Expect(r).To(HaveLen(2), "6 members: rack-0's 4 nodes and one of the 2-node racks, not all three racks: %v", r)
		Expect(r).To(HaveKeyWithValue(tc.ns+"-rack-0", 4))
	})

	It("places a Spark-shaped gang's GPU executors compactly beside its CPU driver", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		racks(tc, 2, 4)
		Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup("spark", tc.ns).MinMember(5).Obj())).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, tc.pod("spark-driver").PodGroup("spark").Label("spark-role", "driver").Req("cpu", "2", "memory", "8Gi").Obj())).To(Succeed())
		for i := range 4 {
			Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("spark-exec-%d", i)).PodGroup("spark").Label("spark-role", "executor").
				Req("cpu", "8", "memory", "32Gi", "nvidia.com/gpu", "4").Limit("nvidia.com/gpu", "4").Obj())).To(Succeed())
		}
		Eventually(tc.boundFn("spark")).WithTimeout(testutil.Timeout).Should(Equal(5))
		_, tors := domainsOf(tc, "spark")
		Expect(tors).To(HaveLen(1), "4 executors of 4 GPUs and the driver fit one ToR: %v", tors)
	})

	It("keeps a gold tenant's CPU-only gang on the CPU servers of its rack, though its tier prefers the GPU nodes", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		tc.setTier(v1alpha1.TenantTierGold)
		// One rack: two premium 8-GPU nodes (gold's preferred tier) and two economy
		// CPU servers.
		hw := func(tier string) string { return tier + "-" + tc.ns }
		rack := map[string]string{v1alpha1.LabelRack: tc.ns + "-rack"}
		withTier := func(tier string) map[string]string {
			return map[string]string{v1alpha1.LabelRack: rack[v1alpha1.LabelRack], "hw": hw(tier)}
		}
		tc.addLabelledNodes("gpu", 2, withTier("premium"), "cpu", "64", "memory", "512Gi", "nvidia.com/gpu", "8")
		tc.addLabelledNodes("cpu", 2, withTier("economy"), "cpu", "32", "memory", "128Gi")
		premium := testutil.MakeHardwareTier(hw("premium"), 100).Selector(metav1.LabelSelector{MatchLabels: map[string]string{"hw": hw("premium")}}).
			Tenants(v1alpha1.TenantTierGold).Obj()
		economy := testutil.MakeHardwareTier(hw("economy"), 10).Selector(metav1.LabelSelector{MatchLabels: map[string]string{"hw": hw("economy")}}).Obj()
		createHardwareTiers(premium, economy)

		// Three 1-CPU pods: the CPU servers hold them.
		tc.gang("cpu-small", 3, "1", "")
		Eventually(tc.boundFn("cpu-small")).WithTimeout(testutil.Timeout).Should(Equal(3))
		for i := range 3 {
			Expect(tc.nodeOf(fmt.Sprintf("cpu-small-%d", i))()).To(HavePrefix(tc.ns+"-cpu-"), "a CPU-only gang member on a GPU node, with CPU servers free")
		}

		// Three 24-CPU pods: the CPU servers hold two; one spills onto a GPU node, the
		// gang still whole.
		tc.gang("cpu-large", 3, "24", "")
		Eventually(tc.boundFn("cpu-large")).WithTimeout(testutil.Timeout).Should(Equal(3))
		onGPU := 0
		for i := range 3 {
			if strings.HasPrefix(tc.nodeOf(fmt.Sprintf("cpu-large-%d", i))(), tc.ns+"-gpu-") {
				onGPU++
			}
		}
		Expect(onGPU).To(Equal(1), "two of three 24-CPU members fit the CPU servers beside the small gang; only the third takes a GPU node")
	})

	It("plans a gang for all its members, the one whose arrival completes the quorum included, while a gang larger than the cluster holds nothing", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		// rack-0: four 8-GPU nodes, one GPU of one of them taken; rack-1: four whole
		// nodes. A gang of four whole nodes fits rack-1 only; a plan made for three
		// of its members fits rack-0 best and leaves the fourth to another rack.
		racks(tc, 2, 4)
		unreserved := func() float64 {
			sum := 0.0
			for _, m := range gathered("kubenexus_coscheduling_unreserved_members_total") {
				sum += m.GetCounter().GetValue()
			}
			return sum
		}
		unreservedBefore := unreserved()
		taken := tc.pod("taken").Req("nvidia.com/gpu", "1").Limit("nvidia.com/gpu", "1").Obj()
		taken.Spec.NodeName = tc.ns + "-r0-t0-0"
		Expect(k8sClient.Create(suiteCtx, taken)).To(Succeed())

		// Nine members of 8 GPUs, for eight nodes: never placeable, it must hold no node.
		gpuGang(tc, "oversized", 9, nil)
		Eventually(tc.scheduledReason("oversized")).WithTimeout(testutil.Timeout).Should(Equal(v1alpha1.ReasonInsufficientCapacity))

		gpuGang(tc, "four", 4, nil)
		Eventually(tc.boundFn("four")).WithTimeout(testutil.Timeout).Should(Equal(4))
		r, _ := domainsOf(tc, "four")
		Expect(r).To(Equal(map[string]int{tc.ns + "-rack-1": 4}), "four whole nodes are free in rack-1 only")
		Expect(tc.bound("oversized")).To(Equal(0))
		Expect(unreserved()).To(Equal(unreservedBefore), "a member was reserved and then given back: the oversized gang held a node, or the gang of four was rejected")
	})
})
