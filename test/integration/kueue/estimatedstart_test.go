package kueue_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/cmd/kubectl-kubenexus/explain"
	"github.com/kube-nexus/kubenexus/controllers/estimatedstart"
	testutil "github.com/kube-nexus/kubenexus/test/util"
)

var _ = Describe("The estimated start of Kueue Workloads waiting for quota", func() {
	It("counts when their ClusterQueue's quota frees, what its cohort lends, and the Workloads queued ahead", func() {
		ns, cq, queue, ends := quotaFixture(nil)

		// "next" and then "after" wait for quota; each runs 20 minutes. Node 1 is
		// free now: the quota, not the nodes, holds them back.
		Expect(k8sClient.Create(suiteCtx, cpuWorkload(ns.Name, "next", ptr.To[int32](1200)))).To(Succeed())
		time.Sleep(1100 * time.Millisecond) // creation times are to the second
		Expect(k8sClient.Create(suiteCtx, cpuWorkload(ns.Name, "after", ptr.To[int32](1200)))).To(Succeed())
		// A Workload whose pods another scheduler places takes quota but has no estimate.
		other := cpuWorkload(ns.Name, "other", ptr.To[int32](1200))
		other.Spec.PodSets[0].Template.Spec.SchedulerName = "default-scheduler"
		time.Sleep(1100 * time.Millisecond)
		Expect(k8sClient.Create(suiteCtx, other)).To(Succeed())

		estimates := estimatesIn(ns.Name)
		at := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
		Eventually(estimates).WithTimeout(testutil.Timeout).Should(Equal(map[string]string{
			"running": "", "next": at(ends), "after": at(ends.Add(20 * time.Minute)), "other": "",
		}))

		// kubectl kubenexus explain gives the same start, and says when Kueue admits it.
		r, err := (&explain.Explainer{Client: k8sClient}).Explain(suiteCtx, ns.Name, "workload", "after")
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Sections[0].Lines).To(ContainElement(And(HaveField("Layer", explain.LayerStart), HaveField("Verdict", explain.Waiting), HaveField("Text", And(
			HavePrefix("earliest "+at(ends.Add(20*time.Minute))+" (in "),
			ContainSubstring("ClusterQueue "+cq.Name+" admits it at "+at(ends.Add(20*time.Minute))+" (in "),
			HaveSuffix("those admitted before it run to theirs"))))))

		// The queue joins a cohort with an idle queue of 8 CPUs: "next" borrows them
		// now, "after" takes the quota "running" frees.
		Expect(k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(cq), cq)).To(Succeed())
		cq.Spec.CohortName = kueue.CohortReference("co-" + ns.Name)
		Expect(k8sClient.Update(suiteCtx, cq)).To(Succeed())
		queue("lender-"+ns.Name, "co-"+ns.Name)
		before := time.Now().Add(-time.Minute)
		Eventually(func(g Gomega) {
			got, err := estimates()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got["after"]).To(Equal(at(ends)))
			next, err := time.Parse(time.RFC3339, got["next"])
			g.Expect(err).NotTo(HaveOccurred(), "next's estimate %q", got["next"])
			g.Expect(next).To(BeTemporally(">", before))
			g.Expect(next).To(BeTemporally("<", time.Now().Add(time.Minute)))
		}).WithTimeout(testutil.Timeout).Should(Succeed())
	})

	It("counts a preemption within the ClusterQueue: a Workload of higher priority evicts the one holding its quota", func() {
		ns, _, _, ends := quotaFixture(func(cq *kueue.ClusterQueue) {
			cq.Spec.Preemption = &kueue.ClusterQueuePreemption{WithinClusterQueue: kueue.PreemptionPolicyLowerPriority}
		})
		// "peer" (same priority as "running") waits for its quota; "urgent" preempts
		// "running", whose pod gives node 0 back at once, and starts now.
		Expect(k8sClient.Create(suiteCtx, cpuWorkload(ns.Name, "peer", ptr.To[int32](1200)))).To(Succeed())
		urgent := cpuWorkload(ns.Name, "urgent", ptr.To[int32](1200))
		urgent.Spec.Priority = ptr.To[int32](100)
		Expect(k8sClient.Create(suiteCtx, urgent)).To(Succeed())
		at := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
		before := time.Now().Add(-time.Minute)
		Eventually(func(g Gomega) {
			got, err := estimatesIn(ns.Name)()
			g.Expect(err).NotTo(HaveOccurred())
			urgentAt, err := time.Parse(time.RFC3339, got["urgent"])
			g.Expect(err).NotTo(HaveOccurred(), "urgent's estimate %q", got["urgent"])
			g.Expect(urgentAt).To(BeTemporally(">", before))
			g.Expect(urgentAt).To(BeTemporally("<", ends.Add(-time.Minute)), "urgent waits for running's end (%s) instead of preempting it", at(ends))
			// "peer" waits for "urgent" to end: 20 minutes after it starts.
			peerAt, err := time.Parse(time.RFC3339, got["peer"])
			g.Expect(err).NotTo(HaveOccurred(), "peer's estimate %q", got["peer"])
			g.Expect(peerAt.Sub(urgentAt)).To(BeNumerically("~", 20*time.Minute, time.Minute))
		}).WithTimeout(testutil.Timeout).Should(Succeed())
	})

	It("forecasts a running Workload that Kueue's preemption evicts to run again, before a Workload of lower priority", func() {
		ns, _, _, _ := quotaFixture(func(cq *kueue.ClusterQueue) {
			cq.Spec.Preemption = &kueue.ClusterQueuePreemption{WithinClusterQueue: kueue.PreemptionPolicyLowerPriority}
		})
		// "urgent" preempts "running" (priority 0, 10 minutes); "running" waits again
		// and, once "urgent" ends, is admitted before "meek" (priority -5), which
		// starts only when "running" has run its 10 minutes again.
		meek := cpuWorkload(ns.Name, "meek", ptr.To[int32](1200))
		meek.Spec.Priority = ptr.To[int32](-5)
		Expect(k8sClient.Create(suiteCtx, meek)).To(Succeed())
		urgent := cpuWorkload(ns.Name, "urgent", ptr.To[int32](1200))
		urgent.Spec.Priority = ptr.To[int32](100)
		Expect(k8sClient.Create(suiteCtx, urgent)).To(Succeed())
		Eventually(func(g Gomega) {
			got, err := estimatesIn(ns.Name)()
			g.Expect(err).NotTo(HaveOccurred())
			urgentAt, err := time.Parse(time.RFC3339, got["urgent"])
			g.Expect(err).NotTo(HaveOccurred(), "urgent's estimate %q", got["urgent"])
			meekAt, err := time.Parse(time.RFC3339, got["meek"])
			g.Expect(err).NotTo(HaveOccurred(), "meek's estimate %q", got["meek"])
			g.Expect(meekAt.Sub(urgentAt)).To(BeNumerically("~", 30*time.Minute, time.Minute), "meek at %s, urgent at %s: running is not forecast to run again between them", meekAt, urgentAt)
		}).WithTimeout(testutil.Timeout).Should(Succeed())
	})

	It("counts Kueue's preemption across the cohort: a queue takes back the quota another borrows (reclaimWithinCohort)", func() {
		policy := kueue.PreemptionPolicyNever
		ns, cq, queue, ends := quotaFixture(func(cq *kueue.ClusterQueue) {
			cq.Spec.Preemption = &kueue.ClusterQueuePreemption{ReclaimWithinCohort: policy}
		})
		// Queue "eta" borrows the lender's 8 CPUs for "borrowing", whose pod runs on
		// node 1 for another hour. A Workload of the lender's own queue waits for them.
		cohort := "co-" + ns.Name
		Expect(k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(cq), cq)).To(Succeed())
		cq.Spec.CohortName = kueue.CohortReference(cohort)
		Expect(k8sClient.Update(suiteCtx, cq)).To(Succeed())
		admitted(ns.Name, "borrowing", cq.Name, ns.Name+"-1", time.Now().Add(-time.Minute).Truncate(time.Second), 3600)
		lenderQueue := func() {
			lender := queue("lender-"+ns.Name, cohort)
			Expect(k8sClient.Create(suiteCtx, &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Name: "lender", Namespace: ns.Name},
				Spec: kueue.LocalQueueSpec{ClusterQueue: kueue.ClusterQueueReference(lender.Name)}})).To(Succeed())
			reclaimer := cpuWorkload(ns.Name, "reclaimer", ptr.To[int32](1200))
			reclaimer.Spec.QueueName = "lender"
			Expect(k8sClient.Create(suiteCtx, reclaimer)).To(Succeed())
		}
		at := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
		// Never: "reclaimer" waits until "running" ends and "eta" no longer borrows.
		lenderQueue()
		Eventually(estimatesIn(ns.Name)).WithTimeout(testutil.Timeout).Should(HaveKeyWithValue("reclaimer", at(ends)))

		// Any: it preempts "borrowing", whose pod gives node 1 back at once.
		Expect(k8sClient.Delete(suiteCtx, &kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: "lender-" + ns.Name}})).To(Succeed())
		Expect(k8sClient.Delete(suiteCtx, &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Name: "lender", Namespace: ns.Name}})).To(Succeed())
		Expect(k8sClient.Delete(suiteCtx, &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Name: "reclaimer", Namespace: ns.Name}})).To(Succeed())
		Eventually(func() error {
			return k8sClient.Get(suiteCtx, client.ObjectKey{Name: "lender-" + ns.Name}, &kueue.ClusterQueue{})
		}).WithTimeout(testutil.Timeout).Should(Satisfy(apierrors.IsNotFound))
		policy = kueue.PreemptionPolicyAny
		lenderQueue()
		before := time.Now().Add(-time.Minute)
		Eventually(func(g Gomega) {
			got, err := estimatesIn(ns.Name)()
			g.Expect(err).NotTo(HaveOccurred())
			t, err := time.Parse(time.RFC3339, got["reclaimer"])
			g.Expect(err).NotTo(HaveOccurred(), "reclaimer's estimate %q", got["reclaimer"])
			g.Expect(t).To(BeTemporally(">", before))
			g.Expect(t).To(BeTemporally("<", ends.Add(-time.Minute)), "reclaimer waits for running's end (%s) instead of reclaiming its quota", at(ends))
		}).WithTimeout(testutil.Timeout).Should(Succeed())
	})

	It("whatif: plays a job as one more Workload in its ClusterQueue: when the quota frees, then borrowing once the cohort lends", func() {
		ns, cq, queue, ends := quotaFixture(nil)
		job := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "batch/v1", "kind": "Job",
			"metadata": map[string]any{"name": "try", "labels": map[string]any{v1alpha1.LabelKueueQueueName: "queue"}},
			"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
				"schedulerName": v1alpha1.DefaultSchedulerName, "restartPolicy": "Never", "activeDeadlineSeconds": int64(1200),
				"containers": []any{map[string]any{"name": "main", "image": "main", "resources": map[string]any{"requests": map[string]any{"cpu": "8"}}}},
			}}},
		}}
		at := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
		whatif := func() map[string]explain.Line {
			GinkgoHelper()
			r, err := (&explain.Explainer{Client: k8sClient}).WhatIf(suiteCtx, ns.Name, []*unstructured.Unstructured{job})
			Expect(err).NotTo(HaveOccurred())
			out := map[string]explain.Line{}
			for _, l := range r.Sections[0].Lines {
				out[l.Layer] = l
			}
			return out
		}
		route := "LocalQueue queue → ClusterQueue " + cq.Name
		lines := whatif()
		Expect(lines[explain.LayerQueue]).To(And(HaveField("Verdict", explain.Waiting), HaveField("Text", And(
			HavePrefix(route+" admits it at "+at(ends)+" (in "), HaveSuffix("when the quota it needs frees: flavor "+ns.Name)))))
		Expect(lines[explain.LayerStart]).To(HaveField("Text", And(HavePrefix("earliest "+at(ends)+" (in "),
			ContainSubstring("ClusterQueue "+cq.Name+" admits it at "+at(ends)))))

		// Its queue joins a cohort with an idle queue of 8 CPUs: it borrows them now,
		// and node 1 is free.
		Expect(k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(cq), cq)).To(Succeed())
		cq.Spec.CohortName = kueue.CohortReference("co-" + ns.Name)
		Expect(k8sClient.Update(suiteCtx, cq)).To(Succeed())
		queue("lender-"+ns.Name, "co-"+ns.Name)
		Eventually(whatif).WithTimeout(testutil.Timeout).Should(HaveKeyWithValue(explain.LayerQueue, And(HaveField("Verdict", explain.OK),
			HaveField("Text", Equal(route+" admits it now: flavor "+ns.Name+", borrowing from its cohort")))))
		Expect(whatif()[explain.LayerStart]).To(HaveField("Text", ContainSubstring("ClusterQueue "+cq.Name+" admits it now")))
	})

	It("whatif: names the Workload a job of higher priority would preempt in its ClusterQueue", func() {
		ns, cq, _, _ := quotaFixture(func(cq *kueue.ClusterQueue) {
			cq.Spec.Preemption = &kueue.ClusterQueuePreemption{WithinClusterQueue: kueue.PreemptionPolicyLowerPriority}
		})
		job := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "batch/v1", "kind": "Job",
			"metadata": map[string]any{"name": "urgent", "labels": map[string]any{v1alpha1.LabelKueueQueueName: "queue"}},
			"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
				"schedulerName": v1alpha1.DefaultSchedulerName, "restartPolicy": "Never", "activeDeadlineSeconds": int64(1200), "priority": int64(100),
				"containers": []any{map[string]any{"name": "main", "image": "main", "resources": map[string]any{"requests": map[string]any{"cpu": "8"}}}},
			}}},
		}}
		r, err := (&explain.Explainer{Client: k8sClient}).WhatIf(suiteCtx, ns.Name, []*unstructured.Unstructured{job})
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Sections[0].Lines).To(ContainElement(And(HaveField("Layer", explain.LayerQueue), HaveField("Verdict", explain.OK),
			HaveField("Text", Equal("LocalQueue queue → ClusterQueue "+cq.Name+" admits it now: flavor "+ns.Name+", preempting "+ns.Name+"/running (Kueue's preemption)")))))
	})

	It("plans a bronze namespace's Workload as bronze, whatever tier its pods claim", func() {
		ns, _, _, ends := quotaFixture(nil)
		ns.Labels = map[string]string{v1alpha1.LabelTenantTier: "bronze"}
		Expect(k8sClient.Update(suiteCtx, ns)).To(Succeed())
		// Every node of the namespace's flavor belongs to a HardwareTier for gold
		// tenants only.
		tier := testutil.MakeHardwareTier("gold-"+ns.Name, 50).Selector(metav1.LabelSelector{MatchLabels: map[string]string{"pool": ns.Name}}).
			Tenants(v1alpha1.TenantTierGold).Obj()
		Expect(k8sClient.Create(suiteCtx, tier)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, tier))).To(Succeed()) })
		claims := cpuWorkload(ns.Name, "claims-gold", ptr.To[int32](1200))
		claims.Spec.PodSets[0].Template.Labels = map[string]string{v1alpha1.LabelTenantTier: "gold"}
		Expect(k8sClient.Create(suiteCtx, claims)).To(Succeed())
		// Planned as gold, it would start when "running" ends; as bronze, the nodes
		// refuse it: no start.
		Eventually(estimatesIn(ns.Name)).WithTimeout(testutil.Timeout).Should(HaveKeyWithValue("claims-gold", estimatedstart.Unknown),
			"planned as the gold its pods claim, it would start at %s", ends.UTC().Format(time.RFC3339))
	})
})

