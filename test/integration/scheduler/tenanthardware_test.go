package scheduler_test

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/schedulertest"
)

var _ = Describe("TenantHardware", func() {
	It("keeps tenants on the hardware tiers that admit them, lends to preemptible pods, and re-queues when a tier opens", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 10))
		// The test's namespace is gold; bronze pods run in a second namespace. Both are
		// labelled before any pod exists, so the scheduler's namespace informer has
		// their tiers when it classifies the pods.
		tc.setTier(v1alpha1.TenantTierGold)
		bronze := tc.tenantNamespace(v1alpha1.TenantTierBronze)
		// Two premium nodes for gold (lent to preemptible pods), two small economy
		// nodes for everyone.
		hw := func(tier string) string { return tier + "-" + tc.ns }
		tc.addLabelledNodes("premium", 2, map[string]string{"hw": hw("premium")}, "cpu", "8", "nvidia.com/gpu", "8")
		tc.addLabelledNodes("economy", 2, map[string]string{"hw": hw("economy")}, "cpu", "1")
		premium := testutil.MakeHardwareTier(hw("premium"), 100).Selector(metav1.LabelSelector{MatchLabels: map[string]string{"hw": hw("premium")}}).
			Tenants(v1alpha1.TenantTierGold).Borrowing(v1alpha1.BorrowingPreemptible).Obj()
		economy := testutil.MakeHardwareTier(hw("economy"), 10).Selector(metav1.LabelSelector{MatchLabels: map[string]string{"hw": hw("economy")}}).Obj()
		createHardwareTiers(premium, economy)
		Expect(k8sClient.Create(suiteCtx, tc.pod("gold-0").Req("cpu", "500m").Obj())).To(Succeed())
		Eventually(tc.nodeOf("gold-0")).WithTimeout(testutil.Timeout).Should(HavePrefix(tc.ns + "-premium-"))

		// Bronze fills the economy nodes, then waits: premium admits only gold.
		for i := range 3 {
			Expect(k8sClient.Create(suiteCtx, bronze.pod(fmt.Sprintf("bronze-%d", i)).Req("cpu", "1").Obj())).To(Succeed())
		}
		Eventually(bronze.boundCount("bronze-")).WithTimeout(testutil.Timeout).Should(Equal(2))
		Expect(bronze.nodeOf("bronze-0")()).To(HavePrefix(tc.ns + "-economy-"))
		Expect(bronze.nodeOf("bronze-1")()).To(HavePrefix(tc.ns + "-economy-"))
		Eventually(bronze.scheduledMessage("bronze-2")).WithTimeout(testutil.Timeout).Should(ContainSubstring(
			fmt.Sprintf("2 node is in HardwareTier %s, which admits tenant tiers [gold]; tier bronze may borrow it only with workload.kubenexus.io/preemptible=true", hw("premium"))))
		Consistently(bronze.nodeOf("bronze-2")).WithTimeout(2 * time.Second).Should(BeEmpty())

		// A preemptible bronze pod may borrow premium.
		Expect(k8sClient.Create(suiteCtx, bronze.pod("bronze-spot").Req("cpu", "1").Label(v1alpha1.LabelPreemptible, "true").Obj())).To(Succeed())
		Eventually(bronze.nodeOf("bronze-spot")).WithTimeout(testutil.Timeout).Should(HavePrefix(tc.ns + "-premium-"))

		// A DaemonSet's pod, which must run where its controller put it, is exempt —
		// but only when the DaemonSet it names exists with that UID, and only while it
		// asks for no device. A claimed DaemonSet owner is not enough.
		refusal := fmt.Sprintf("2 node is in HardwareTier %s, which admits tenant tiers [gold]", hw("premium"))
		Expect(k8sClient.Create(suiteCtx, bronze.pod("fake-agent").Req("cpu", "100m").Owner("apps/v1", "DaemonSet", "node-agent").Obj())).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, bronze.pod("foreign-agent").Req("cpu", "100m").Owner("evil.example.com/v1", "DaemonSet", "node-agent").Obj())).To(Succeed())
		ds := &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: "node-agent", Namespace: bronze.ns},
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "node-agent"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "node-agent"}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "agent"}}},
				},
			},
		}
		Expect(k8sClient.Create(suiteCtx, ds)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, ds))).To(Succeed()) })
		Expect(k8sClient.Create(suiteCtx, bronze.pod("real-agent").Req("cpu", "100m").OwnerUID("apps/v1", "DaemonSet", "node-agent", ds.UID).Obj())).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, bronze.pod("gpu-agent").Req("cpu", "100m", "nvidia.com/gpu", "1").Limit("nvidia.com/gpu", "1").
			OwnerUID("apps/v1", "DaemonSet", "node-agent", ds.UID).Obj())).To(Succeed())
		Eventually(bronze.nodeOf("real-agent")).WithTimeout(testutil.Timeout).Should(HavePrefix(tc.ns + "-premium-"))
		for _, p := range []string{"fake-agent", "foreign-agent", "gpu-agent"} {
			Eventually(bronze.scheduledMessage(p)).WithTimeout(testutil.Timeout).Should(ContainSubstring(refusal), p)
			Expect(bronze.nodeOf(p)()).To(BeEmpty(), p)
		}

		// Opening premium to bronze re-queues the waiting pod (a HardwareTier event).
		Expect(k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(premium), premium)).To(Succeed())
		premium.Spec.AllowedTenantTiers = append(premium.Spec.AllowedTenantTiers, v1alpha1.TenantTierBronze)
		Expect(k8sClient.Update(suiteCtx, premium)).To(Succeed())
		Eventually(bronze.nodeOf("bronze-2")).WithTimeout(testutil.Timeout).Should(HavePrefix(tc.ns + "-premium-"))
	})

	It("holds a HardwareTier that exists when the scheduler starts from the first pods it places", func() {
		// The scheduler's object cache lists HardwareTiers while its own informers
		// sync; pods already pending at start must not be placed before the tiers are
		// seen. Premium is the emptiest node (what scoring prefers) and admits gold only.
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 10))
		bronze := tc.tenantNamespace(v1alpha1.TenantTierBronze)
		hw := func(tier string) string { return tier + "-" + tc.ns }
		tc.addLabelledNodes("premium", 1, map[string]string{"hw": hw("premium")}, "cpu", "16")
		tc.addLabelledNodes("economy", 1, map[string]string{"hw": hw("economy")}, "cpu", "1")
		tc.stopScheduler()
		createHardwareTiers(testutil.MakeHardwareTier(hw("premium"), 100).Selector(metav1.LabelSelector{MatchLabels: map[string]string{"hw": hw("premium")}}).
			Tenants(v1alpha1.TenantTierGold).Obj())
		for i := range 3 {
			Expect(k8sClient.Create(suiteCtx, bronze.pod(fmt.Sprintf("bronze-%d", i)).Req("cpu", "500m").Obj())).To(Succeed())
		}
		tc.startScheduler(schedulertest.CoschedulingProfile(1, 10))
		Eventually(bronze.boundCount("bronze-")).WithTimeout(testutil.Timeout).Should(Equal(2))
		Consistently(bronze.boundCount("bronze-")).WithTimeout(2 * time.Second).Should(Equal(2))
		for i := range 3 {
			Expect(bronze.nodeOf(fmt.Sprintf("bronze-%d", i))()).NotTo(HavePrefix(tc.ns+"-premium-"), "bronze-%d on premium", i)
		}
	})

	It("keeps a tier limited to Kueue ClusterQueues for the pods admitted through them", func() {
		tc, limited := goldClusterWithCQLimitedTier()
		tc.kueueAdmitted("via-a", "cq-a")
		Eventually(tc.scheduledMessage("via-a")).WithTimeout(testutil.Timeout).Should(ContainSubstring(
			fmt.Sprintf("node is in HardwareTier %s, which admits only workloads of Kueue ClusterQueues [cq-b]; the pod was admitted through ClusterQueue cq-a", limited.Name)))
		Expect(k8sClient.Create(suiteCtx, tc.pod("plain").Req("cpu", "1").Obj())).To(Succeed())
		Eventually(tc.scheduledMessage("plain")).WithTimeout(testutil.Timeout).Should(ContainSubstring("the pod was not admitted through Kueue"))
		tc.kueueAdmitted("via-b", "cq-b")
		Eventually(tc.nodeOf("via-b")).WithTimeout(testutil.Timeout).Should(Equal(tc.ns + "-limited-0"))
		Expect(tc.nodeOf("via-a")()).To(BeEmpty())
	})

	It("retries a pod refused before its Kueue Workload's admission reached the scheduler", func() {
		tc, _ := goldClusterWithCQLimitedTier()
		late := tc.pod("late").Req("cpu", "1").Obj()
		Expect(k8sClient.Create(suiteCtx, late)).To(Succeed())
		Eventually(tc.scheduledMessage("late")).WithTimeout(testutil.Timeout).Should(ContainSubstring("the pod was not admitted through Kueue"))
		// Only the Workload's admission can let it in: no node or tier changes.
		tc.admitWorkload(late, "cq-b")
		Eventually(tc.nodeOf("late")).WithTimeout(testutil.Timeout).Should(Equal(tc.ns + "-limited-0"))
	})

	// goldQueueCluster is a bronze namespace whose tenant tier the scheduler takes from
	// Kueue ClusterQueues, one node of a gold-only HardwareTier, and a ClusterQueue
	// labelled gold (admins label ClusterQueues; tenants cannot write them).
	goldQueueCluster := func() (*testCluster, *v1alpha1.HardwareTier, *kueue.ClusterQueue) {
		GinkgoHelper()
		profile := schedulertest.CoschedulingProfile(1, 10) + "  - name: ProfileClassifier\n    args:\n      tenantTierFrom: ClusterQueue\n"
		tc := newTestCluster(profile)
		tc.setTier(v1alpha1.TenantTierBronze)
		tc.addLabelledNodes("gold", 1, map[string]string{"hw": "gold-" + tc.ns}, "cpu", "4")
		gold := testutil.MakeHardwareTier("gold-"+tc.ns, 90).Selector(metav1.LabelSelector{MatchLabels: map[string]string{"hw": "gold-" + tc.ns}}).
			Tenants(v1alpha1.TenantTierGold).Obj()
		createHardwareTiers(gold)
		cq := &kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: "gold-" + tc.ns, Labels: map[string]string{v1alpha1.LabelTenantTier: "gold"}}}
		Expect(k8sClient.Create(suiteCtx, cq)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, cq))).To(Succeed()) })
		return tc, gold, cq
	}

	It("takes the tenant tier of a pod Kueue admitted from its ClusterQueue's label when configured", func() {
		tc, gold, cq := goldQueueCluster()

		// A pod of the bronze namespace that claims gold itself stays bronze.
		Expect(k8sClient.Create(suiteCtx, tc.pod("claims-gold").Req("cpu", "1").Label(v1alpha1.LabelTenantTier, "gold").Obj())).To(Succeed())
		Eventually(tc.scheduledMessage("claims-gold")).WithTimeout(testutil.Timeout).Should(ContainSubstring(
			fmt.Sprintf("node is in HardwareTier %s, which admits tenant tiers [gold] and does not lend to tier bronze", gold.Name)))
		// Admitted through the gold ClusterQueue: gold.
		tc.kueueAdmitted("via-gold", cq.Name)
		Eventually(tc.nodeOf("via-gold")).WithTimeout(testutil.Timeout).Should(Equal(tc.ns + "-gold-0"))
	})

	It("gives a ClusterQueue's tier only to the pods an admitted Workload's owner really has, as many as it was admitted with", func() {
		tc, gold, cq := goldQueueCluster()

		// A Job Kueue admitted through the gold queue for one pod.
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: tc.ns}, Spec: batchv1.JobSpec{Suspend: ptr.To(true),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "x"}}}}}}
		Expect(k8sClient.Create(suiteCtx, job)).To(Succeed())
		owner := func(kind, name string) metav1.OwnerReference {
			return metav1.OwnerReference{APIVersion: "batch/v1", Kind: kind, Name: name, UID: job.UID, Controller: ptr.To(true)}
		}
		wl := &kueue.Workload{
			ObjectMeta: metav1.ObjectMeta{Name: "job-train", Namespace: tc.ns, OwnerReferences: []metav1.OwnerReference{owner("Job", "train")}},
			Spec:       kueue.WorkloadSpec{QueueName: "queue", PodSets: []kueue.PodSet{{Name: "main", Count: 1, Template: job.Spec.Template}}},
		}
		Expect(k8sClient.Create(suiteCtx, wl)).To(Succeed())
		wl.Status.Admission = &kueue.Admission{ClusterQueue: kueue.ClusterQueueReference(cq.Name), PodSetAssignments: []kueue.PodSetAssignment{{Name: "main", Count: ptr.To[int32](1)}}}
		wl.Status.Conditions = []metav1.Condition{{Type: kueue.WorkloadQuotaReserved, Status: metav1.ConditionTrue, Reason: "QuotaReserved", Message: "reserved", LastTransitionTime: metav1.Now()}}
		Expect(k8sClient.Status().Update(suiteCtx, wl)).To(Succeed())

		claimant := func(name string, ref metav1.OwnerReference) {
			GinkgoHelper()
			pod := tc.pod(name).Req("cpu", "1").Obj()
			pod.OwnerReferences = []metav1.OwnerReference{ref}
			Expect(k8sClient.Create(suiteCtx, pod)).To(Succeed())
		}
		refused := fmt.Sprintf("node is in HardwareTier %s, which admits tenant tiers [gold] and does not lend to tier bronze", gold.Name)
		// The Job's one admitted pod is gold.
		claimant("train-0", owner("Job", "train"))
		Eventually(tc.nodeOf("train-0")).WithTimeout(testutil.Timeout).Should(Equal(tc.ns + "-gold-0"))
		// A second pod naming the Job is beyond what Kueue admitted: bronze.
		claimant("train-extra", owner("Job", "train"))
		Eventually(tc.scheduledMessage("train-extra")).WithTimeout(testutil.Timeout).Should(ContainSubstring(refused))
		// A pod naming the Job's UID under another name is not the Job's: bronze.
		claimant("forged", owner("Job", "someone-else"))
		Eventually(tc.scheduledMessage("forged")).WithTimeout(testutil.Timeout).Should(ContainSubstring(refused))
		Consistently(func() string { return tc.nodeOf("train-extra")() + tc.nodeOf("forged")() }).WithTimeout(2 * time.Second).Should(BeEmpty())
	})

	It("selects a tier's nodes by the DRA devices their ResourceSlices publish, as its label twin does, and reports them in its status", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 10))
		tc.setTier(v1alpha1.TenantTierGold)
		bronze := tc.tenantNamespace(v1alpha1.TenantTierBronze)
		// Same nodes, no tier labels: one publishes 80Gi devices, the other 48Gi.
		tc.addNodes("big", 1, "cpu", "4")
		tc.addNodes("small", 1, "cpu", "4")
		driver := "gpu-" + tc.ns + ".example.com"
		tc.resourceSlice(tc.ns+"-big-0", driver, "80Gi", 2)
		tc.resourceSlice(tc.ns+"-small-0", driver, "48Gi", 2)
		bigMemory := &v1alpha1.HardwareTier{
			ObjectMeta: metav1.ObjectMeta{Name: "big-memory-" + tc.ns},
			Spec: v1alpha1.HardwareTierSpec{
				Rank:               90,
				AllowedTenantTiers: []v1alpha1.TenantTier{v1alpha1.TenantTierGold},
				DeviceSelectors: []v1alpha1.DeviceSelector{{
					Driver:   driver,
					Capacity: []v1alpha1.DeviceCapacityRequirement{{Name: "memory", Min: resource.MustParse("80Gi")}},
				}},
			},
		}
		Expect(k8sClient.Create(suiteCtx, bigMemory)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, bigMemory))).To(Succeed()) })

		// Bronze fills the small node and is refused the big one, as with a label tier.
		for i := range 5 {
			Expect(k8sClient.Create(suiteCtx, bronze.pod(fmt.Sprintf("bronze-%d", i)).Req("cpu", "1").Obj())).To(Succeed())
		}
		Eventually(bronze.boundCount("bronze-")).WithTimeout(testutil.Timeout).Should(Equal(4))
		for i := range 4 {
			Expect(bronze.nodeOf(fmt.Sprintf("bronze-%d", i))()).To(Equal(tc.ns + "-small-0"))
		}
		Eventually(bronze.scheduledMessage("bronze-4")).WithTimeout(testutil.Timeout).Should(ContainSubstring(
			fmt.Sprintf("node is in HardwareTier %s, which admits tenant tiers [gold] and does not lend to tier bronze", bigMemory.Name)))
		// Gold prefers it (the most premium tier it may use).
		Expect(k8sClient.Create(suiteCtx, tc.pod("gold-0").Req("cpu", "1").Obj())).To(Succeed())
		Eventually(tc.nodeOf("gold-0")).WithTimeout(testutil.Timeout).Should(Equal(tc.ns + "-big-0"))
		// The manager counts the tier's nodes by the same devices.
		Eventually(func() int32 {
			Expect(k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(bigMemory), bigMemory)).To(Succeed())
			return bigMemory.Status.Nodes
		}).WithTimeout(testutil.Timeout).Should(Equal(int32(1)))

		// The small node's devices are upgraded: it joins the tier, and the tier's
		// status follows.
		slice := &resourceapi.ResourceSlice{}
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: tc.ns + "-small-0-gpus"}, slice)).To(Succeed())
		for i := range slice.Spec.Devices {
			slice.Spec.Devices[i].Capacity["memory"] = resourceapi.DeviceCapacity{Value: resource.MustParse("96Gi")}
		}
		Expect(k8sClient.Update(suiteCtx, slice)).To(Succeed())
		Eventually(func() int32 {
			Expect(k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(bigMemory), bigMemory)).To(Succeed())
			return bigMemory.Status.Nodes
		}).WithTimeout(testutil.Timeout).Should(Equal(int32(2)))
		// (A pod without requests: the small node's CPUs are full.)
		Expect(k8sClient.Create(suiteCtx, bronze.pod("bronze-late").Obj())).To(Succeed())
		Eventually(bronze.scheduledMessage("bronze-late")).WithTimeout(testutil.Timeout).Should(ContainSubstring(
			fmt.Sprintf("2 node is in HardwareTier %s", bigMemory.Name)))
		Expect(bronze.nodeOf("bronze-late")()).To(BeEmpty())
	})
})

