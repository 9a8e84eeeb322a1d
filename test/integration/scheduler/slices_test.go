package scheduler_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/cmd/kubectl-kubenexus/explain"
	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/schedulertest"
)

var _ = Describe("NetworkFabric slices", func() {
	// layered creates Kueue #9046's fleet: zones × 4 blocks (the rack level) × 8
	// NVLink domains × 4 nodes; gpus gives a node's GPUs by its zone and its index in
	// its NVLink domain.
	layered := func(tc *testCluster, zones int, gpus func(z, i int) int) {
		GinkgoHelper()
		for z := range zones {
			for b := range 4 {
				for d := range 8 {
					for i := range 4 {
						tc.addLabelledNodes(fmt.Sprintf("z%d-b%d-d%d-n%d", z, b, d, i), 1, map[string]string{
							v1alpha1.LabelTopologyZone: fmt.Sprintf("%s-z%d", tc.ns, z),
							v1alpha1.LabelRack:         fmt.Sprintf("%s-z%d-b%d", tc.ns, z, b),
							v1alpha1.LabelGPUClique:    fmt.Sprintf("%s-z%d-b%d-d%d", tc.ns, z, b, d),
						}, "cpu", "64", "memory", "512Gi", "nvidia.com/gpu", fmt.Sprint(gpus(z, i)))
					}
				}
			}
		}
	}
	// members creates n pods of 2 GPUs in PodGroup gang, with the annotations kv.
	members := func(tc *testCluster, gang string, n int, kv ...string) {
		GinkgoHelper()
		for i := range n {
			w := tc.pod(fmt.Sprintf("%s-%d", gang, i)).PodGroup(gang).Req("cpu", "4", "memory", "16Gi", "nvidia.com/gpu", "2").Limit("nvidia.com/gpu", "2")
			for j := 0; j+1 < len(kv); j += 2 {
				w = w.Annotation(kv[j], kv[j+1])
			}
			Expect(k8sClient.Create(suiteCtx, w.Obj())).To(Succeed())
		}
	}
	// violations counts, for the gang's bound members, the zones they span beyond one
	// and the blocks and NVLink domains holding a count that is not a multiple of
	// their slice size; zone is one of the zones they are in.
	violations := func(tc *testCluster, gang string) (bound, broken int, zone string) {
		GinkgoHelper()
		pods := &corev1.PodList{}
		Expect(k8sClient.List(suiteCtx, pods, client.InNamespace(tc.ns), client.MatchingLabels{v1alpha1.LabelPodGroup: gang})).To(Succeed())
		zones, blocks, cliques := map[string]int{}, map[string]int{}, map[string]int{}
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" {
				continue
			}
			bound++
			node := &corev1.Node{}
			Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: p.Spec.NodeName}, node)).To(Succeed())
			zone = node.Labels[v1alpha1.LabelTopologyZone]
			zones[zone]++
			blocks[node.Labels[v1alpha1.LabelRack]]++
			cliques[node.Labels[v1alpha1.LabelGPUClique]]++
		}
		broken = max(len(zones)-1, 0)
		for _, n := range blocks {
			if n%48 != 0 {
				broken++
			}
		}
		for _, n := range cliques {
			if n%16 != 0 {
				broken++
			}
		}
		return bound, broken, zone
	}
	multiLayer := `[{"topology": "` + v1alpha1.LabelRack + `", "size": 48}, {"topology": "` + v1alpha1.LabelGPUClique + `", "size": 16}]`

	It("places Kueue #9046's shape on 512 nodes — 96 pods in one zone, 48 per block, 16 per NVLink domain — through a PodGroup and through Kueue's annotations, with no violation", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		layered(tc, 4, func(int, int) int { return 8 })
		// In zones 0–2 a pod of 4 GPUs runs on the first node of every NVLink domain:
		// 14 members fit a domain, 112 a block — the tightest block for 96 members,
		// and no longer a whole NVLink domain to keep (a plan without slices takes
		// one and breaks every slice). Only zone 3 has NVLink domains that hold a
		// slice of 16.
		for z := range 3 {
			for b := range 4 {
				for d := range 8 {
					Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("busy-z%d-b%d-d%d", z, b, d)).
						Node(fmt.Sprintf("%s-z%d-b%d-d%d-n0-0", tc.ns, z, b, d)).
						Req("cpu", "4", "memory", "16Gi", "nvidia.com/gpu", "4").Limit("nvidia.com/gpu", "4").Obj())).To(Succeed())
				}
			}
		}
		start := time.Now()
		// One gang through the PodGroup's own slices...
		Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup("pg-sliced", tc.ns).MinMember(96).
			NetworkTopology(v1alpha1.NetworkTopologyRequired, v1alpha1.NetworkLevelZone).
			Slices(v1alpha1.NetworkLevelRack, 48, v1alpha1.NetworkLevelNVLink, 16).Obj())).To(Succeed())
		members(tc, "pg-sliced", 96)
		// ...and one through Kueue's TAS annotations on the pods.
		Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup("kueue-sliced", tc.ns).MinMember(96).Obj())).To(Succeed())
		members(tc, "kueue-sliced", 96, v1alpha1.AnnotationKueueRequiredTopology, v1alpha1.LabelTopologyZone,
			v1alpha1.AnnotationKueueSliceConstraints, multiLayer)
		for _, g := range []string{"pg-sliced", "kueue-sliced"} {
			Eventually(tc.boundFn(g)).WithTimeout(2*time.Minute).Should(Equal(96), g+" should be bound whole")
			bound, broken, zone := violations(tc, g)
			Expect(bound).To(Equal(96))
			Expect(broken).To(BeZero(), g+": zones beyond one, or blocks and NVLink domains holding part of a slice")
			Expect(zone).To(Equal(tc.ns+"-z3"), g+" should be in the only zone with whole NVLink domains")
		}
		GinkgoWriter.Printf("two gangs of 96 in slices bound %.1fs after the first was created\n", time.Since(start).Seconds())
	})

	It("keeps neighbouring ranks in one slice: an Indexed Job's pods 0–7, 8–15, … each in one NVLink domain, 0–15 and 16–31 each in one rack", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		// One zone of 2 racks × 2 NVLink domains × 2 nodes of 8 GPUs: 4 members per
		// node, a slice of 8 per NVLink domain.
		for r := range 2 {
			for d := range 2 {
				tc.addLabelledNodes(fmt.Sprintf("r%d-d%d", r, d), 2, map[string]string{
					v1alpha1.LabelTopologyZone: tc.ns + "-z0",
					v1alpha1.LabelRack:         fmt.Sprintf("%s-r%d", tc.ns, r),
					v1alpha1.LabelGPUClique:    fmt.Sprintf("%s-r%d-d%d", tc.ns, r, d),
				}, "cpu", "64", "memory", "512Gi", "nvidia.com/gpu", "8")
			}
		}
		Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup("ranked", tc.ns).MinMember(32).
			NetworkTopology(v1alpha1.NetworkTopologyRequired, v1alpha1.NetworkLevelZone).
			Slices(v1alpha1.NetworkLevelRack, 16, v1alpha1.NetworkLevelNVLink, 8).Obj())).To(Succeed())
		// Pod names do not follow the ranks: pod i has completion index 5i mod 32.
		rankOf := map[string]int{}
		for i := range 32 {
			name := fmt.Sprintf("ranked-%02d", i)
			rankOf[name] = i * 5 % 32
			Expect(k8sClient.Create(suiteCtx, tc.pod(name).PodGroup("ranked").Label(workload.LabelCompletionIndex, fmt.Sprint(rankOf[name])).
				Req("cpu", "4", "memory", "16Gi", "nvidia.com/gpu", "2").Limit("nvidia.com/gpu", "2").Obj())).To(Succeed())
		}
		Eventually(tc.boundFn("ranked")).WithTimeout(2 * time.Minute).Should(Equal(32))
		cliques, racks := map[int]map[string]bool{}, map[int]map[string]bool{}
		for name, rank := range rankOf {
			node := &corev1.Node{}
			Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: tc.nodeOf(name)()}, node)).To(Succeed())
			if cliques[rank/8] == nil {
				cliques[rank/8] = map[string]bool{}
			}
			if racks[rank/16] == nil {
				racks[rank/16] = map[string]bool{}
			}
			cliques[rank/8][node.Labels[v1alpha1.LabelGPUClique]] = true
			racks[rank/16][node.Labels[v1alpha1.LabelRack]] = true
		}
		for r, ds := range cliques {
			Expect(ds).To(HaveLen(1), fmt.Sprintf("ranks %d–%d should share one NVLink domain", r*8, r*8+7))
		}
		for r, ds := range racks {
			Expect(ds).To(HaveLen(1), fmt.Sprintf("ranks %d–%d should share one rack", r*16, r*16+15))
		}
	})

	It("refuses a sliced gang on a fragmented fleet before any member binds, naming the layer no domain holds", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		// One zone; the first node of every NVLink domain has 6 GPUs: 15 members of 2
		// GPUs fit a domain, 120 a block, 480 the zone — but no slice of 16.
		layered(tc, 1, func(_, i int) int {
			if i == 0 {
				return 6
			}
			return 8
		})
		Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup("frag", tc.ns).MinMember(96).Obj())).To(Succeed())
		members(tc, "frag", 96, v1alpha1.AnnotationKueueRequiredTopology, v1alpha1.LabelTopologyZone,
			v1alpha1.AnnotationKueueSliceConstraints, multiLayer)
		Eventually(tc.scheduledMessage("frag-0")).WithTimeout(testutil.Timeout).Should(ContainSubstring(
			"TopologyUnsatisfiable: gang " + tc.ns + "/frag needs 96 members (96 × 2 nvidia.com/gpu) in one zone, in slices of 48 in one rack, of 16 in one nvlink; " +
				"zone/" + tc.ns + "-z0 holds 0 of the 6 slices of 16 in one nvlink (" + v1alpha1.AnnotationKueueRequiredTopology + ")"))
		Consistently(tc.boundFn("frag")).WithTimeout(3 * time.Second).Should(BeZero())
		// explain names the same layer, from the same plan.
		Eventually(explained(tc, "podgroup", "frag")).WithTimeout(testutil.Timeout).Should(HaveKeyWithValue(explain.LayerTopology, And(
			HaveField("Verdict", explain.Blocked),
			HaveField("Text", "needs 96 members (96 × 2 nvidia.com/gpu) in one zone, in slices of 48 in one rack, of 16 in one nvlink; "+
				tc.ns+"-z0 holds 0 of the 6 slices of 16 in one nvlink"))))
	})

	It("binds a gang Kueue's TAS placed on the nodes Kueue's node selectors pin, though its pinned members are not alike", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		// Two racks of two NVLink domains of two 8-GPU nodes; Kueue chose rack-1 for
		// 16 members of 2 GPUs in slices of 8 per NVLink domain and pinned each member
		// to a node (its Topology's lowest level is the hostname), as its topology
		// ungater leaves them: the pinned members are not alike.
		for r := range 2 {
			for d := range 2 {
				tc.addLabelledNodes(fmt.Sprintf("r%d-d%d", r, d), 2, map[string]string{
					v1alpha1.LabelRack: fmt.Sprintf("%s-rack-%d", tc.ns, r), v1alpha1.LabelGPUClique: fmt.Sprintf("%s-r%d-d%d", tc.ns, r, d),
				}, "cpu", "64", "memory", "512Gi", "nvidia.com/gpu", "8")
			}
		}
		Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup("kueue-placed", tc.ns).MinMember(16).Obj())).To(Succeed())
		pinned := func(i int) string { return fmt.Sprintf("%s-r1-d%d-%d", tc.ns, i/8, i%8/4) }
		for i := range 16 {
			Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("kueue-placed-%d", i)).PodGroup("kueue-placed").
				Req("cpu", "4", "memory", "16Gi", "nvidia.com/gpu", "2").Limit("nvidia.com/gpu", "2").
				Annotation(v1alpha1.AnnotationKueueWorkload, "job-train-5f2c1").
				Annotation(v1alpha1.AnnotationKueueRequiredTopology, v1alpha1.LabelRack).
				Annotation(v1alpha1.AnnotationKueueSliceRequiredTopology, v1alpha1.LabelGPUClique).
				Annotation(v1alpha1.AnnotationKueueSliceSize, "8").
				NodeSelector(corev1.LabelHostname, pinned(i)).Obj())).To(Succeed())
		}
		Eventually(tc.boundFn("kueue-placed")).WithTimeout(testutil.Timeout).Should(Equal(16))
		for i := range 16 {
			Expect(tc.nodeOf(fmt.Sprintf("kueue-placed-%d", i))()).To(Equal(pinned(i)))
		}
	})

	It("starts KAI's prefill/decode pair together, each role in one NVLink domain of its own, both in one rack", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		// A compact plan without sub-groups puts decode members on d2's small nodes
		// first and the rest beside prefill: two NVLink domains.
		tc.addPrefillDecodeFleet()
		// And in rack-0 an NVLink domain of one 4-GPU node: a lost decode member's room
		// fits there as tightly as in the hole it left (and its domain's name comes first).
		tc.addLabelledNodes("r0-a", 1, map[string]string{
			v1alpha1.LabelRack: tc.ns + "-rack-0", v1alpha1.LabelGPUClique: tc.ns + "-r0-a",
		}, "cpu", "64", "memory", "512Gi", "nvidia.com/gpu", "4")
		Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup("serve", tc.ns).MinMember(6).
			MinMemberPerRole("prefill", 2).MinMemberPerRole("decode", 4).
			NetworkTopology(v1alpha1.NetworkTopologyRequired, v1alpha1.NetworkLevelRack).
			SubGroup("prefill", v1alpha1.NetworkLevelNVLink).SubGroup("decode", v1alpha1.NetworkLevelNVLink).Obj())).To(Succeed())
		for role, n := range map[string]int{"prefill": 2, "decode": 4} {
			gpus := map[string]string{"prefill": "8", "decode": "4"}[role]
			for i := range n {
				Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("%s-%d", role, i)).PodGroup("serve").Label(v1alpha1.LabelWorkloadRole, role).
					Req("cpu", "4", "memory", "16Gi", "nvidia.com/gpu", gpus).Limit("nvidia.com/gpu", gpus).Obj())).To(Succeed())
			}
		}
		Eventually(tc.boundFn("serve")).WithTimeout(testutil.Timeout).Should(Equal(6), "the pair should start together")
		decodePods := []string{"decode-0", "decode-1", "decode-2", "decode-3"}
		tc.expectPairPlaced([]string{"prefill-0", "prefill-1"}, decodePods)
		decode, _ := tc.domainsOf(decodePods...)

		// A decode member is lost; its replacement goes back to decode's NVLink domain,
		// not to r0-a, which it would fill as tightly.
		Expect(k8sClient.Delete(suiteCtx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "decode-0", Namespace: tc.ns}}, client.GracePeriodSeconds(0))).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: "decode-0"}, &corev1.Pod{}))
		}).WithTimeout(testutil.Timeout).Should(BeTrue())
		Expect(k8sClient.Create(suiteCtx, tc.pod("decode-4").PodGroup("serve").Label(v1alpha1.LabelWorkloadRole, "decode").
			Req("cpu", "4", "memory", "16Gi", "nvidia.com/gpu", "4").Limit("nvidia.com/gpu", "4").Obj())).To(Succeed())
		Eventually(tc.nodeOf("decode-4")).WithTimeout(testutil.Timeout).ShouldNot(BeEmpty())
		node := &corev1.Node{}
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: tc.nodeOf("decode-4")()}, node)).To(Succeed())
		Expect(decode).To(HaveKey(node.Labels[v1alpha1.LabelGPUClique]), "the replacement in decode's NVLink domain")
	})

	It("keeps roles that ask for the same in sub-groups of their own; explain names the sub-group no domain holds", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		// rack-0: NVLink domain d0 of two 4-GPU nodes (2 members of 4 GPUs), d1 of two
		// 8-GPU nodes (4 members). Prefill and decode members ask for the same 4 GPUs:
		// planned as one shape, all six would need one NVLink domain.
		for d, gpus := range []string{"4", "8"} {
			tc.addLabelledNodes(fmt.Sprintf("r0-d%d", d), 2, map[string]string{
				v1alpha1.LabelRack: tc.ns + "-rack-0", v1alpha1.LabelGPUClique: fmt.Sprintf("%s-r0-d%d", tc.ns, d),
			}, "cpu", "64", "memory", "512Gi", "nvidia.com/gpu", gpus)
		}
		pair := func(name string, decode int) {
			Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup(name, tc.ns).MinMember(int32(2+decode)).
				NetworkTopology(v1alpha1.NetworkTopologyRequired, v1alpha1.NetworkLevelRack).
				SubGroup("prefill", v1alpha1.NetworkLevelNVLink).SubGroup("decode", v1alpha1.NetworkLevelNVLink).Obj())).To(Succeed())
			for role, n := range map[string]int{"prefill": 2, "decode": decode} {
				for i := range n {
					Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("%s-%s-%d", name, role, i)).PodGroup(name).Label(v1alpha1.LabelWorkloadRole, role).
						Req("cpu", "4", "memory", "16Gi", "nvidia.com/gpu", "4").Limit("nvidia.com/gpu", "4").Obj())).To(Succeed())
				}
			}
		}
		// Six decode members: no NVLink domain holds them.
		pair("wide", 6)
		Eventually(tc.scheduledMessage("wide-decode-0")).WithTimeout(testutil.Timeout).Should(
			ContainSubstring("needs its decode members (6 × 4 nvidia.com/gpu) in one nvlink within one rack; rack/" + tc.ns + "-rack-0 holds 4 of the 6 in one nvlink"))
		Eventually(explained(tc, "podgroup", "wide")).WithTimeout(testutil.Timeout).Should(HaveKeyWithValue(explain.LayerTopology, And(
			HaveField("Verdict", explain.Blocked),
			HaveField("Text", "needs its decode members (6 × 4 nvidia.com/gpu) in one nvlink within one rack; "+tc.ns+"-rack-0 holds 4 of the 6 in one nvlink"))))
		// Four: prefill in d0, decode in d1.
		pair("fits", 4)
		Eventually(tc.boundFn("fits")).WithTimeout(testutil.Timeout).Should(Equal(6))
		for role, n := range map[string]int{"prefill": 2, "decode": 4} {
			want := map[string]string{"prefill": tc.ns + "-r0-d0-", "decode": tc.ns + "-r0-d1-"}[role]
			for i := range n {
				Expect(tc.nodeOf(fmt.Sprintf("fits-%s-%d", role, i))()).To(HavePrefix(want), "%s-%d", role, i)
			}
		}
		Expect(tc.boundFn("wide")()).To(BeZero())
	})

	It("plans a bronze gang's slices only on hardware its tier admits: the only whole NVLink domain is gold's, so it waits", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		tc.setTier(v1alpha1.TenantTierGold)
		bronze := tc.tenantNamespace(v1alpha1.TenantTierBronze)
		hw := func(tier string) string { return tier + "-" + tc.ns }
		// Premium: one whole NVLink domain (16 members of 2 GPUs), gold only. Economy:
		// two NVLink domains whose first node has 6 GPUs (15 members each).
		tc.addLabelledNodes("premium", 4, map[string]string{"hw": hw("premium"), v1alpha1.LabelGPUClique: tc.ns + "-p"},
			"cpu", "64", "memory", "512Gi", "nvidia.com/gpu", "8")
		for d := range 2 {
			for i := range 4 {
				gpus := "8"
				if i == 0 {
					gpus = "6"
				}
				tc.addLabelledNodes(fmt.Sprintf("economy-d%d-n%d", d, i), 1, map[string]string{"hw": hw("economy"), v1alpha1.LabelGPUClique: fmt.Sprintf("%s-e%d", tc.ns, d)},
					"cpu", "64", "memory", "512Gi", "nvidia.com/gpu", gpus)
			}
		}
		createHardwareTiers(
			testutil.MakeHardwareTier(hw("premium"), 100).Selector(metav1.LabelSelector{MatchLabels: map[string]string{"hw": hw("premium")}}).Tenants(v1alpha1.TenantTierGold).Obj(),
			testutil.MakeHardwareTier(hw("economy"), 10).Selector(metav1.LabelSelector{MatchLabels: map[string]string{"hw": hw("economy")}}).Obj())
		slice := []string{v1alpha1.AnnotationKueueSliceRequiredTopology, v1alpha1.LabelGPUClique, v1alpha1.AnnotationKueueSliceSize, "16"}
		gangOf := func(ns, name string, pod func(string) *testutil.PodWrapper) {
			Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup(name, ns).MinMember(16).Obj())).To(Succeed())
			for i := range 16 {
				w := pod(fmt.Sprintf("%s-%d", name, i)).PodGroup(name).Req("cpu", "4", "memory", "16Gi", "nvidia.com/gpu", "2").Limit("nvidia.com/gpu", "2")
				for j := 0; j+1 < len(slice); j += 2 {
					w = w.Annotation(slice[j], slice[j+1])
				}
				Expect(k8sClient.Create(suiteCtx, w.Obj())).To(Succeed())
			}
		}
		gangOf(bronze.ns, "bronze-train", bronze.pod)
		Eventually(bronze.scheduledMessage("bronze-train-0")).WithTimeout(testutil.Timeout).Should(
			ContainSubstring("holds 0 of the 1 slices of 16 in one nvlink"))
		Consistently(bronze.boundCount("bronze-train-")).WithTimeout(3 * time.Second).Should(BeZero())
		// The same gang as gold takes premium's domain whole.
		gangOf(tc.ns, "gold-train", tc.pod)
		Eventually(tc.boundFn("gold-train")).WithTimeout(testutil.Timeout).Should(Equal(16))
		for i := range 16 {
			Expect(tc.nodeOf(fmt.Sprintf("gold-train-%d", i))()).To(HavePrefix(tc.ns + "-premium-"))
		}
		Expect(bronze.boundCount("bronze-train-")()).To(BeZero())
	})
})

