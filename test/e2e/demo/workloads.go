package demo

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// Workload is one entry of the mix, as the report lists it.
type Workload struct {
	Name      string
	Namespace string
	Kind      string // Deployment, SparkApplication, PyTorchJob, MPIJob, Job
	// Selector selects its pods.
	Selector map[string]string
	// Gang is the PodGroup its pods form ("" for none).
	Gang string
	// ForeignGang is the API group of another scheduler's PodGroup that Kubeflow's
	// training-operator created as Gang (--gang-scheduler-name): scheduler-plugins'
	// scheduling.x-k8s.io or Volcano's scheduling.volcano.sh; "" for KubeNexus
	// gangs. KubeNexus keeps its status; the operator deletes it once the job has
	// finished.
	ForeignGang string
	// Size is how many pods it runs at once.
	Size int
	// Finish: the demo completes these pods itself once they all run (kwok
	// completes only Job pods).
	Finish bool
	// TooBig: a gang that needs more than the whole fleet has. It must bind no pod
	// at all, and its PodGroup must say why.
	TooBig bool
	// GPUs each of its pods asks for, for workloads outside a gang (services and
	// Jobs are otherwise CPU-only).
	GPUs int
	// NUMA is the NUMA policy its pods ask for; VRAM the GPU memory per GPU.
	NUMA v1alpha1.NUMAPolicy
	VRAM string
}

// Kubeflow reports whether Kubeflow's training-operator runs the workload.
func (w Workload) Kubeflow() bool { return w.Kind == "PyTorchJob" || w.Kind == "MPIJob" }

func kubeflowJob(name string) map[string]string {
	return map[string]string{"training.kubeflow.org/job-name": name}
}

// Mix is the workload mix the demo submits.
var Mix = []Workload{
	{Name: "storefront", Namespace: NSWeb, Kind: "Deployment", Selector: map[string]string{"app": "storefront"}, Size: 6},
	{Name: "etl", Namespace: NSData, Kind: "SparkApplication", Selector: map[string]string{"sparkoperator.k8s.io/app-name": "etl"}, Gang: "etl-spark", Size: 5, Finish: true},
	// Run by the training-operator in its default mode: KubeNexus gangs their pods.
	{Name: "llm-finetune", Namespace: NSML, Kind: "PyTorchJob", Selector: kubeflowJob("llm-finetune"), Gang: "llm-finetune-pytorch", Size: 4, Finish: true},
	{Name: "resnet", Namespace: NSML, Kind: "PyTorchJob", Selector: kubeflowJob("resnet"), Gang: "resnet-pytorch", Size: 2, Finish: true},
	// The launcher and two workers, created together by MPIJob v1.
	{Name: "allreduce", Namespace: NSML, Kind: "MPIJob", Selector: kubeflowJob("allreduce"), Gang: "allreduce-mpi", Size: 3, Finish: true},
	// 17 pods of 8 GPUs: the fleet has 16 eight-GPU nodes.
	{Name: "llm-pretrain", Namespace: NSML, Kind: "PyTorchJob", Selector: kubeflowJob("llm-pretrain"), Gang: "llm-pretrain-pytorch", Size: 17, TooBig: true},
	// Run by the training-operator with --gang-scheduler-name=kubenexus-scheduler:
	// its own scheduling.x-k8s.io PodGroup, named after the job.
	{Name: "bert", Namespace: NSResearch, Kind: "PyTorchJob", Selector: kubeflowJob("bert"), Gang: "bert", ForeignGang: v1alpha1.SigsPodGroupGroup, Size: 2, Finish: true},
	// Run by the training-operator with --gang-scheduler-name=volcano: its own Volcano
	// PodGroup, which KubeNexus admits (Inqueue) and schedules.
	{Name: "gpt", Namespace: NSHPC, Kind: "PyTorchJob", Selector: kubeflowJob("gpt"), Gang: "gpt", ForeignGang: v1alpha1.VolcanoPodGroupGroup, Size: 2, Finish: true},
	{Name: "nightly-report", Namespace: NSData, Kind: "Job", Selector: map[string]string{"batch.kubernetes.io/job-name": "nightly-report"}, Size: 3},
	{Name: "feature-backfill", Namespace: NSData, Kind: "Job", Selector: map[string]string{"batch.kubernetes.io/job-name": "feature-backfill"}, Size: 2},
	// A NUMA-pinned inference service (Guaranteed, single-numa) and a Job that needs
	// 70Gi of GPU memory per GPU (80 GB cards only).
	{Name: "llm-inference", Namespace: NSML, Kind: "Deployment", Selector: map[string]string{"app": "llm-inference"}, Size: 2, GPUs: 1, NUMA: v1alpha1.NUMAPolicySingleNUMA},
	{Name: "embeddings", Namespace: NSData, Kind: "Job", Selector: map[string]string{"batch.kubernetes.io/job-name": "embeddings"}, Size: 2, GPUs: 1, VRAM: "70Gi"},
}

