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
	"k8s.io/utils/ptr"
)

// Workload is one entry of the mix, as the report lists it.
type Workload struct {
	Name      string
	Namespace string
	Kind      string // Deployment, SparkApplication, PyTorchJob, Job
	// Selector selects its pods.
	Selector map[string]string
	// Gang is the PodGroup its pods form ("" for none).
	Gang string
	// Size is how many pods it runs at once.
	Size int
	// Finish: the demo completes these pods itself once they all run (kwok
	// completes only Job pods).
	Finish bool
	// TooBig: a gang that needs more than the whole fleet has. It must bind no pod
	// at all, and its PodGroup must say why.
	TooBig bool
}

// Mix is the workload mix the demo submits.
var Mix = []Workload{
	{Name: "storefront", Namespace: NSWeb, Kind: "Deployment", Selector: map[string]string{"app": "storefront"}, Size: 6},
	{Name: "etl", Namespace: NSData, Kind: "SparkApplication", Selector: map[string]string{"sparkoperator.k8s.io/app-name": "etl"}, Gang: "etl-spark", Size: 5, Finish: true},
	{Name: "llm-finetune", Namespace: NSML, Kind: "PyTorchJob", Selector: map[string]string{"training.kubeflow.org/job-name": "llm-finetune"}, Gang: "llm-finetune-pytorch", Size: 4, Finish: true},
	{Name: "resnet", Namespace: NSML, Kind: "PyTorchJob", Selector: map[string]string{"training.kubeflow.org/job-name": "resnet"}, Gang: "resnet-pytorch", Size: 2, Finish: true},
	// 17 pods of 8 GPUs: the fleet has 16 eight-GPU nodes.
	{Name: "llm-pretrain", Namespace: NSML, Kind: "PyTorchJob", Selector: map[string]string{"training.kubeflow.org/job-name": "llm-pretrain"}, Gang: "llm-pretrain-pytorch", Size: 17, TooBig: true},
	{Name: "nightly-report", Namespace: NSData, Kind: "Job", Selector: map[string]string{"batch.kubernetes.io/job-name": "nightly-report"}, Size: 3},
	{Name: "feature-backfill", Namespace: NSData, Kind: "Job", Selector: map[string]string{"batch.kubernetes.io/job-name": "feature-backfill"}, Size: 2},
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

// Submit creates the mix. Pods of Spark and PyTorch are created here the way their
// operators create them (their operators do not run in the demo; their CRDs do
// exist, so the webhook reads each job's size from its object). Deployments and
// Jobs are turned into pods by the real controllers of kube-controller-manager.
func (c *Cluster) Submit(ctx context.Context) error {
	c.logf("submitting the workload mix: a services Deployment, Spark, three PyTorchJobs (one larger than the fleet), two batch Jobs")

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

	// PyTorchJobs: a master and workers, each with whole GPU boards or halves. The
	// last needs 17 whole boards where the fleet has 16: it waits, holding nothing.
	for _, job := range []struct {
		name    string
		workers int
		gpus    int64
	}{{"llm-finetune", 3, 8}, {"resnet", 1, 4}, {"llm-pretrain", 16, 8}} {
		c.submitted[job.name] = time.Now()
		if err := c.createObject(ctx, "kubeflow.org/v1", "PyTorchJob", NSML, job.name, map[string]any{"pytorchReplicaSpecs": map[string]any{
			"Master": map[string]any{"replicas": int64(1)}, "Worker": map[string]any{"replicas": int64(job.workers)},
		}}); err != nil {
			return err
		}
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("kubeflow.org/v1")
		u.SetKind("PyTorchJob")
		if err := c.Client.Get(ctx, keyOf(NSML, job.name), u); err != nil {
			return err
		}
		owner := metav1.OwnerReference{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Name: job.name, UID: u.GetUID(), Controller: ptr.To(true)}
		for i := 0; i <= job.workers; i++ {
			role, idx := "master", i
			if i > 0 {
				role, idx = "worker", i-1
			}
			p := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s-%d", job.name, role, idx), Namespace: NSML, OwnerReferences: []metav1.OwnerReference{owner},
					Labels: map[string]string{
						"training.kubeflow.org/job-name": job.name, "training.kubeflow.org/replica-type": role,
						"training.kubeflow.org/replica-index": fmt.Sprint(idx), "training.kubeflow.org/operator-name": "pytorchjob-controller",
					}},
				Spec: corev1.PodSpec{Containers: container(res("16", "128Gi", job.gpus))},
			}
			if err := c.Client.Create(ctx, p); err != nil {
				return err
			}
		}
	}

	// Batch Jobs, run by the real Job controller; kwok completes their pods.
	for _, j := range []struct {
		name                    string
		parallelism, completion int32
	}{{"nightly-report", 3, 6}, {"feature-backfill", 2, 4}} {
		job := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: j.name, Namespace: NSData},
			Spec: batchv1.JobSpec{
				Parallelism: ptr.To(j.parallelism), Completions: ptr.To(j.completion),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: container(res("1", "2Gi", 0))}},
			},
		}
		c.submitted[j.name] = time.Now()
		if err := c.Client.Create(ctx, job); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) createObject(ctx context.Context, apiVersion, kind, ns, name string, spec map[string]any) error {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "spec": spec}}
	u.SetNamespace(ns)
	u.SetName(name)
	return c.Client.Create(ctx, u)
}
