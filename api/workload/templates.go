package workload

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Replicas is one kind of pod a workload object runs: the role's name, its pod
// template and how many of its pods run at once.
type Replicas struct {
	Role     string
	Count    int
	Template corev1.PodTemplateSpec
}

// ReplicasOf reads the pods a workload object will run from its spec, for the kinds
// whose pods it can tell without their controller: Pod, Job, Deployment,
// StatefulSet, ReplicaSet, Kubeflow's PyTorchJob, TFJob, XGBoostJob and MPIJob,
// JobSet, RayCluster (workers at minReplicas), RayJob (its cluster) and
// LeaderWorkerSet. Anything else is an error that names the kinds it reads.
func ReplicasOf(obj *unstructured.Unstructured) ([]Replicas, error) {
	spec, _ := obj.Object["spec"].(map[string]any)
	var out []Replicas
	add := func(role string, count int64, tmpl any) error {
		m, ok := tmpl.(map[string]any)
		if !ok {
			return fmt.Errorf("%s %s: %s has no pod template", obj.GetKind(), obj.GetName(), role)
		}
		var t corev1.PodTemplateSpec
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &t); err != nil {
			return fmt.Errorf("%s %s: the pod template of %s: %w", obj.GetKind(), obj.GetName(), role, err)
		}
		if count > 0 {
			out = append(out, Replicas{Role: role, Count: int(bounded(count)), Template: t})
		}
		return nil
	}
	replicas := func(m map[string]any, field string) int64 {
		if n, set := m[field].(int64); set {
			return n
		}
		return 1
	}
	var err error
	switch obj.GroupVersionKind().GroupKind() {
	case corev1.SchemeGroupVersion.WithKind("Pod").GroupKind():
		err = add("pod", 1, map[string]any{"metadata": obj.Object["metadata"], "spec": spec})
	case BatchJob.GroupKind():
		err = add("job", jobPods(spec), spec["template"])
	case schemaKind("apps", "Deployment"), schemaKind("apps", "StatefulSet"), schemaKind("apps", "ReplicaSet"):
		err = add(obj.GetKind(), replicas(spec, "replicas"), spec["template"])
	case PyTorchJob.GroupKind(), TFJob.GroupKind(), XGBoostJob.GroupKind(), MPIJob.GroupKind():
		field := map[string]string{PyTorchJob.Kind: "pytorchReplicaSpecs", TFJob.Kind: "tfReplicaSpecs", XGBoostJob.Kind: "xgbReplicaSpecs", MPIJob.Kind: "mpiReplicaSpecs"}[obj.GetKind()]
		specs, _ := spec[field].(map[string]any)
		roles := make([]string, 0, len(specs))
		for r := range specs {
			roles = append(roles, r)
		}
		sort.Strings(roles)
		for _, r := range roles {
			rm, _ := specs[r].(map[string]any)
			if err = add(r, replicas(rm, "replicas"), rm["template"]); err != nil {
				break
			}
		}
	case JobSet.GroupKind():
		jobs, _ := spec["replicatedJobs"].([]any)
		for _, j := range jobs {
			jm, _ := j.(map[string]any)
			name, _ := jm["name"].(string)
			jobSpec, _ := nested(jm, "template", "spec").(map[string]any)
			if err = add(name, bounded(replicas(jm, "replicas")*jobPods(jobSpec)), jobSpec["template"]); err != nil {
				break
			}
		}
	case RayCluster.GroupKind():
		err = rayReplicas(spec, add)
	case schemaKind("ray.io", "RayJob"):
		cluster, _ := spec["rayClusterSpec"].(map[string]any)
		err = rayReplicas(cluster, add)
	case LeaderWorkerSet.GroupKind():
		groups := replicas(spec, "replicas")
		lwt, _ := spec["leaderWorkerTemplate"].(map[string]any)
		size := replicas(lwt, "size")
		leader := lwt["leaderTemplate"]
		if leader == nil {
			leader = lwt["workerTemplate"]
		}
		if err = add("leader", groups, leader); err == nil && size > 1 {
			err = add("worker", bounded(groups*(size-1)), lwt["workerTemplate"])
		}
	default:
		return nil, fmt.Errorf("%s %s: cannot tell the pods of a %s from its spec; KubeNexus reads Pod, Job, Deployment, StatefulSet, ReplicaSet, PyTorchJob, TFJob, XGBoostJob, MPIJob, JobSet, RayCluster, RayJob and LeaderWorkerSet",
			obj.GetKind(), obj.GetName(), obj.GroupVersionKind().GroupKind())
	}
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s %s: its spec runs no pods", obj.GetKind(), obj.GetName())
	}
	return out, nil
}

// rayReplicas adds a Ray cluster's head and each worker group at its minimum.
func rayReplicas(spec map[string]any, add func(string, int64, any) error) error {
	if err := add("head", 1, nested(spec, "headGroupSpec", "template")); err != nil {
		return err
	}
	groups, _ := spec["workerGroupSpecs"].([]any)
	for _, g := range groups {
		gm, _ := g.(map[string]any)
		name, _ := gm["groupName"].(string)
		hosts := max(intField(gm, "numOfHosts"), 1)
		if err := add(name, bounded(intField(gm, "minReplicas")*hosts), gm["template"]); err != nil {
			return err
		}
	}
	return nil
}

func schemaKind(group, kind string) schema.GroupKind {
	return schema.GroupKind{Group: group, Kind: kind}
}
