package workload

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-nexus/kubenexus/api/workload/frameworks"
)

// Replicas is one kind of pod a workload object runs: the role's name, its pod
// template and how many of its pods run at once.
type Replicas struct {
	Role     string
	Count    int
	Template corev1.PodTemplateSpec
}

// ReplicasOf reads the pods a workload object will run from its spec, for the kinds
// whose pods a framework of the table tells without their controller (Pod, Job,
// Deployment, StatefulSet, ReplicaSet, Kubeflow's jobs, JobSet, RayCluster with its
// workers at minReplicas, RayJob, LeaderWorkerSet). Anything else is an error that
// names the kinds it reads.
func ReplicasOf(obj *unstructured.Unstructured) ([]Replicas, error) {
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
			out = append(out, Replicas{Role: role, Count: int(frameworks.Bounded(count)), Template: t})
		}
		return nil
	}
	gk := obj.GroupVersionKind().GroupKind()
	f := readerOf(gk)
	if f == nil {
		return nil, fmt.Errorf("%s %s: cannot tell the pods of a %s from its spec; KubeNexus reads %s", obj.GetKind(), obj.GetName(), gk, readable())
	}
	err := f.Replicas(obj, add)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s %s: its spec runs no pods", obj.GetKind(), obj.GetName())
	}
	return out, nil
}