// addPrefillDecodeFleet adds the fleet of the prefill/decode specs. rack-0: NVLink
// domains d0 and d1 of two 8-GPU nodes, d2 of two 4-GPU nodes; rack-1: one NVLink
// domain of two 8-GPU nodes (too small for a pair of 2 × 8 and 4 × 4 GPUs).
func (tc *testCluster) addPrefillDecodeFleet() {
	for d, gpus := range []string{"8", "8", "4"} {
		tc.addLabelledNodes(fmt.Sprintf("r0-d%d", d), 2, map[string]string{
			v1alpha1.LabelRack: tc.ns + "-rack-0", v1alpha1.LabelGPUClique: fmt.Sprintf("%s-r0-d%d", tc.ns, d),
		}, "cpu", "64", "memory", "512Gi", "nvidia.com/gpu", gpus)
	}
	tc.addLabelledNodes("r1-d0", 2, map[string]string{
		v1alpha1.LabelRack: tc.ns + "-rack-1", v1alpha1.LabelGPUClique: tc.ns + "-r1-d0",
	}, "cpu", "64", "memory", "512Gi", "nvidia.com/gpu", "8")
}

// expectPairPlaced checks the prefill/decode pair's placement on
// addPrefillDecodeFleet: prefill in one NVLink domain, decode in one, both in rack-0.
func (tc *testCluster) expectPairPlaced(prefill, decode []string) {
	GinkgoHelper()
	prefillCliques, prefillRacks := tc.domainsOf(prefill...)
	decodeCliques, decodeRacks := tc.domainsOf(decode...)
	Expect(prefillCliques).To(HaveLen(1), "prefill in one NVLink domain")
	Expect(decodeCliques).To(HaveLen(1), "decode in one NVLink domain")
	Expect(prefillRacks).To(Equal(decodeRacks), "both in one rack")
	Expect(prefillRacks).To(HaveKey(tc.ns + "-rack-0"))
}

// domainsOf returns the NVLink domains and the racks of the nodes the pods run on.
func (tc *testCluster) domainsOf(pods ...string) (cliques, racks map[string]bool) {
	cliques, racks = map[string]bool{}, map[string]bool{}
	for _, name := range pods {
		node := &corev1.Node{}
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: tc.nodeOf(name)()}, node)).To(Succeed())
		cliques[node.Labels[v1alpha1.LabelGPUClique]] = true
		racks[node.Labels[v1alpha1.LabelRack]] = true
	}
	return cliques, racks
}