func container(req corev1.ResourceList) []corev1.Container {
	limits := corev1.ResourceList{}
	if q, ok := req[corev1.ResourceName("nvidia.com/gpu")]; ok {
		limits["nvidia.com/gpu"] = q
	}
	return []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{Requests: req, Limits: limits}}}
}

func res(cpu, mem string, gpus int64) corev1.ResourceList {
	r := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	if gpus > 0 {
		r["nvidia.com/gpu"] = *resource.NewQuantity(gpus, resource.DecimalSI)
	}
	return r
}

// Submit creates the mix. Spark's pods are created here the way its operator
// creates them (the Spark operator does not run in the demo; a stand-in of its CRD
// does, so the webhook reads the executor count from the SparkApplication).
// PyTorchJobs and the MPIJob are run by Kubeflow's training-operator, Deployments
// and Jobs by the real controllers of kube-controller-manager.
func (c *Cluster) Submit(ctx context.Context) error {
	c.logf("submitting the workload mix: a services Deployment, Spark, five PyTorchJobs (one larger than the fleet, one in scheduler-plugins mode, one in Volcano mode) and an MPIJob for the training-operator, two batch Jobs, a NUMA-pinned inference Deployment and a Job that needs 70Gi of GPU memory")

	if err := c.watchForeignPhases(ctx); err != nil {
		return err
	}

	// Services: spread over zones, as a service owner asks for.
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "storefront", Namespace: NSWeb},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](6),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "storefront"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "storefront"}},
				Spec: corev1.PodSpec{
					Containers: container(res("500m", "1Gi", 0)),
					TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
						MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.DoNotSchedule,
						LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "storefront"}},
					}},
				},
			},
		},
	}
	c.submitted["storefront"] = time.Now()
	if err := c.Client.Create(ctx, dep); err != nil {
		return err
	}

	// Spark on the operator: a SparkApplication, its driver, then executors owned by the driver.
	c.submitted["etl"] = time.Now()
	if err := c.createObject(ctx, "sparkoperator.k8s.io/v1beta2", "SparkApplication", NSData, "etl", map[string]any{
		"type": "Scala", "mode": "cluster", "mainClass": "com.example.ETL",
		"driver":   map[string]any{"cores": int64(2), "memory": "4g"},
		"executor": map[string]any{"instances": int64(4), "cores": int64(4), "memory": "8g"},
	}); err != nil {
		return err
	}
	sparkLabels := func(role string) map[string]string {
		return map[string]string{"spark-role": role, "sparkoperator.k8s.io/app-name": "etl", "spark-app-selector": "spark-7f3a9c", "sparkoperator.k8s.io/launched-by-spark-operator": "true"}
	}
	driver := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "etl-driver", Namespace: NSData, Labels: sparkLabels("driver")},
		Spec: corev1.PodSpec{Containers: container(res("2", "4Gi", 0))}}
	if err := c.Client.Create(ctx, driver); err != nil {
		return err
	}
	for i := 1; i <= 4; i++ {
		exec := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("etl-exec-%d", i), Namespace: NSData, Labels: sparkLabels("executor"),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: driver.Name, UID: driver.UID, Controller: ptr.To(true)}}},
			Spec: corev1.PodSpec{Containers: container(res("4", "8Gi", 0))}}
		if err := c.Client.Create(ctx, exec); err != nil {
			return err
		}
	}

	// Kubeflow jobs, for the training-operator: PyTorchJobs of a master and workers,
	// each with whole GPU boards or halves (llm-pretrain needs 17 whole boards where
	// the fleet has 16: it waits, holding nothing), and an MPIJob whose launcher needs
	// no GPU. bert is in the namespace of the operator in scheduler-plugins mode.
	const pytorchImage, mpiImage = "nvcr.io/nvidia/pytorch:24.05-py3", "mpioperator/mpi-pi:openmpi"
	for _, job := range []struct {
		ns, name string
		workers  int64
		gpus     int64
	}{{NSML, "llm-finetune", 3, 8}, {NSML, "resnet", 1, 4}, {NSML, "llm-pretrain", 16, 8}, {NSResearch, "bert", 1, 4}, {NSHPC, "gpt", 1, 4}} {
		c.submitted[job.name] = time.Now()
		if err := c.createObject(ctx, "kubeflow.org/v1", "PyTorchJob", job.ns, job.name, map[string]any{"pytorchReplicaSpecs": map[string]any{
			"Master": replicaSpec(1, "pytorch", pytorchImage, res("16", "128Gi", job.gpus), "torchrun", "train.py"),
			"Worker": replicaSpec(job.workers, "pytorch", pytorchImage, res("16", "128Gi", job.gpus), "torchrun", "train.py"),
		}}); err != nil {
			return fmt.Errorf("creating PyTorchJob %s/%s: %w", job.ns, job.name, err)
		}
	}
	c.submitted["allreduce"] = time.Now()
	if err := c.createObject(ctx, "kubeflow.org/v1", "MPIJob", NSML, "allreduce", map[string]any{
		"slotsPerWorker": int64(4),
		"mpiReplicaSpecs": map[string]any{
			"Launcher": replicaSpec(1, "mpi-launcher", mpiImage, res("1", "2Gi", 0), "mpirun", "-np", "8", "/home/mpiuser/pi"),
			"Worker":   replicaSpec(2, "mpi-worker", mpiImage, res("16", "64Gi", 4)),
		},
	}); err != nil {
		return fmt.Errorf("creating MPIJob %s/allreduce: %w", NSML, err)
	}

	// Inference pinned to one NUMA cell: whole CPUs, memory and a GPU from one socket.
	pinned := res("16", "64Gi", 1)
	inference := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "llm-inference", Namespace: NSML},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "llm-inference"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      map[string]string{"app": "llm-inference"},
					Annotations: map[string]string{v1alpha1.AnnotationNUMAPolicy: string(v1alpha1.NUMAPolicySingleNUMA)},
				},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Image: "nvcr.io/nvidia/tritonserver:24.05-py3",
					Resources: corev1.ResourceRequirements{Requests: pinned, Limits: pinned}}}},
			},
		},
	}
	c.submitted["llm-inference"] = time.Now()
	if err := c.Client.Create(ctx, inference); err != nil {
		return err
	}

	// Batch Jobs, run by the real Job controller; kwok completes their pods.
	for _, j := range []struct {
		name                    string
		parallelism, completion int32
		gpus                    int64
		vram                    string
	}{{"nightly-report", 3, 6, 0, ""}, {"feature-backfill", 2, 4, 0, ""}, {"embeddings", 2, 2, 1, "70Gi"}} {
		job := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: j.name, Namespace: NSData},
			Spec: batchv1.JobSpec{
				Parallelism: ptr.To(j.parallelism), Completions: ptr.To(j.completion),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: container(res("1", "2Gi", j.gpus))}},
			},
		}
		if j.vram != "" {
			job.Spec.Template.Annotations = map[string]string{v1alpha1.AnnotationVRAMRequest: j.vram}
		}
		c.submitted[j.name] = time.Now()
		if err := c.Client.Create(ctx, job); err != nil {
			return err
		}
	}
	return nil
}

// replicaSpec is a Kubeflow ReplicaSpec of one container.
func replicaSpec(replicas int64, name, image string, req corev1.ResourceList, command ...string) map[string]any {
	ctr := container(req)[0]
	ctr.Name, ctr.Image, ctr.Command = name, image, command
	tmpl, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{ctr}}})
	if err != nil {
		panic(err) // a PodTemplateSpec always converts
	}
	delete(tmpl, "metadata")
	return map[string]any{"replicas": replicas, "template": tmpl}
}

func (c *Cluster) createObject(ctx context.Context, apiVersion, kind, ns, name string, spec map[string]any) error {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "spec": spec}}
	u.SetNamespace(ns)
	u.SetName(name)
	return c.Client.Create(ctx, u)
}