// tenantNamespace creates a second namespace of the given tenant tier whose pods use
// this test's nodes.
func (tc *testCluster) tenantNamespace(tier v1alpha1.TenantTier) *testCluster {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: string(tier) + "-", Labels: map[string]string{v1alpha1.LabelTenantTier: string(tier)}}}
	Expect(k8sClient.Create(suiteCtx, ns)).To(Succeed())
	other := &testCluster{ns: ns.Name, nodeLabel: tc.nodeLabel}
	DeferCleanup(func() {
		Expect(k8sClient.DeleteAllOf(suiteCtx, &corev1.Pod{}, client.InNamespace(other.ns), client.GracePeriodSeconds(0))).To(Succeed())
	})
	return other
}

// kueueAdmitted creates a pod that Kueue admitted through clusterQueue: it waits
// behind a gate until its Workload (owned by the pod, as Kueue's pod integration
// makes it) records the ClusterQueue.
func (tc *testCluster) kueueAdmitted(name, clusterQueue string) {
	GinkgoHelper()
	pod := tc.pod(name).Req("cpu", "1").Gate("example.com/admission").Obj()
	Expect(k8sClient.Create(suiteCtx, pod)).To(Succeed())
	tc.admitWorkload(pod, clusterQueue)
	pod.Spec.SchedulingGates = nil
	Expect(k8sClient.Update(suiteCtx, pod)).To(Succeed())
}