// cpuWorkload is a Workload of one pod asking 8 CPUs of KubeNexus, waiting in the
// namespace's LocalQueue "queue" (runtime: Kueue's maximum execution time).
func cpuWorkload(ns, name string, seconds *int32) *kueue.Workload {
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}
	return &kueue.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: kueue.WorkloadSpec{QueueName: "queue", MaximumExecutionTimeSeconds: seconds, PodSets: []kueue.PodSet{{Name: "main", Count: 1,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{SchedulerName: v1alpha1.DefaultSchedulerName,
				Containers: []corev1.Container{{Name: "main", Image: "main", Resources: corev1.ResourceRequirements{Requests: rl}}}}},
		}}},
	}
}

// quotaFixture is a namespace with two 8-CPU nodes of its own flavor, ClusterQueue
// "eta-<namespace>" (StrictFIFO, 8 CPUs, mutated by mutate) and LocalQueue "queue",
// and Workload "running" holding the queue's 8 CPUs: its pod, on node 0, may run 10
// minutes and started a minute ago. It returns the namespace, the queue, a maker of
// more queues of 8 CPUs (name, cohort) and when "running" ends.
func quotaFixture(mutate func(*kueue.ClusterQueue)) (*corev1.Namespace, *kueue.ClusterQueue, func(name, cohort string) *kueue.ClusterQueue, time.Time) {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "eta-"}}
	Expect(k8sClient.Create(suiteCtx, ns)).To(Succeed())
	pool := map[string]string{"pool": ns.Name}
	for i := range 2 {
		node := testutil.MakeNode(fmt.Sprintf("%s-%d", ns.Name, i)).Capacity("cpu", "8", "memory", "64Gi").Label("pool", ns.Name).Obj()
		Expect(k8sClient.Create(suiteCtx, node)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, node))).To(Succeed()) })
		node.Spec.Taints = nil
		Expect(k8sClient.Update(suiteCtx, node)).To(Succeed())
	}
	flavor := &kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: ns.Name}, Spec: kueue.ResourceFlavorSpec{NodeLabels: pool}}
	Expect(k8sClient.Create(suiteCtx, flavor)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, flavor))).To(Succeed()) })
	queue := func(name, cohort string) *kueue.ClusterQueue {
		cq := &kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kueue.ClusterQueueSpec{
			CohortName: kueue.CohortReference(cohort), QueueingStrategy: kueue.StrictFIFO,
			ResourceGroups: []kueue.ResourceGroup{{CoveredResources: []corev1.ResourceName{corev1.ResourceCPU}, Flavors: []kueue.FlavorQuotas{{
				Name: kueue.ResourceFlavorReference(ns.Name), Resources: []kueue.ResourceQuota{{Name: corev1.ResourceCPU, NominalQuota: resource.MustParse("8")}},
			}}}},
		}}
		if mutate != nil {
			mutate(cq)
		}
		Expect(k8sClient.Create(suiteCtx, cq)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, cq))).To(Succeed()) })
		return cq
	}
	cq := queue("eta-"+ns.Name, "")
	Expect(k8sClient.Create(suiteCtx, &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Name: "queue", Namespace: ns.Name},
		Spec: kueue.LocalQueueSpec{ClusterQueue: kueue.ClusterQueueReference(cq.Name)}})).To(Succeed())

	started := time.Now().Add(-time.Minute).Truncate(time.Second)
	admitted(ns.Name, "running", cq.Name, ns.Name+"-0", started, 600)
	return ns, cq, queue, started.Add(10 * time.Minute)
}

