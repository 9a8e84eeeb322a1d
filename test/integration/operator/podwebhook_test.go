package operator_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	runtimeapi "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/controllers"
	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/testenv"
	"github.com/kube-nexus/kubenexus/webhooks/pod"
)

// Namespaces of the pod webhook tests.
const (
	nsGold   = "team-gold"   // opted in, tier gold
	nsBronze = "team-bronze" // opted in, tier bronze
	nsPlain  = "plain"       // not opted in
)

// owner creates a framework object (a stand-in CRD from testdata/crds, or a batch Job)
// and returns it as stored.
// replicatedJob is a JobSet replicated job (its Jobs' pods a container each) that
// JobSet v0.10's CRD accepts; it starts once deps complete.
func replicatedJob(name string, replicas, parallelism int64, deps ...string) map[string]any {
	rj := map[string]any{"name": name, "replicas": replicas, "template": map[string]any{"spec": map[string]any{
		"parallelism": parallelism,
		"template": map[string]any{"spec": map[string]any{"restartPolicy": "Never",
			"containers": []any{map[string]any{"name": name, "image": "trainer"}}}}}}}
	var dependsOn []any
	for _, d := range deps {
		dependsOn = append(dependsOn, map[string]any{"name": d, "status": "Complete"})
	}
	if len(dependsOn) > 0 {
		rj["dependsOn"] = dependsOn
	}
	return rj
}

func owner(apiVersion, kind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	GinkgoHelper()
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "spec": spec}}
	u.SetNamespace(ns)
	u.SetName(name)
	Expect(k8sClient.Create(suiteCtx, u)).To(Succeed())
	return u
}

// unservedVersion reads like an API server that does not serve gvk.
type unservedVersion struct {
	client.Reader
	gvk schema.GroupVersionKind
}

func (r unservedVersion) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if obj.GetObjectKind().GroupVersionKind() == r.gvk {
		return &meta.NoKindMatchError{GroupKind: r.gvk.GroupKind(), SearchedVersions: []string{r.gvk.Version}}
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}

// podCase is one pod shape and exactly the KubeNexus keys it must end up with.
type podCase struct {
	name      string
	pod       *testutil.PodWrapper
	class     string // "" means: no KubeNexus labels at all (out of scope)
	role      string
	tier      string
	gang      string
	min       string
	skipped   string // substring of the auto-gang-skipped annotation
	scheduler string
	keepGang  string // a pre-existing PodGroup label that must stay
}

