package kueue_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/cmd/kubectl-kubenexus/explain"
	"github.com/kube-nexus/kubenexus/controllers/admissioncheck"
	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/testenv"
)

var _ = Describe("The placement-feasibility AdmissionCheck", func() {
	It("holds a Workload whose pods cannot all be placed now, says why, and passes it once they can", func() {
		checksPlacement(k8sClient, ptr.To[int32](v1alpha1.DefaultKueueRetryAfterSeconds))
	})
})

var _ = Describe("The placement-feasibility AdmissionCheck on a Kueue that serves only v1beta1 (Kueue 0.14)", Ordered, func() {
	var legacyClient client.Client
	BeforeAll(func() { legacyClient = startLegacy() })
	It("decides as on v1beta2, reading and writing v1beta1 objects", func() {
		// v1beta1 has no requeueAfterSeconds: Kueue 0.14 uses its own backoff.
		checksPlacement(legacyClient, nil)
	})
})

// checksPlacement runs the check's story with k8sClient, which speaks v1beta2 to
// the test (kueuecompat's client where the API server serves only v1beta1);
// requeueAfter is the delay a Retry asks Kueue for (nil where the API has no field).
func checksPlacement(k8sClient client.Client, requeueAfter *int32) {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "kueue-", Labels: map[string]string{v1alpha1.LabelTenantTier: "gold"}}}
	Expect(k8sClient.Create(suiteCtx, ns)).To(Succeed())
	ac := &kueue.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{Name: "placement-" + ns.Name}, Spec: kueue.AdmissionCheckSpec{ControllerName: admissioncheck.ControllerName}}
	Expect(k8sClient.Create(suiteCtx, ac)).To(Succeed())
	// Kueue activates a ClusterQueue only once its checks are Active.
	Eventually(func() bool {
		Expect(k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(ac), ac)).To(Succeed())
		return apimeta.IsStatusConditionTrue(ac.Status.Conditions, kueue.AdmissionCheckActive)
	}).WithTimeout(testutil.Timeout).Should(BeTrue())

	// Eight 8-GPU nodes in two racks, each with 4 GPUs held: 32 free, in halves.
	for i := range 8 {
		node := testutil.MakeNode(fmt.Sprintf("%s-gpu-%d", ns.Name, i)).Capacity("cpu", "64", "memory", "512Gi", "nvidia.com/gpu", "8").
			Label(v1alpha1.LabelRack, fmt.Sprintf("%s-rack-%d", ns.Name, i/4)).Obj()
		Expect(k8sClient.Create(suiteCtx, node)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, node))).To(Succeed()) })
		node.Spec.Taints = nil // the not-ready taint admission adds; no node lifecycle controller runs here
		Expect(k8sClient.Update(suiteCtx, node)).To(Succeed())
		filler := testutil.MakePod(fmt.Sprintf("filler-%d", i), ns.Name).Req("cpu", "1", "nvidia.com/gpu", "4").Limit("nvidia.com/gpu", "4").Obj()
		filler.Spec.NodeName = node.Name
		Expect(k8sClient.Create(suiteCtx, filler)).To(Succeed())
	}

	big := tc{ns: ns.Name, check: ac.Name, k8sClient: k8sClient}
	big.workload("big", 4, "", "cq-a")
	Eventually(big.state("big")).WithTimeout(testutil.Timeout).Should(Equal(checkState{kueue.CheckStateRetry,
		"4 × 8 nvidia.com/gpu: the nodes they may use hold 0 of the 4 pods now; 32 nvidia.com/gpu free on those nodes, but fragmented"}))
	Expect(big.requeueAfter("big")).To(Equal(requeueAfter), "the Retry's requeueAfterSeconds")
	// kubectl events on the Workload says the same.
	Eventually(func() ([]string, error) {
		return testenv.EventNotes(suiteCtx, k8sClient, ns.Name, "big", v1alpha1.EventReasonPlacementRetry)
	}).WithTimeout(testutil.Timeout).Should(ConsistOf("Warning: 4 × 8 nvidia.com/gpu: the nodes they may use hold 0 of the 4 pods now; 32 nvidia.com/gpu free on those nodes, but fragmented"))

	// kubectl kubenexus explain says it line by line, without repeating the check's
	// message: Kueue holds it at the check, and capacity is why.
	lines := func(name string) func() (map[string]explain.Line, error) {
		return func() (map[string]explain.Line, error) {
			r, err := (&explain.Explainer{Client: k8sClient}).Explain(suiteCtx, ns.Name, "workload", name)
			if err != nil {
				return nil, err
			}
			out := map[string]explain.Line{}
			for _, l := range r.Sections[0].Lines {
				out[l.Layer] = l
			}
			return out, nil
		}
	}
	line := func(layer, verdict, text string) types.GomegaMatcher {
		return HaveKeyWithValue(layer, And(HaveField("Verdict", verdict), HaveField("Text", text)))
	}
	Eventually(lines("big")).WithTimeout(testutil.Timeout).Should(And(
		line(explain.LayerQueue, explain.Blocked, "Workload big has quota in ClusterQueue cq-a; admission check "+ac.Name+": Retry (the topology and capacity lines say why)"),
		line(explain.LayerTier, explain.OK, "tenant tier gold: 8 nodes of 8 open to the pods"),
		line(explain.LayerCapacity, explain.Blocked, "32 nvidia.com/gpu free on the nodes open to them, 32 needed (4 × 8 nvidia.com/gpu): enough in total, but in pieces that hold 0 of the 4 pods"),
	))

	// Rack 0's GPUs free up. Kueue requeues a Workload whose check said Retry and,
	// once it reserves quota again, the check is Pending anew.
	for i := range 4 {
		Expect(k8sClient.Delete(suiteCtx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("filler-%d", i), Namespace: ns.Name}}, client.GracePeriodSeconds(0))).To(Succeed())
	}
	big.setPending("big")
	Eventually(big.state("big")).WithTimeout(testutil.Timeout).Should(Equal(checkState{kueue.CheckStateReady,
		"4 × 8 nvidia.com/gpu fit on the cluster's free capacity now"}))

	// Five members that must share a rack: rack 0 holds four.
	big.workload("rack", 5, v1alpha1.LabelRack, "cq-a")
	Eventually(big.state("rack")).WithTimeout(testutil.Timeout).Should(Equal(checkState{kueue.CheckStateRetry,
		"needs 5 members (5 × 8 nvidia.com/gpu) in one rack; the largest rack fits 4; 48 nvidia.com/gpu free on those nodes, but fragmented"}))
	Expect(lines("rack")()).To(And(
		line(explain.LayerTopology, explain.Blocked, "one rack must hold all 5: the largest holds 4 ("+ns.Name+"-rack-0)"),
		line(explain.LayerCapacity, explain.OK, "48 nvidia.com/gpu free on the nodes open to them, 40 needed (5 × 8 nvidia.com/gpu): enough in total, not in one rack"),
	))
	// The first one passed the check: nothing of it waits on KubeNexus.
	Expect(lines("big")()).To(HaveKeyWithValue(explain.LayerQueue, HaveField("Verdict", explain.Waiting)))

	// A HardwareTier that keeps rack 0 for another ClusterQueue.
	tier := testutil.MakeHardwareTier("rack0-"+ns.Name, 50).Selector(metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.LabelRack: ns.Name + "-rack-0"}}).
		Tenants(v1alpha1.TenantTierGold).ClusterQueues("cq-b").Obj()
	Expect(k8sClient.Create(suiteCtx, tier)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, tier))).To(Succeed()) })
	big.workload("four-a", 4, "", "cq-a")
	Eventually(big.state("four-a")).WithTimeout(testutil.Timeout).Should(Equal(checkState{kueue.CheckStateRetry,
		"4 × 8 nvidia.com/gpu: the nodes they may use hold 0 of the 4 pods now; 16 nvidia.com/gpu free on those nodes, 32 needed"}))
	Expect(lines("four-a")()).To(
		line(explain.LayerTier, explain.OK, "tenant tier gold: 4 nodes open to the pods; 4 nodes more belong to HardwareTier rack0-"+ns.Name+", which does not admit it"))
	big.workload("four-b", 4, "", "cq-b")
	Eventually(big.state("four-b")).WithTimeout(testutil.Timeout).Should(Equal(checkState{kueue.CheckStateReady,
		"4 × 8 nvidia.com/gpu fit on the cluster's free capacity now"}))
}