// admitted creates a Workload of 8 CPUs that ClusterQueue cq admitted on the
// namespace's flavor, and its pod <name>-0, bound to node, which started at started;
// both may run deadline seconds.
func admitted(ns, name, cq, node string, started time.Time, deadline int64) {
	GinkgoHelper()
	wl := cpuWorkload(ns, name, ptr.To(int32(deadline)))
	Expect(k8sClient.Create(suiteCtx, wl)).To(Succeed())
	wl.Status.Conditions = []metav1.Condition{{Type: kueue.WorkloadQuotaReserved, Status: metav1.ConditionTrue, Reason: "QuotaReserved", LastTransitionTime: metav1.NewTime(started)}}
	wl.Status.Admission = &kueue.Admission{ClusterQueue: kueue.ClusterQueueReference(cq), PodSetAssignments: []kueue.PodSetAssignment{{
		Name: "main", Count: ptr.To[int32](1),
		Flavors:       map[corev1.ResourceName]kueue.ResourceFlavorReference{corev1.ResourceCPU: kueue.ResourceFlavorReference(ns)},
		ResourceUsage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")},
	}}}
	Expect(k8sClient.Status().Update(suiteCtx, wl)).To(Succeed())
	pod := testutil.MakePod(name+"-0", ns).Req("cpu", "8").ActiveDeadline(ptr.To(deadline)).Obj()
	pod.Annotations = map[string]string{v1alpha1.AnnotationKueueWorkload: name}
	pod.Spec.NodeName = node
	Expect(k8sClient.Create(suiteCtx, pod)).To(Succeed())
	pod.Status.StartTime = ptr.To(metav1.NewTime(started))
	Expect(k8sClient.Status().Update(suiteCtx, pod)).To(Succeed())
}

// estimatesIn refreshes the estimates once and reads those of the namespace's
// Workloads, by name.
func estimatesIn(ns string) func() (map[string]string, error) {
	return func() (map[string]string, error) {
		if err := (&estimatedstart.Estimator{Client: k8sClient}).Refresh(suiteCtx); err != nil {
			return nil, err
		}
		var wls kueue.WorkloadList
		if err := k8sClient.List(suiteCtx, &wls, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		out := map[string]string{}
		for _, wl := range wls.Items {
			out[wl.Name] = wl.Annotations[v1alpha1.AnnotationEstimatedStart]
		}
		return out, nil
	}
}
