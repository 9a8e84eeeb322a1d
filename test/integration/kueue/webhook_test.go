package kueue_test

import (
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/controllers"
	"github.com/kube-nexus/kubenexus/webhooks/pod"
)

var _ = Describe("The pod webhook with spec.kueue.tenantTierFrom: ClusterQueue", func() {
	It("labels a Job's pod with the tier of the ClusterQueue that admitted the Job's Workload, else the namespace's", func() {
		knc := &v1alpha1.KubeNexusConfig{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.DefaultConfigName},
			Spec: v1alpha1.KubeNexusConfigSpec{Kueue: v1alpha1.KueueSpec{TenantTierFrom: v1alpha1.TenantTierFromClusterQueue}}}
		Expect(k8sClient.Create(suiteCtx, knc)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, knc))).To(Succeed()) })
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tier-", Labels: map[string]string{
			v1alpha1.LabelTenantTier: "silver", v1alpha1.LabelNamespaceEnabled: "true"}}}
		Expect(k8sClient.Create(suiteCtx, ns)).To(Succeed())
		cq := &kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: "gold-" + ns.Name, Labels: map[string]string{v1alpha1.LabelTenantTier: "gold"}}}
		Expect(k8sClient.Create(suiteCtx, cq)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, cq))).To(Succeed()) })
		// A queue without a tier label: its Workloads' pods keep the namespace's tier.
		untiered := &kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: "plain-" + ns.Name}}
		Expect(k8sClient.Create(suiteCtx, untiered)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, untiered))).To(Succeed()) })

		// Jobs whose Workloads Kueue admitted through the gold and the untiered queue, and
		// one Kueue never saw.
		job := func(name string) *batchv1.Job {
			j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns.Name}, Spec: batchv1.JobSpec{
				Suspend: ptr.To(true),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "main", Image: "main"}}}},
			}}
			Expect(k8sClient.Create(suiteCtx, j)).To(Succeed())
			return j
		}
		admittedJob, untieredJob, plainJob := job("admitted"), job("untiered"), job("plain")
		admit := func(j *batchv1.Job, queue *kueue.ClusterQueue) {
			wl := &kueue.Workload{
				ObjectMeta: metav1.ObjectMeta{Name: "job-" + j.Name, Namespace: ns.Name, OwnerReferences: []metav1.OwnerReference{
					{APIVersion: "batch/v1", Kind: "Job", Name: j.Name, UID: j.UID, Controller: ptr.To(true)}}},
				Spec: kueue.WorkloadSpec{QueueName: "queue", PodSets: []kueue.PodSet{{Name: "main", Count: 1, Template: j.Spec.Template}}},
			}
			Expect(k8sClient.Create(suiteCtx, wl)).To(Succeed())
			wl.Status.Admission = &kueue.Admission{ClusterQueue: kueue.ClusterQueueReference(queue.Name), PodSetAssignments: []kueue.PodSetAssignment{{Name: "main", Count: ptr.To[int32](1)}}}
			wl.Status.Conditions = []metav1.Condition{{Type: kueue.WorkloadQuotaReserved, Status: metav1.ConditionTrue, Reason: "QuotaReserved", Message: "reserved", LastTransitionTime: metav1.Now()}}
			Expect(k8sClient.Status().Update(suiteCtx, wl)).To(Succeed())
		}
		admit(admittedJob, cq)
		admit(untieredJob, untiered)

		mutator := &pod.Mutator{Client: k8sClient, Owners: k8sClient, Namespace: "kubenexus-system", Decoder: admission.NewDecoder(controllers.NewScheme())}
		tierOf := func(owner *batchv1.Job) string {
			p := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: owner.Name + "-0", Namespace: ns.Name,
					// Whatever the pod claims is overwritten.
					Labels:          map[string]string{v1alpha1.LabelTenantTier: "bronze"},
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: owner.Name, UID: owner.UID, Controller: ptr.To(true)}}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "main"}}},
			}
			raw, err := json.Marshal(p)
			Expect(err).NotTo(HaveOccurred())
			resp := mutator.Handle(suiteCtx, admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: admissionv1.Create, Namespace: ns.Name, Object: runtimeapi.RawExtension{Raw: raw}}})
			Expect(resp.Allowed).To(BeTrue())
			for _, op := range resp.Patches {
				if op.Path == "/metadata/labels/tenant.kubenexus.io~1tier" {
					return op.Value.(string)
				}
			}
			return ""
		}
		Expect(tierOf(admittedJob)).To(Equal("gold"))
		Expect(tierOf(untieredJob)).To(Equal("silver"))
		Expect(tierOf(plainJob)).To(Equal("silver"))
	})
})