// tc creates Workloads in one namespace, as Kueue leaves them once it has reserved
// quota: the check Pending.
type tc struct {
	ns, check string
	k8sClient client.Client
}

type checkState struct {
	State   kueue.CheckState
	Message string
}

func (t tc) workload(name string, count int32, requiredTopology, clusterQueue string) {
	GinkgoHelper()
	t.reservedWorkload(name, count, requiredTopology, clusterQueue, nil, nil)
}

// reservedWorkload creates a Workload of count 8-GPU pods (runtime bound seconds,
// nil: none; the pods labelled labels) as Kueue leaves it once clusterQueue has
// reserved its quota: the check t.check Pending.
func (t tc) reservedWorkload(name string, count int32, requiredTopology, clusterQueue string, seconds *int64, labels map[string]string) {
	GinkgoHelper()
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), "nvidia.com/gpu": resource.MustParse("8")}
	ps := kueue.PodSet{Name: "main", Count: count, Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
		ActiveDeadlineSeconds: seconds,
		Containers:            []corev1.Container{{Name: "trainer", Image: "trainer", Resources: corev1.ResourceRequirements{Requests: rl, Limits: rl}}},
	}}}
	if requiredTopology != "" {
		ps.TopologyRequest = &kueue.PodSetTopologyRequest{Required: ptr.To(requiredTopology)}
	}
	wl := &kueue.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: t.ns},
		Spec:       kueue.WorkloadSpec{QueueName: "queue", PodSets: []kueue.PodSet{ps}},
	}
	Expect(t.k8sClient.Create(suiteCtx, wl)).To(Succeed())
	now := metav1.Now()
	wl.Status.Conditions = []metav1.Condition{{Type: kueue.WorkloadQuotaReserved, Status: metav1.ConditionTrue, Reason: "QuotaReserved", Message: "Quota reserved in ClusterQueue " + clusterQueue, LastTransitionTime: now}}
	wl.Status.Admission = &kueue.Admission{
		ClusterQueue: kueue.ClusterQueueReference(clusterQueue),
		PodSetAssignments: []kueue.PodSetAssignment{{
			Name: "main", Count: ptr.To(count),
			Flavors:       map[corev1.ResourceName]kueue.ResourceFlavorReference{"nvidia.com/gpu": "gpu", corev1.ResourceCPU: "gpu"},
			ResourceUsage: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(int64(8*count), resource.DecimalSI)},
		}},
	}
	wl.Status.AdmissionChecks = []kueue.AdmissionCheckState{{Name: kueue.AdmissionCheckReference(t.check), State: kueue.CheckStatePending, LastTransitionTime: now}}
	Expect(t.k8sClient.Status().Update(suiteCtx, wl)).To(Succeed())
}