var _ = Describe("Pod webhook", Ordered, func() {
	BeforeAll(func() {
		for _, ns := range []*corev1.Namespace{
			{ObjectMeta: metav1.ObjectMeta{Name: nsGold, Labels: map[string]string{v1alpha1.LabelNamespaceEnabled: "true", v1alpha1.LabelTenantTier: "gold"}}},
			{ObjectMeta: metav1.ObjectMeta{Name: nsBronze, Labels: map[string]string{v1alpha1.LabelNamespaceEnabled: "true", v1alpha1.LabelTenantTier: "bronze"}}},
			{ObjectMeta: metav1.ObjectMeta{Name: nsPlain}},
		} {
			Expect(k8sClient.Create(suiteCtx, ns)).To(Succeed())
		}
		g := nsGold
		owner("sparkoperator.k8s.io/v1beta2", "SparkApplication", g, "pi", map[string]any{"executor": map[string]any{"instances": int64(4)}})
		owner("sparkoperator.k8s.io/v1beta2", "SparkApplication", g, "etl", map[string]any{
			"executor":          map[string]any{"instances": int64(10)},
			"dynamicAllocation": map[string]any{"enabled": true, "minExecutors": int64(2)},
		})
		owner("kubeflow.org/v1", "PyTorchJob", g, "mnist", map[string]any{"pytorchReplicaSpecs": map[string]any{
			"Master": map[string]any{"replicas": int64(1)}, "Worker": map[string]any{"replicas": int64(3)}}})
		owner("kubeflow.org/v1", "TFJob", g, "tf1", map[string]any{"tfReplicaSpecs": map[string]any{
			"Chief": map[string]any{"replicas": int64(1)}, "PS": map[string]any{"replicas": int64(2)}, "Worker": map[string]any{"replicas": int64(4)}}})
		owner("kubeflow.org/v2beta1", "MPIJob", g, "allreduce", map[string]any{"launcherCreationPolicy": "WaitForWorkersReady", "mpiReplicaSpecs": map[string]any{
			"Launcher": map[string]any{"replicas": int64(1)}, "Worker": map[string]any{"replicas": int64(4)}}})
		owner("kubeflow.org/v2beta1", "MPIJob", g, "eager", map[string]any{"launcherCreationPolicy": "AtStartup", "mpiReplicaSpecs": map[string]any{
			"Launcher": map[string]any{"replicas": int64(1)}, "Worker": map[string]any{"replicas": int64(4)}}})
		// Kubeflow training-operator's MPIJob (kubeflow.org/v1): its launcher starts with
		// the workers, and runPolicy.schedulingPolicy.minAvailable declares the minimum.
		owner("kubeflow.org/v1", "MPIJob", g, "horovod", map[string]any{"runPolicy": map[string]any{"cleanPodPolicy": "Running"}, "mpiReplicaSpecs": map[string]any{
			"Launcher": map[string]any{"replicas": int64(1)}, "Worker": map[string]any{"replicas": int64(4)}}})
		owner("kubeflow.org/v1", "MPIJob", g, "horovod-min", map[string]any{
			"runPolicy":       map[string]any{"schedulingPolicy": map[string]any{"minAvailable": int64(5)}},
			"mpiReplicaSpecs": map[string]any{"Launcher": map[string]any{"replicas": int64(1)}, "Worker": map[string]any{"replicas": int64(8)}}})
		owner("kubeflow.org/v1", "PyTorchJob", g, "elastic", map[string]any{
			"runPolicy":           map[string]any{"schedulingPolicy": map[string]any{"minAvailable": int64(3)}},
			"pytorchReplicaSpecs": map[string]any{"Master": map[string]any{"replicas": int64(1)}, "Worker": map[string]any{"replicas": int64(7)}}})
		rayTemplate := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "ray", "image": "rayproject/ray"}}}}
		owner("ray.io/v1", "RayCluster", g, "rc", map[string]any{"headGroupSpec": map[string]any{"template": rayTemplate}, "workerGroupSpecs": []any{
			map[string]any{"groupName": "cpu", "minReplicas": int64(2), "maxReplicas": int64(4), "template": rayTemplate},
			map[string]any{"groupName": "tpu", "minReplicas": int64(1), "maxReplicas": int64(1), "numOfHosts": int64(2), "template": rayTemplate}}})
		owner("jobset.x-k8s.io/v1alpha2", "JobSet", g, "js", map[string]any{"replicatedJobs": []any{
			replicatedJob("driver", 1, 1), replicatedJob("workers", 2, 4)}})
		// A Kubeflow Trainer TrainJob's JobSet: its 3 nodes start once the initializers
		// complete.
		owner("jobset.x-k8s.io/v1alpha2", "JobSet", g, "tune", map[string]any{"replicatedJobs": []any{
			replicatedJob("dataset-initializer", 1, 1), replicatedJob("model-initializer", 1, 1),
			replicatedJob("node", 1, 3, "dataset-initializer", "model-initializer")}})
		owner("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", g, "llm", map[string]any{"leaderWorkerTemplate": map[string]any{"size": int64(4),
			"workerTemplate": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "vllm", "image": "vllm"}}}}}})
	})

	const kf = "training.kubeflow.org/"
	cases := []podCase{
		{name: "spark-operator driver", pod: testutil.MakePod("pi-driver", nsGold).Label("spark-role", "driver").Label("sparkoperator.k8s.io/app-name", "pi"),
			class: "batch", role: "driver", tier: "gold", gang: "pi-spark", min: "5"},
		{name: "spark-operator executor", pod: testutil.MakePod("pi-exec-1", nsGold).Label("spark-role", "executor").Label("sparkoperator.k8s.io/app-name", "pi").Owner("v1", "Pod", "pi-driver"),
			class: "batch", role: "executor", tier: "gold", gang: "pi-spark", min: "5"},
		{name: "spark dynamic allocation", pod: testutil.MakePod("etl-driver", nsGold).Label("spark-role", "driver").Label("sparkoperator.k8s.io/app-name", "etl"),
			class: "batch", role: "driver", tier: "gold", gang: "etl-spark", min: "3"},
		{name: "spark-submit without the operator", pod: testutil.MakePod("submit-driver", nsGold).Label("spark-role", "driver").Label("spark-app-selector", "spark-0001"),
			class: "batch", role: "driver", tier: "gold"},
		{name: "PyTorchJob master", pod: testutil.MakePod("mnist-master-0", nsGold).Label(kf+"replica-type", "master").Label(kf+"job-name", "mnist").Label(kf+"operator-name", "pytorchjob-controller"),
			class: "training", role: "master", tier: "gold", gang: "mnist-pytorch", min: "4"},
		{name: "PyTorchJob worker, upper-case role", pod: testutil.MakePod("mnist-worker-0", nsGold).Label(kf+"replica-type", "Worker").Label(kf+"job-name", "mnist").Owner("kubeflow.org/v1", "PyTorchJob", "mnist"),
			class: "training", role: "worker", tier: "gold", gang: "mnist-pytorch", min: "4"},
		{name: "TFJob parameter server", pod: testutil.MakePod("tf1-ps-0", nsGold).Label(kf+"replica-type", "PS").Label(kf+"job-name", "tf1").Label(kf+"operator-name", "tfjob-controller"),
			class: "training", role: "ps", tier: "gold", gang: "tf1-tensorflow", min: "7"},
		{name: "MPIJob worker, launcher created after workers", pod: testutil.MakePod("allreduce-worker-0", nsGold).Label(kf+"job-role", "worker").Label(kf+"job-name", "allreduce").Owner("kubeflow.org/v2beta1", "MPIJob", "allreduce"),
			class: "training", role: "worker", tier: "gold", gang: "allreduce-mpi", min: "4"},
		{name: "MPIJob late launcher stays out of the gang", pod: testutil.MakePod("allreduce-launcher", nsGold).Label(kf+"job-role", "launcher").Label(kf+"job-name", "allreduce").Owner("kubeflow.org/v2beta1", "MPIJob", "allreduce"),
			class: "training", role: "launcher", tier: "gold"},
		{name: "MPIJob launcher created at start", pod: testutil.MakePod("eager-launcher", nsGold).Label(kf+"job-role", "launcher").Label(kf+"job-name", "eager").Owner("kubeflow.org/v2beta1", "MPIJob", "eager"),
			class: "training", role: "launcher", tier: "gold", gang: "eager-mpi", min: "5"},
		{name: "MPIJob v1 (training-operator) worker", pod: testutil.MakePod("horovod-worker-0", nsGold).Label(kf+"replica-type", "worker").Label(kf+"job-name", "horovod").Label(kf+"operator-name", "mpijob-controller").Owner("kubeflow.org/v1", "MPIJob", "horovod"),
			class: "training", role: "worker", tier: "gold", gang: "horovod-mpi", min: "5"},
		{name: "MPIJob v1 launcher, created with the workers, is a member", pod: testutil.MakePod("horovod-launcher", nsGold).Label(kf+"replica-type", "launcher").Label(kf+"job-name", "horovod").Label(kf+"operator-name", "mpijob-controller").Owner("kubeflow.org/v1", "MPIJob", "horovod"),
			class: "training", role: "launcher", tier: "gold", gang: "horovod-mpi", min: "5"},
		{name: "MPIJob v1 worker, declared minAvailable", pod: testutil.MakePod("horovod-min-worker-0", nsGold).Label(kf+"replica-type", "worker").Label(kf+"job-name", "horovod-min").Label(kf+"operator-name", "mpijob-controller").Owner("kubeflow.org/v1", "MPIJob", "horovod-min"),
			class: "training", role: "worker", tier: "gold", gang: "horovod-min-mpi", min: "5"},
		{name: "PyTorchJob worker, declared minAvailable", pod: testutil.MakePod("elastic-worker-0", nsGold).Label(kf+"replica-type", "worker").Label(kf+"job-name", "elastic").Label(kf+"operator-name", "pytorchjob-controller").Owner("kubeflow.org/v1", "PyTorchJob", "elastic"),
			class: "training", role: "worker", tier: "gold", gang: "elastic-pytorch", min: "3"},
		{name: "XGBoostJob whose CRD is not installed", pod: testutil.MakePod("xg-master-0", nsGold).Label(kf+"replica-type", "Master").Label(kf+"job-name", "xg").Label(kf+"operator-name", "xgboostjob-controller"),
			class: "training", role: "master", tier: "gold", skipped: "XGBoostJob.kubeflow.org is not installed"},
		{name: "PyTorchJob that does not exist", pod: testutil.MakePod("ghost-worker-0", nsGold).Label(kf+"replica-type", "worker").Label(kf+"job-name", "ghost").Label(kf+"operator-name", "pytorchjob-controller"),
			class: "training", role: "worker", tier: "gold", skipped: "PyTorchJob ghost not found"},
		{name: "Ray head", pod: testutil.MakePod("rc-head", nsGold).Label("ray.io/node-type", "head").Label("ray.io/cluster", "rc"),
			class: "batch", role: "head", tier: "gold", gang: "rc-ray", min: "5"},
		{name: "Ray worker", pod: testutil.MakePod("rc-worker-cpu-0", nsGold).Label("ray.io/node-type", "worker").Label("ray.io/cluster", "rc"),
			class: "batch", role: "worker", tier: "gold", gang: "rc-ray", min: "5"},
		{name: "JobSet worker", pod: testutil.MakePod("js-workers-0-0", nsGold).Label("jobset.sigs.k8s.io/jobset-name", "js").Label("jobset.sigs.k8s.io/replicatedjob-name", "workers"),
			class: "batch", role: "worker", tier: "gold", gang: "js-jobset", min: "9"},
		{name: "TrainJob initializer: the first stage's gang", pod: testutil.MakePod("tune-model-initializer-0-0", nsGold).Label("jobset.sigs.k8s.io/jobset-name", "tune").
			Label("jobset.sigs.k8s.io/replicatedjob-name", "model-initializer").Label("trainer.kubeflow.org/trainjob-ancestor-step", "model-initializer"),
			class: "training", tier: "gold", gang: "tune-jobset", min: "2"},
		{name: "TrainJob node: a gang of the nodes alone", pod: testutil.MakePod("tune-node-0-0", nsGold).Label("jobset.sigs.k8s.io/jobset-name", "tune").
			Label("jobset.sigs.k8s.io/replicatedjob-name", "node").Label("trainer.kubeflow.org/trainjob-ancestor-step", "trainer"),
			class: "training", tier: "gold", gang: "tune-jobset-stage1", min: "3"},
		{name: "LeaderWorkerSet leader of group 1", pod: testutil.MakePod("llm-1", nsGold).Label("leaderworkerset.sigs.k8s.io/name", "llm").Label("leaderworkerset.sigs.k8s.io/worker-index", "0").Label("leaderworkerset.sigs.k8s.io/group-index", "1"),
			class: "inference", role: "leader", tier: "gold", gang: "llm-leaderworkerset-1", min: "4"},
		{name: "batch Job (not auto-grouped by default)", pod: testutil.MakePod("report-x7k2p", nsGold).Label("batch.kubernetes.io/job-name", "report").Owner("batch/v1", "Job", "report"),
			class: "batch", tier: "gold"},
		{name: "Deployment pod", pod: testutil.MakePod("web-5d8f-abcde", nsGold).Owner("apps/v1", "ReplicaSet", "web-5d8f"),
			class: "service", tier: "gold"},
		{name: "StatefulSet pod", pod: testutil.MakePod("db-0", nsGold).Owner("apps/v1", "StatefulSet", "db"),
			class: "service", tier: "gold"},
		{name: "plain GPU pod", pod: testutil.MakePod("notebook-gpu", nsGold).Req("nvidia.com/gpu", "1").Limit("nvidia.com/gpu", "1"),
			class: "training", tier: "gold"},
		{name: "plain pod", pod: testutil.MakePod("debug", nsGold), class: "service", tier: "gold"},
		{name: "Argo workflow step", pod: testutil.MakePod("wf-step-1", nsGold).Label("workflows.argoproj.io/workflow", "wf"), class: "batch", tier: "gold"},
		{name: "explicit PodGroup kept", pod: testutil.MakePod("mnist-custom-0", nsGold).Label(kf+"replica-type", "worker").Label(kf+"job-name", "mnist").Label(kf+"operator-name", "pytorchjob-controller").Label(v1alpha1.LabelPodGroup, "my-group"),
			class: "training", role: "worker", tier: "gold", keepGang: "my-group"},
		{name: "min-member annotation overrides the owner", pod: testutil.MakePod("mnist-elastic-0", nsGold).Label(kf+"replica-type", "worker").Label(kf+"job-name", "mnist").Label(kf+"operator-name", "pytorchjob-controller").Annotation(v1alpha1.AnnotationGangMinMember, "2"),
			class: "training", role: "worker", tier: "gold", gang: "mnist-pytorch", min: "2"},
		{name: "auto-gang opt-out", pod: testutil.MakePod("mnist-solo-0", nsGold).Label(kf+"replica-type", "worker").Label(kf+"job-name", "mnist").Label(kf+"operator-name", "pytorchjob-controller").Annotation(v1alpha1.AnnotationAutoGang, "false"),
			class: "training", role: "worker", tier: "gold"},
		{name: "forged gold tier in a bronze namespace", pod: testutil.MakePod("sneaky", nsBronze).Label(v1alpha1.LabelTenantTier, "gold"),
			class: "service", tier: "bronze"},
		// A role the pod names itself is kept, over its framework's (it only counts the
		// pod towards its PodGroup's minMemberPerRole), unless malformed.
		{name: "own role on a plain pod", pod: testutil.MakePod("prefill-0", nsBronze).Label(v1alpha1.LabelWorkloadRole, "prefill"),
			class: "service", role: "prefill", tier: "bronze"},
		{name: "malformed own role", pod: testutil.MakePod("prefill-x", nsBronze).Label(v1alpha1.LabelWorkloadRole, "Pre_Fill"),
			class: "service", tier: "bronze"},
		{name: "the pod's own role over its framework's", pod: testutil.MakePod("etl-exec-9", nsBronze).Label("spark-role", "executor").Label(v1alpha1.LabelWorkloadRole, "shuffle"),
			class: "batch", role: "shuffle", tier: "bronze"},
		{name: "another scheduler named explicitly", pod: testutil.MakePod("volcano-pod", nsBronze).SchedulerName("volcano"),
			class: "service", tier: "bronze", scheduler: "volcano"},
		{name: "non-opted namespace, names kubenexus-scheduler", pod: testutil.MakePod("direct", nsPlain).SchedulerName(v1alpha1.DefaultSchedulerName).Label("spark-role", "executor"),
			class: "batch", role: "executor", tier: "bronze"},
		{name: "non-opted namespace: untouched", pod: testutil.MakePod("bystander", nsPlain).Label("spark-role", "driver").Label(v1alpha1.LabelTenantTier, "gold")},
	}

	It("labels each pod shape exactly, and re-admission changes nothing", func() {
		Expect(len(cases)).To(BeNumerically(">=", 20))
		mutator := &pod.Mutator{Client: k8sClient, Owners: k8sClient, Namespace: namespace, Decoder: admission.NewDecoder(controllers.NewScheme())}
		for _, tc := range cases {
			By(tc.name)
			in := tc.pod.Obj().DeepCopy()
			Expect(k8sClient.Create(suiteCtx, tc.pod.Obj())).To(Succeed(), tc.name)
			got := &corev1.Pod{}
			Expect(k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(in), got)).To(Succeed())

			if tc.class == "" {
				Expect(got.Labels).To(Equal(in.Labels), tc.name)
				Expect(got.Annotations).To(BeEmpty(), tc.name) // the case sets none
				Expect(got.Spec.SchedulerName).To(Equal(corev1.DefaultSchedulerName), tc.name)
				continue
			}
			want := map[string]string{}
			for k, v := range in.Labels {
				want[k] = v
			}
			want[v1alpha1.LabelWorkloadType] = tc.class
			want[v1alpha1.LabelTenantTier] = tc.tier
			delete(want, v1alpha1.LabelWorkloadRole)
			if tc.role != "" {
				want[v1alpha1.LabelWorkloadRole] = tc.role
			}
			if tc.gang != "" {
				want[v1alpha1.LabelKubeNexusGangName] = tc.gang
				want[v1alpha1.LabelKubeNexusGangMinAvailable] = tc.min
			}
			if tc.keepGang != "" {
				Expect(got.Labels[v1alpha1.LabelPodGroup]).To(Equal(tc.keepGang))
			}
			Expect(got.Labels).To(Equal(want), tc.name)
			if tc.skipped != "" {
				Expect(got.Annotations[v1alpha1.AnnotationAutoGangSkipped]).To(ContainSubstring(tc.skipped), tc.name)
			} else {
				Expect(got.Annotations).NotTo(HaveKey(v1alpha1.AnnotationAutoGangSkipped), tc.name)
			}
			scheduler := tc.scheduler
			if scheduler == "" {
				scheduler = v1alpha1.DefaultSchedulerName
			}
			Expect(got.Spec.SchedulerName).To(Equal(scheduler), tc.name)

			// The scheduler classifies the pod as it arrived, unannotated, the same way
			// (ProfileClassifier calls workload.Classify with the namespace's labels).
			ns := &corev1.Namespace{}
			Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: in.Namespace}, ns)).To(Succeed())
			p := workload.Classify(in, workload.Namespace{Labels: ns.Labels}, v1alpha1.TenantTierBronze)
			Expect(string(p.Class)).To(Equal(tc.class), tc.name)
			Expect(string(p.Role)).To(Equal(tc.role), tc.name)
			Expect(string(p.Tier)).To(Equal(tc.tier), tc.name)

			// Admitting the stored pod again yields an empty patch.
			raw, err := json.Marshal(got)
			Expect(err).NotTo(HaveOccurred())
			resp := mutator.Handle(suiteCtx, admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: admissionv1.Create, Namespace: got.Namespace, Object: runtimeapi.RawExtension{Raw: raw},
			}})
			Expect(resp.Allowed).To(BeTrue(), tc.name)
			Expect(resp.Patches).To(BeEmpty(), tc.name)
		}
	})

	It("gets a PodGroup for every auto-created gang", func() {
		for gang, min := range map[string]int32{"pi-spark": 5, "mnist-pytorch": 4, "rc-ray": 5, "js-jobset": 9, "tune-jobset-stage1": 3, "allreduce-mpi": 4,
			"horovod-min-mpi": 5, "elastic-pytorch": 3} {
			Eventually(func() (int32, error) {
				pg := &v1alpha1.PodGroup{}
				err := k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: nsGold, Name: gang}, pg)
				return pg.Spec.MinMember, err
			}).WithTimeout(20*time.Second).Should(Equal(min), gang)
		}
	})

	It("owns a JobSet gang's PodGroup by the JobSet, found through the child Job that controls the pods", func() {
		// JobSet v0.8 labels its pods with the JobSet's name but not its UID; the pods
		// are controlled by a child Job, which the JobSet controls.
		js := owner("jobset.x-k8s.io/v1alpha2", "JobSet", nsGold, "js8", map[string]any{"replicatedJobs": []any{replicatedJob("workers", 1, 2)}})
		job := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: "js8-workers-0", Namespace: nsGold, OwnerReferences: []metav1.OwnerReference{
				{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "js8", UID: js.GetUID(), Controller: ptr.To(true)}}},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "w", Image: "worker"}}}}},
		}
		Expect(k8sClient.Create(suiteCtx, job)).To(Succeed())
		for i := range 2 {
			Expect(k8sClient.Create(suiteCtx, testutil.MakePod(fmt.Sprintf("js8-workers-0-%d", i), nsGold).
				Label("jobset.sigs.k8s.io/jobset-name", "js8").Label("jobset.sigs.k8s.io/replicatedjob-name", "workers").
				OwnerUID("batch/v1", "Job", job.Name, job.UID).Obj())).To(Succeed())
		}
		want := []metav1.OwnerReference{{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "js8", UID: js.GetUID()}}
		Eventually(func() ([]metav1.OwnerReference, error) {
			pg := &v1alpha1.PodGroup{}
			err := k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: nsGold, Name: "js8-jobset"}, pg)
			return pg.OwnerReferences, err
		}).WithTimeout(20 * time.Second).Should(Equal(want))
	})

	It("refuses a PodGroup whose minMember its owner can never reach", func() {
		owner("kubeflow.org/v1", "PyTorchJob", nsGold, "small", map[string]any{"pytorchReplicaSpecs": map[string]any{
			"Master": map[string]any{"replicas": int64(1)}, "Worker": map[string]any{"replicas": int64(1)}}})
		job := &unstructured.Unstructured{}
		job.SetAPIVersion("kubeflow.org/v1")
		job.SetKind("PyTorchJob")
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: nsGold, Name: "small"}, job)).To(Succeed())
		owned := func(name string, min int32) *v1alpha1.PodGroup {
			pg := testutil.MakePodGroup(name, nsGold).MinMember(min).Obj()
			pg.OwnerReferences = []metav1.OwnerReference{{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Name: "small", UID: job.GetUID(), Controller: ptr.To(true)}}
			return pg
		}
		err := k8sClient.Create(suiteCtx, owned("small-too-big", 5))
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("spec.minMember"))
		Expect(err.Error()).To(ContainSubstring("must be at most 2: PyTorchJob small creates at most 2 gang members"))
		Expect(k8sClient.Create(suiteCtx, owned("small-ok", 2))).To(Succeed())

		// Raising it later is refused the same way, and the stored group is unchanged.
		pg := &v1alpha1.PodGroup{}
		Eventually(func() error { // retried past conflicts with the PodGroup controller's status writes
			if err := k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: nsGold, Name: "small-ok"}, pg); err != nil {
				return err
			}
			pg.Spec.MinMember = 3
			return k8sClient.Update(suiteCtx, pg)
		}).Should(MatchError(ContainSubstring("must be at most 2")))
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: nsGold, Name: "small-ok"}, pg)).To(Succeed())
		Expect(pg.Spec.MinMember).To(Equal(int32(2)))

		// A network topology level the KubeNexusConfig does not declare is refused,
		// naming the levels there are.
		err = k8sClient.Create(suiteCtx, testutil.MakePodGroup("spine-wide", nsGold).MinMember(2).
			NetworkTopology(v1alpha1.NetworkTopologyRequired, "datacenter").Obj())
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(And(ContainSubstring("spec.networkTopology.level"), ContainSubstring(`supported values: "nvlink", "tor", "rack", "zone"`)))
		Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup("rack-wide", nsGold).MinMember(2).
			NetworkTopology(v1alpha1.NetworkTopologyRequired, v1alpha1.NetworkLevelRack).Obj())).To(Succeed())

		// Slices: a level not declared, or layers out of order, are refused naming the
		// field; Kueue #9046's shape is admitted.
		err = k8sClient.Create(suiteCtx, testutil.MakePodGroup("sliced-spine", nsGold).MinMember(96).
			NetworkTopology(v1alpha1.NetworkTopologyRequired, v1alpha1.NetworkLevelZone).Slices(v1alpha1.NetworkTopologyLevel("block"), 48).Obj())
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(And(ContainSubstring("spec.networkTopology.slices[0].level"), ContainSubstring(`supported values: "nvlink", "tor", "rack", "zone"`)))
		err = k8sClient.Create(suiteCtx, testutil.MakePodGroup("sliced-inverted", nsGold).MinMember(96).
			NetworkTopology(v1alpha1.NetworkTopologyRequired, v1alpha1.NetworkLevelZone).Slices(v1alpha1.NetworkLevelNVLink, 48, v1alpha1.NetworkLevelRack, 16).Obj())
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(And(ContainSubstring("spec.networkTopology.slices"), ContainSubstring("slices[1].level rack must be below slices[0].level (nvlink)")))
		// Sub-groups: a level not declared, or above the gang's, is refused naming the
		// field.
		err = k8sClient.Create(suiteCtx, testutil.MakePodGroup("grouped-spine", nsGold).MinMember(6).
			NetworkTopology(v1alpha1.NetworkTopologyRequired, v1alpha1.NetworkLevelRack).SubGroup("decode", v1alpha1.NetworkTopologyLevel("block")).Obj())
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(And(ContainSubstring("spec.networkTopology.subGroups[0].level"), ContainSubstring(`supported values: "nvlink", "tor", "rack", "zone"`)))
		err = k8sClient.Create(suiteCtx, testutil.MakePodGroup("grouped-wide", nsGold).MinMember(6).
			NetworkTopology(v1alpha1.NetworkTopologyRequired, v1alpha1.NetworkLevelRack).SubGroup("decode", v1alpha1.NetworkLevelZone).Obj())
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(And(ContainSubstring("spec.networkTopology.subGroups[0].level"), ContainSubstring("above spec.networkTopology.level (rack)")))
		Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup("sliced", nsGold).MinMember(96).
			NetworkTopology(v1alpha1.NetworkTopologyRequired, v1alpha1.NetworkLevelZone).Slices(v1alpha1.NetworkLevelRack, 48, v1alpha1.NetworkLevelNVLink, 16).Obj())).To(Succeed())
	})

	It("refuses a PodGroup naming a PriorityClass its namespace's pods could not use, naming the field", func() {
		withClass := func(name, class string) *v1alpha1.PodGroup {
			return testutil.MakePodGroup(name, nsBronze).MinMember(2).PriorityClassName(class).Obj()
		}
		err := k8sClient.Create(suiteCtx, withClass("crit", "system-node-critical"))
		Expect(err).To(MatchError(And(ContainSubstring("spec.priorityClassName"),
			ContainSubstring("reserved for Kubernetes' own components and may be named only by PodGroups in kube-system"))))
		err = k8sClient.Create(suiteCtx, withClass("typo", "no-such-class"))
		Expect(err).To(MatchError(And(ContainSubstring("spec.priorityClassName"), ContainSubstring("no PriorityClass of this name exists"))))

		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "tenant-batch-high"}, Value: 1000}
		Expect(k8sClient.Create(suiteCtx, pc)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, pc))).To(Succeed()) })
		Expect(k8sClient.Create(suiteCtx, withClass("high", "tenant-batch-high"))).To(Succeed())

		// The admin allows the bronze namespace no pods of that class: neither a new
		// PodGroup nor a changed one may name it; the stored one keeps its class.
		quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "no-high", Namespace: nsBronze}, Spec: corev1.ResourceQuotaSpec{
			Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")},
			ScopeSelector: &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{{
				ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"tenant-batch-high"}}}},
		}}
		Expect(k8sClient.Create(suiteCtx, quota)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, quota))).To(Succeed()) })
		err = k8sClient.Create(suiteCtx, withClass("high-2", "tenant-batch-high"))
		Expect(err).To(MatchError(ContainSubstring("ResourceQuota no-high of namespace " + nsBronze + " allows no pods of PriorityClass tenant-batch-high")))
		Expect(k8sClient.Create(suiteCtx, withClass("plain", ""))).To(Succeed())
		pg := &v1alpha1.PodGroup{}
		Eventually(func() error {
			if err := k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: nsBronze, Name: "plain"}, pg); err != nil {
				return err
			}
			pg.Spec.PriorityClassName = "tenant-batch-high"
			return k8sClient.Update(suiteCtx, pg)
		}).Should(MatchError(ContainSubstring("spec.priorityClassName")))
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: nsBronze, Name: "plain"}, pg)).To(Succeed())
		Expect(pg.Spec.PriorityClassName).To(BeEmpty())
		// A PodGroup admitted before the quota keeps being updatable (its class is unchanged).
		Eventually(func() error {
			if err := k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: nsBronze, Name: "high"}, pg); err != nil {
				return err
			}
			pg.Spec.MinMember = 1
			return k8sClient.Update(suiteCtx, pg)
		}).Should(Succeed())
	})

	It("refuses a pod whose checkpoint or minimum-runtime annotation is malformed, naming the annotation and what is allowed", func() {
		bad := testutil.MakePod("ckpt-bad", nsGold).Annotation(v1alpha1.AnnotationMinRuntime, "forever").Obj()
		err := k8sClient.Create(suiteCtx, bad)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring(`annotation workload.kubenexus.io/min-runtime: "forever" must be a duration above 0 and at most 4h0m0s`))
		good := testutil.MakePod("ckpt-good", nsGold).Annotation(v1alpha1.AnnotationMinRuntime, "30m").
			Annotation(v1alpha1.AnnotationLastCheckpoint, "2026-11-29T10:00:00Z").Annotation(v1alpha1.AnnotationCheckpointInterval, "15m").Obj()
		Expect(k8sClient.Create(suiteCtx, good)).To(Succeed())
	})

	It("reads an MPIJob at the version its pods' owner reference names", func() {
		// Kubeflow training-operator v1.x serves MPIJob only as kubeflow.org/v1. The
		// stand-in CRD serves mpi-operator's v2beta1 as well, so this reader answers
		// for v2beta1 as the API server of such a cluster does.
		v2beta1 := schema.GroupVersionKind{Group: "kubeflow.org", Version: "v2beta1", Kind: "MPIJob"}
		mutator := &pod.Mutator{Client: k8sClient, Owners: unservedVersion{Reader: k8sClient, gvk: v2beta1}, Namespace: namespace,
			Decoder: admission.NewDecoder(controllers.NewScheme())}
		for name, want := range map[string]string{"horovod": "5", "horovod-min": "5"} {
			p := testutil.MakePod(name+"-worker-1", nsGold).Label(kf+"replica-type", "worker").Label(kf+"job-name", name).
				Label(kf+"operator-name", "mpijob-controller").Owner("kubeflow.org/v1", "MPIJob", name).Obj()
			raw, err := json.Marshal(p)
			Expect(err).NotTo(HaveOccurred())
			resp := mutator.Handle(suiteCtx, admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: admissionv1.Create, Namespace: nsGold, Object: runtimeapi.RawExtension{Raw: raw},
			}})
			Expect(resp.Allowed).To(BeTrue(), name)
			patch, err := json.Marshal(resp.Patches)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(patch)).NotTo(ContainSubstring(v1alpha1.AnnotationAutoGangSkipped), name)
			Expect(string(patch)).To(ContainSubstring(`"path":"/metadata/labels/pod-group.scheduling.kubenexus.io~1min-available","value":"`+want+`"`), name)
		}
	})

	It("reports a framework job whose pods it cannot gang with an AutoGangSkipped event on the job, except in a dry run", func() {
		worker := func(job string) *corev1.Pod {
			return testutil.MakePod(job+"-worker-0", nsGold).Label(kf+"replica-type", "worker").Label(kf+"job-name", job).
				Label(kf+"operator-name", "pytorchjob-controller").Owner("kubeflow.org/v1", "PyTorchJob", job).Obj()
		}
		notes := func(job string) func() ([]string, error) {
			return func() ([]string, error) {
				return testenv.EventNotes(suiteCtx, k8sClient, nsGold, job, v1alpha1.EventReasonAutoGangSkipped)
			}
		}
		// Dry run first. The recorder posts events from goroutines of its own, so the
		// real pod's event being stored does not prove a dry run's would be by then:
		// the dry run's job is watched for a while after it.
		Expect(k8sClient.Create(suiteCtx, worker("dryghost"), client.DryRunAll)).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, worker("eventghost"))).To(Succeed())
		Eventually(notes("eventghost")).WithTimeout(testutil.Timeout).Should(ConsistOf(
			"Warning: Pods of PyTorchJob eventghost are not ganged: PyTorchJob eventghost not found (read as kubeflow.org/v1): set " +
				v1alpha1.AnnotationGangMinMember + " to group its pods"))
		Consistently(notes("dryghost")).WithTimeout(3 * time.Second).Should(BeEmpty())
	})

	It("a job deleted and recreated smaller at once gets the new size", func() {
		spec := func(workers int64) map[string]any {
			return map[string]any{"pytorchReplicaSpecs": map[string]any{"Worker": map[string]any{"replicas": workers}}}
		}
		admit := func(p *testutil.PodWrapper) map[string]string {
			GinkgoHelper()
			Expect(k8sClient.Create(suiteCtx, p.Obj())).To(Succeed())
			got := &corev1.Pod{}
			Expect(k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(p.Obj()), got)).To(Succeed())
			Expect(got.Annotations).NotTo(HaveKey(v1alpha1.AnnotationAutoGangSkipped))
			return got.Labels
		}
		worker := func(name string) *testutil.PodWrapper {
			return testutil.MakePod(name, nsGold).Label(kf+"replica-type", "worker").Label(kf+"job-name", "resized").Label(kf+"operator-name", "pytorchjob-controller")
		}

		// All of it well within the webhook's 10 s cache lifetime.
		old := owner("kubeflow.org/v1", "PyTorchJob", nsGold, "resized", spec(4))
		Expect(admit(worker("resized-worker-0").OwnerUID("kubeflow.org/v1", "PyTorchJob", "resized", old.GetUID()))).
			To(HaveKeyWithValue(v1alpha1.LabelKubeNexusGangMinAvailable, "4"))

		Expect(k8sClient.Delete(suiteCtx, old)).To(Succeed())
		Eventually(func() error {
			return k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(old), &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob"}})
		}).Should(MatchError(ContainSubstring("not found")))
		recreated := owner("kubeflow.org/v1", "PyTorchJob", nsGold, "resized", spec(2))
		Expect(recreated.GetUID()).NotTo(Equal(old.GetUID()))

		// A pod of the new job, and one whose controller reference the webhook cannot use.
		Expect(admit(worker("resized-worker-1").OwnerUID("kubeflow.org/v1", "PyTorchJob", "resized", recreated.GetUID()))).
			To(HaveKeyWithValue(v1alpha1.LabelKubeNexusGangMinAvailable, "2"))
		Expect(admit(worker("resized-worker-2"))).To(HaveKeyWithValue(v1alpha1.LabelKubeNexusGangMinAvailable, "2"))
	})

	It("refuses a multi-megabyte AdmissionReview without growing", func() {
		wio := &testEnv.WebhookInstallOptions
		url := fmt.Sprintf("https://%s:%d%s", wio.LocalServingHost, wio.LocalServingPort, pod.Path)
		httpClient := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // local test server
		huge := testutil.MakePod("huge", nsGold).Annotation("blob", strings.Repeat("x", 8<<20)).Obj()
		objRaw, err := json.Marshal(huge)
		Expect(err).NotTo(HaveOccurred())
		review, err := json.Marshal(&admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request:  &admissionv1.AdmissionRequest{UID: "big", Operation: admissionv1.Create, Namespace: nsGold, Object: runtimeapi.RawExtension{Raw: objRaw}},
		})
		Expect(err).NotTo(HaveOccurred())

		heap := func() uint64 {
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			return ms.HeapAlloc
		}
		before := heap()
		for range 10 {
			resp, err := httpClient.Post(url, "application/json", bytes.NewReader(review))
			Expect(err).NotTo(HaveOccurred())
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			var out admissionv1.AdmissionReview
			Expect(json.Unmarshal(body, &out)).To(Succeed(), string(body))
			Expect(out.Response.Allowed).To(BeFalse())
			Expect(out.Response.Result.Message).To(ContainSubstring("too large"))
		}
		// Ten 8 MiB reviews were refused after at most MaxRequestBytes each; nothing
		// of them is retained.
		Expect(int64(heap()) - int64(before)).To(BeNumerically("<", 16<<20))
	})

	It("with the webhook down, still admits pods outside KubeNexus scope", func() {
		stopManager()
		Eventually(managerDone).WithTimeout(30 * time.Second).Should(BeClosed())
		DeferCleanup(startManager)

		Expect(k8sClient.Create(suiteCtx, testutil.MakePod("while-down", nsPlain).Obj())).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, testutil.MakePod("while-down-system", "kube-system").Obj())).To(Succeed())
		err := k8sClient.Create(suiteCtx, testutil.MakePod("kubenexus-while-down", nsGold).Obj())
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("pods.scheduling.kubenexus.io"))
	})
})