// admitWorkload creates the Kueue Workload of pod, admitted through clusterQueue.
func (tc *testCluster) admitWorkload(pod *corev1.Pod, clusterQueue string) {
	GinkgoHelper()
	wl := &kueue.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-" + pod.Name, Namespace: tc.ns, OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}}},
		Spec:       kueue.WorkloadSpec{QueueName: "queue", PodSets: []kueue.PodSet{{Name: "main", Count: 1, Template: corev1.PodTemplateSpec{Spec: *pod.Spec.DeepCopy()}}}},
	}
	wl.Spec.PodSets[0].Template.Spec.SchedulingGates = nil
	Expect(k8sClient.Create(suiteCtx, wl)).To(Succeed())
	wl.Status.Admission = &kueue.Admission{ClusterQueue: kueue.ClusterQueueReference(clusterQueue), PodSetAssignments: []kueue.PodSetAssignment{{Name: "main", Count: ptr.To[int32](1)}}}
	wl.Status.Conditions = []metav1.Condition{{Type: kueue.WorkloadQuotaReserved, Status: metav1.ConditionTrue, Reason: "QuotaReserved", Message: "reserved", LastTransitionTime: metav1.Now()}}
	Expect(k8sClient.Status().Update(suiteCtx, wl)).To(Succeed())
}