func (t tc) setPending(name string) {
	GinkgoHelper()
	wl := &kueue.Workload{}
	Expect(t.k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: t.ns, Name: name}, wl)).To(Succeed())
	for i := range wl.Status.AdmissionChecks {
		wl.Status.AdmissionChecks[i].State, wl.Status.AdmissionChecks[i].Message = kueue.CheckStatePending, ""
	}
	Expect(t.k8sClient.Status().Update(suiteCtx, wl)).To(Succeed())
}

// requeueAfter is the delay the check's state asks Kueue for.
func (t tc) requeueAfter(name string) *int32 {
	GinkgoHelper()
	wl := &kueue.Workload{}
	Expect(t.k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: t.ns, Name: name}, wl)).To(Succeed())
	for _, st := range wl.Status.AdmissionChecks {
		if string(st.Name) == t.check {
			return st.RequeueAfterSeconds
		}
	}
	return nil
}

func (t tc) state(name string) func() checkState {
	return func() checkState {
		wl := &kueue.Workload{}
		Expect(t.k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: t.ns, Name: name}, wl)).To(Succeed())
		for _, st := range wl.Status.AdmissionChecks {
			if string(st.Name) == t.check {
				return checkState{st.State, st.Message}
			}
		}
		return checkState{}
	}
}
