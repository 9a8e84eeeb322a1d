// Package apps is KubeNexus's knowledge of Kubernetes' own workloads: the pods of
// Deployments, StatefulSets, ReplicaSets, DaemonSets and ReplicationControllers are
// services (spread, never starved); the pods of a Deployment, StatefulSet,
// ReplicaSet or a bare Pod can be told from their specs.
package apps

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload/frameworks"
)

// Framework is Kubernetes' own workload controllers.
type Framework struct{ frameworks.Base }

func (Framework) Recognise(_ map[string]string, controllerKind string) (frameworks.Recognition, bool) {
	switch controllerKind {
	case "ReplicaSet", "Deployment", "StatefulSet", "DaemonSet", "ReplicationController":
		return frameworks.Recognition{Class: v1alpha1.WorkloadClassService}, true
	}
	return frameworks.Recognition{}, false
}

var pod = schema.GroupKind{Kind: "Pod"}

func (Framework) Reads() []schema.GroupKind {
	return []schema.GroupKind{pod, {Group: "apps", Kind: "Deployment"}, {Group: "apps", Kind: "StatefulSet"}, {Group: "apps", Kind: "ReplicaSet"}}
}

// Replicas is a bare Pod, or spec.replicas pods of the controller's template.
func (Framework) Replicas(obj *unstructured.Unstructured, add frameworks.Add) error {
	spec := frameworks.Spec(obj)
	if obj.GroupVersionKind().GroupKind() == pod {
		return add("pod", 1, map[string]any{"metadata": obj.Object["metadata"], "spec": spec})
	}
	return add(obj.GetKind(), frameworks.Replicas(spec, "replicas"), spec["template"])
}