// addLabelledNodes creates n nodes of this test with extra labels.
func (tc *testCluster) addLabelledNodes(prefix string, n int, labels map[string]string, capacity ...string) {
	GinkgoHelper()
	for i := range n {
		w := testutil.MakeNode(fmt.Sprintf("%s-%s-%d", tc.ns, prefix, i)).Capacity(capacity...).Label("kubenexus.io/test", tc.nodeLabel)
		for k, v := range labels {
			w = w.Label(k, v)
		}
		node := w.Obj()
		Expect(k8sClient.Create(suiteCtx, node)).To(Succeed())
		node.Spec.Taints = nil // no node lifecycle controller here to lift the not-ready taint
		Expect(k8sClient.Update(suiteCtx, node)).To(Succeed())
	}
}

// setTier labels the test's namespace with a tenant tier.
func (tc *testCluster) setTier(tier v1alpha1.TenantTier) {
	GinkgoHelper()
	ns := &corev1.Namespace{}
	Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: tc.ns}, ns)).To(Succeed())
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[v1alpha1.LabelTenantTier] = string(tier)
	Expect(k8sClient.Update(suiteCtx, ns)).To(Succeed())
}

// nodeOf returns the node a pod is bound to ("" while pending).
func (tc *testCluster) nodeOf(pod string) func() string {
	return func() string {
		p := &corev1.Pod{}
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: pod}, p)).To(Succeed())
		return p.Spec.NodeName
	}
}

