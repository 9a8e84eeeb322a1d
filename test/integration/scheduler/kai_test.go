package scheduler_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/cmd/kubectl-kubenexus/explain"
	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/schedulertest"
)

// KAI-Scheduler's own PodGroup CRD (scheduling.run.ai/v2alpha2, from the module
// pinned in hack/tools/kai) is installed in the suite's API server: these PodGroups
// pass its real validation.
var _ = Describe("KAI-Scheduler's PodGroups (scheduling.run.ai/v2alpha2)", func() {
	// kaiPods creates n pods of the KAI PodGroup group in its leaf sub-group role,
	// each asking for gpus GPUs, and returns their names.
	kaiPods := func(tc *testCluster, group, role string, n int, gpus string) []string {
		var names []string
		for i := range n {
			name := fmt.Sprintf("%s-%d", role, i)
			names = append(names, name)
			Expect(k8sClient.Create(suiteCtx, tc.pod(name).KAIGroup(group, role).
				Req("cpu", "4", "memory", "16Gi", "nvidia.com/gpu", gpus).Limit("nvidia.com/gpu", gpus).Obj())).To(Succeed())
		}
		return names
	}

	It("gangs a KAI PodGroup's leaf sub-groups all-or-nothing: each in one NVLink domain of its own, all in one rack", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		tc.addPrefillDecodeFleet()
		// KAI's hierarchical shape: the sub-groups are roles with their own minimums
		// and levels; spec.minMember is not what counts once there are sub-groups.
		Expect(k8sClient.Create(suiteCtx, testutil.KAIPodGroup(tc.ns, "serve", 2, v1alpha1.LabelRack,
			testutil.KAISubGroup{Name: "prefill", MinMember: 2, Required: v1alpha1.LabelGPUClique},
			testutil.KAISubGroup{Name: "decode", MinMember: 4, Required: v1alpha1.LabelGPUClique}))).To(Succeed())

		// decode alone: the gang's count of 2 is met, its prefill sub-group is not.
		decode := kaiPods(tc, "serve", "decode", 4, "4")
		Consistently(tc.boundOf(decode...)).WithTimeout(4*time.Second).Should(Equal(0), "decode started without prefill")
		// explain says the same of a decode pod and of the PodGroup.
		waiting := HaveKeyWithValue(explain.LayerGang, And(
			HaveField("Verdict", explain.Waiting),
			HaveField("Text", HavePrefix("4 of 6 members exist (PodGroup of scheduling.run.ai/v2alpha2: 0 of its quorum of 6 bound, 4 waiting for a node)"))))
		for _, subject := range [][2]string{{"pod", "decode-0"}, {"podgroup", "serve"}} {
			Eventually(explained(tc, subject[0], subject[1])).WithTimeout(testutil.Timeout).Should(waiting, "explain %s/%s", subject[0], subject[1])
		}

		// The PodGroup's own status says it too, as KAI's scheduler writes it.
		Eventually(kaiSchedulingConditions(tc, "serve")).WithTimeout(testutil.Timeout).Should(ConsistOf(And(
			HaveKeyWithValue("type", v1alpha1.KAIUnschedulableOnNodePool), HaveKeyWithValue("nodePool", "default"),
			HaveKeyWithValue("reason", v1alpha1.KAIReasonUnschedulable), HaveKeyWithValue("status", "True"),
			// Counted up at each change of the message (members arriving one by one).
			HaveKeyWithValue("transitionID", MatchRegexp(`^[1-9][0-9]*$`)),
			HaveKeyWithValue("message", "WaitingForMembers 4/6: the gang starts when 6 members exist, with every role's minimum; roles short: prefill 0/2"),
			HaveKeyWithValue("reasons", ConsistOf(HaveKeyWithValue("reason", v1alpha1.ReasonWaitingForMembers))))))

		prefill := kaiPods(tc, "serve", "prefill", 2, "8")
		Eventually(tc.boundOf(append(decode, prefill...)...)).WithTimeout(testutil.Timeout).Should(Equal(6), "the PodGroup should start whole")
		tc.expectPairPlaced(prefill, decode)
		// Placed: the condition goes.
		Eventually(kaiSchedulingConditions(tc, "serve")).WithTimeout(testutil.Timeout).Should(BeEmpty())
	})

	It("keeps each sub-group that prefers an NVLink domain in one where the rack holds it so, and spreads one where it does not", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		// rack-a: four 8-GPU nodes whose names alternate between NVLink domains a0
		// and a1 (a plan that fills nodes in name order mixes them); rack-b: two
		// nodes, each a domain of its own.
		for i := range 4 {
			tc.addLabelledNodes(fmt.Sprintf("a-%d", i), 1, map[string]string{v1alpha1.LabelRack: tc.ns + "-rack-a", v1alpha1.LabelGPUClique: fmt.Sprintf("%s-a%d", tc.ns, i%2)},
				"cpu", "64", "memory", "512Gi", "nvidia.com/gpu", "8")
		}
		for i := range 2 {
			tc.addLabelledNodes(fmt.Sprintf("b-%d", i), 1, map[string]string{v1alpha1.LabelRack: tc.ns + "-rack-b", v1alpha1.LabelGPUClique: fmt.Sprintf("%s-b%d", tc.ns, i)},
				"cpu", "64", "memory", "512Gi", "nvidia.com/gpu", "8")
		}
		// members creates n whole-node members of the KAI PodGroup group in role.
		members := func(group, role string, n int, cpu string) []string {
			var pods []string
			for i := range n {
				name := fmt.Sprintf("%s-%s-%d", group, role, i)
				pods = append(pods, name)
				Expect(k8sClient.Create(suiteCtx, tc.pod(name).KAIGroup(group, role).
					Req("cpu", cpu, "memory", "16Gi", "nvidia.com/gpu", "8").Limit("nvidia.com/gpu", "8").Obj())).To(Succeed())
			}
			return pods
		}
		// Prefill and decode, two each, required in one rack, each preferring one
		// NVLink domain: rack-a holds them so.
		Expect(k8sClient.Create(suiteCtx, testutil.KAIPodGroup(tc.ns, "serve", 0, v1alpha1.LabelRack,
			testutil.KAISubGroup{Name: "prefill", MinMember: 2, Preferred: v1alpha1.LabelGPUClique},
			testutil.KAISubGroup{Name: "decode", MinMember: 2, Preferred: v1alpha1.LabelGPUClique}))).To(Succeed())
		prefill, decode := members("serve", "prefill", 2, "4"), members("serve", "decode", 2, "8")
		Eventually(tc.boundOf(append(prefill, decode...)...)).WithTimeout(testutil.Timeout).Should(Equal(4), "serve should start whole")
		prefillCliques, prefillRacks := tc.domainsOf(prefill...)
		decodeCliques, decodeRacks := tc.domainsOf(decode...)
		Expect(prefillRacks).To(Equal(map[string]bool{tc.ns + "-rack-a": true}))
		Expect(decodeRacks).To(Equal(prefillRacks))
		Expect(prefillCliques).To(HaveLen(1), "prefill in one NVLink domain, as it prefers")
		Expect(decodeCliques).To(HaveLen(1), "decode in one NVLink domain, as it prefers")

		// rack-b has no domain of two nodes: a pair that prefers one is spread over
		// two — a preference, not a requirement.
		Expect(k8sClient.Create(suiteCtx, testutil.KAIPodGroup(tc.ns, "spill", 0, v1alpha1.LabelRack,
			testutil.KAISubGroup{Name: "prefill", MinMember: 2, Preferred: v1alpha1.LabelGPUClique}))).To(Succeed())
		spill := members("spill", "prefill", 2, "4")
		Eventually(tc.boundOf(spill...)).WithTimeout(testutil.Timeout).Should(Equal(2), "spill should start whole")
		cliques, racks := tc.domainsOf(spill...)
		Expect(racks).To(Equal(map[string]bool{tc.ns + "-rack-b": true}))
		Expect(cliques).To(HaveLen(2))
	})

	It("keeps a sub-group's leaves together in one rack, its workers in one NVLink domain, within the PodGroup's zone", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		// rack-0: one NVLink domain of two 8-GPU nodes whose 8 CPUs the four workers
		// fill — the tightest domain for them, with no room left for their leader;
		// rack-1: one NVLink domain of three such nodes with CPUs to spare.
		zone := tc.ns + "-zone-0"
		tc.addLabelledNodes("r0", 2, map[string]string{v1alpha1.LabelTopologyZone: zone,
			v1alpha1.LabelRack: tc.ns + "-rack-0", v1alpha1.LabelGPUClique: tc.ns + "-r0-d0"}, "cpu", "8", "memory", "512Gi", "nvidia.com/gpu", "8")
		tc.addLabelledNodes("r1", 3, map[string]string{v1alpha1.LabelTopologyZone: zone,
			v1alpha1.LabelRack: tc.ns + "-rack-1", v1alpha1.LabelGPUClique: tc.ns + "-r1-d0"}, "cpu", "64", "memory", "512Gi", "nvidia.com/gpu", "8")
		// KAI's decode as a sub-group over two leaves: its leader (CPU only) and its
		// workers (each in one NVLink domain), both in one rack.
		Expect(k8sClient.Create(suiteCtx, testutil.KAIPodGroup(tc.ns, "serve", 0, v1alpha1.LabelTopologyZone,
			testutil.KAISubGroup{Name: "decode", Required: v1alpha1.LabelRack},
			testutil.KAISubGroup{Name: "decode-leader", Parent: "decode", MinMember: 1},
			testutil.KAISubGroup{Name: "decode-workers", Parent: "decode", MinMember: 4, Required: v1alpha1.LabelGPUClique}))).To(Succeed())
		workers := kaiPods(tc, "serve", "decode-workers", 4, "4")
		Expect(k8sClient.Create(suiteCtx, tc.pod("decode-leader-0").KAIGroup("serve", "decode-leader").Req("cpu", "16", "memory", "16Gi").Obj())).To(Succeed())
		all := append([]string{"decode-leader-0"}, workers...)
		Eventually(tc.boundOf(all...)).WithTimeout(testutil.Timeout).Should(Equal(5), "serve should start whole")
		cliques, _ := tc.domainsOf(workers...)
		Expect(cliques).To(HaveLen(1), "the workers in one NVLink domain")
		_, racks := tc.domainsOf(all...)
		Expect(racks).To(Equal(map[string]bool{tc.ns + "-rack-1": true}), "the leader and its workers in one rack: rack-1, the one with room for both")

		// The leader is lost; a CPU node in rack-2 would hold its replacement most
		// tightly, but the set's running workers keep it in rack-1.
		tc.addLabelledNodes("r2", 1, map[string]string{v1alpha1.LabelTopologyZone: zone, v1alpha1.LabelRack: tc.ns + "-rack-2"}, "cpu", "20", "memory", "64Gi")
		Expect(k8sClient.Delete(suiteCtx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "decode-leader-0", Namespace: tc.ns}}, client.GracePeriodSeconds(0))).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: "decode-leader-0"}, &corev1.Pod{}))
		}).WithTimeout(testutil.Timeout).Should(BeTrue())
		Expect(k8sClient.Create(suiteCtx, tc.pod("decode-leader-1").KAIGroup("serve", "decode-leader").Req("cpu", "16", "memory", "16Gi").Obj())).To(Succeed())
		Eventually(tc.nodeOf("decode-leader-1")).WithTimeout(testutil.Timeout).ShouldNot(BeEmpty())
		_, racks = tc.domainsOf("decode-leader-1")
		Expect(racks).To(Equal(map[string]bool{tc.ns + "-rack-1": true}), "the replacement leader beside its workers")
	})

	It("says why a KAI PodGroup cannot be read or placed, naming the field, and starts its pods once it is mended", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 10))
		tc.addPrefillDecodeFleet()
		// KAI's CRD lets sub-groups name each other as parents (its webhook, not
		// installed here, would refuse it): KubeNexus says so on the pods.
		loop := testutil.KAIPodGroup(tc.ns, "loop", 0, "",
			testutil.KAISubGroup{Name: "a", Parent: "b", MinMember: 1}, testutil.KAISubGroup{Name: "b", Parent: "a", MinMember: 1})
		Expect(k8sClient.Create(suiteCtx, loop)).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, tc.pod("a-0").KAIGroup("loop", "a").Req("cpu", "1").Obj())).To(Succeed())
		Eventually(tc.scheduledMessage("a-0")).WithTimeout(testutil.Timeout).Should(ContainSubstring(
			fmt.Sprintf(`PodGroup cannot be read as a gang %s/loop: PodGroup %s/loop (scheduling.run.ai/v2alpha2): spec.subGroups: sub-group "a" is its own ancestor`, tc.ns, tc.ns)))

		// A leaf in two sets below the PodGroup's own level (a rack for inference, a
		// ToR for decode within it) nests deeper than KubeNexus plans: refused naming
		// both sub-groups, not placed looser.
		Expect(k8sClient.Create(suiteCtx, testutil.KAIPodGroup(tc.ns, "split", 0, "",
			testutil.KAISubGroup{Name: "inference", Required: v1alpha1.LabelRack},
			testutil.KAISubGroup{Name: "decode", Parent: "inference", Required: v1alpha1.LabelToR},
			testutil.KAISubGroup{Name: "leaders", Parent: "decode", MinMember: 1},
			testutil.KAISubGroup{Name: "workers", Parent: "decode", MinMember: 1}))).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, tc.pod("leaders-0").KAIGroup("split", "leaders").Req("cpu", "1").Obj())).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, tc.pod("workers-0").KAIGroup("split", "workers").Req("cpu", "1").Obj())).To(Succeed())
		Eventually(tc.scheduledMessage("leaders-0")).WithTimeout(testutil.Timeout).Should(ContainSubstring(
			"PodGroup split: leaf sub-group leaders is in sub-group inference (topologyConstraint.requiredTopologyLevel network.kubenexus.io/rack) and in sub-group decode (topologyConstraint.requiredTopologyLevel network.kubenexus.io/tor), both below the PodGroup's level"))
		Consistently(tc.boundOf("a-0", "leaders-0", "workers-0")).WithTimeout(2 * time.Second).Should(Equal(0))

		// Mended: the loop's sub-groups are leaves, and one set holds the leaves.
		Expect(k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(loop), loop)).To(Succeed())
		loop.Object["spec"] = testutil.KAIPodGroup(tc.ns, "loop", 0, "", testutil.KAISubGroup{Name: "a", MinMember: 1}).Object["spec"]
		Expect(k8sClient.Update(suiteCtx, loop)).To(Succeed())
		split := v1alpha1.NewKAIPodGroup()
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: "split"}, split)).To(Succeed())
		split.Object["spec"] = testutil.KAIPodGroup(tc.ns, "split", 0, "",
			testutil.KAISubGroup{Name: "decode", Required: v1alpha1.LabelRack},
			testutil.KAISubGroup{Name: "leaders", Parent: "decode", MinMember: 1},
			testutil.KAISubGroup{Name: "workers", Parent: "decode", MinMember: 1}).Object["spec"]
		Expect(k8sClient.Update(suiteCtx, split)).To(Succeed())
		Eventually(tc.boundOf("a-0", "leaders-0", "workers-0")).WithTimeout(testutil.Timeout).Should(Equal(3))
		_, racks := tc.domainsOf("leaders-0", "workers-0")
		Expect(racks).To(HaveLen(1), "the set's members in one rack")
	})
})

// kaiSchedulingConditions returns the status.schedulingConditions of the KAI PodGroup
// name.
func kaiSchedulingConditions(tc *testCluster, name string) func() []map[string]any {
	return func() []map[string]any {
		u := v1alpha1.NewKAIPodGroup()
		if err := k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: name}, u); err != nil {
			return nil
		}
		entries, _, _ := unstructured.NestedSlice(u.Object, "status", "schedulingConditions")
		var out []map[string]any
		for _, e := range entries {
			if m, ok := e.(map[string]any); ok {
				out = append(out, m)
			}
		}
		return out
	}
}