// boundCount counts this test's bound pods whose names start with prefix.
func (tc *testCluster) boundCount(prefix string) func() int {
	return func() int {
		pods := &corev1.PodList{}
		Expect(k8sClient.List(suiteCtx, pods, client.InNamespace(tc.ns))).To(Succeed())
		n := 0
		for _, p := range pods.Items {
			if strings.HasPrefix(p.Name, prefix) && p.Spec.NodeName != "" {
				n++
			}
		}
		return n
	}
}

// goldClusterWithCQLimitedTier is a gold-tenant cluster with one 4-CPU node in a
// HardwareTier that admits only workloads of Kueue ClusterQueue cq-b.
func goldClusterWithCQLimitedTier() (*testCluster, *v1alpha1.HardwareTier) {
	tc := newTestCluster(schedulertest.CoschedulingProfile(1, 10))
	tc.setTier(v1alpha1.TenantTierGold)
	tc.addLabelledNodes("limited", 1, map[string]string{"hw": "limited-" + tc.ns}, "cpu", "4")
	limited := testutil.MakeHardwareTier("limited-"+tc.ns, 60).Selector(metav1.LabelSelector{MatchLabels: map[string]string{"hw": "limited-" + tc.ns}}).
		Tenants(v1alpha1.TenantTierGold).ClusterQueues("cq-b").Obj()
	Expect(k8sClient.Create(suiteCtx, limited)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, limited))).To(Succeed()) })
	return tc, limited
}

// createHardwareTiers creates cluster-scoped HardwareTiers and deletes them when the
// spec ends.
func createHardwareTiers(tiers ...*v1alpha1.HardwareTier) {
	GinkgoHelper()
	for _, t := range tiers {
		Expect(k8sClient.Create(suiteCtx, t)).To(Succeed())
		DeferCleanup(func(t *v1alpha1.HardwareTier) {
			Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, t))).To(Succeed())
		}, t)
	}
}
