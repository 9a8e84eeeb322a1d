// Package ray is KubeNexus's knowledge of KubeRay: a RayCluster's pods name it and
// their node type (head or worker); its worker groups at their minimum size the
// gang. A RayJob creates its RayCluster for its whole life.
package ray

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload/frameworks"
)

// The manager reads the objects that size gangs (the pod webhook auto-groups pods
// by them).
// +kubebuilder:rbac:groups=ray.io,resources=rayclusters,verbs=get

// Labels KubeRay writes on its pods, and on the RayCluster a RayJob creates (the
// kind and name of the RayJob).
const (
	LabelNodeType          = "ray.io/node-type"
	LabelCluster           = "ray.io/cluster"
	LabelOriginatedFromCRD = "ray.io/originated-from-crd"
	LabelOriginatedFrom    = "ray.io/originated-from-cr-name"
)

// RayCluster is the kind, at the version read by default.
var RayCluster = schema.GroupVersionKind{Group: "ray.io", Version: "v1", Kind: "RayCluster"}

// RayJob creates a RayCluster for its whole life. (A RayService replaces its
// RayClusters on an upgrade; each cluster's gang stays that cluster's.)
var RayJob = schema.GroupKind{Group: "ray.io", Kind: "RayJob"}

// Framework is KubeRay.
type Framework struct{ frameworks.Base }

func (Framework) Recognise(l map[string]string, _ string) (frameworks.Recognition, bool) {
	if l[LabelNodeType] == "" {
		return frameworks.Recognition{}, false
	}
	return frameworks.Recognition{Integration: v1alpha1.IntegrationRay,
		Role: frameworks.KnownRole(l[LabelNodeType], v1alpha1.RoleHead, v1alpha1.RoleWorker), Class: v1alpha1.WorkloadClassBatch}, true
}

// Source is the RayCluster the pod names.
func (Framework) Source(pod *corev1.Pod, _ v1alpha1.Integration) (frameworks.Source, bool) {
	return frameworks.Source{GVK: RayCluster, Name: pod.Labels[LabelCluster]}, true
}

func (Framework) Integrations() []v1alpha1.Integration {
	return []v1alpha1.Integration{v1alpha1.IntegrationRay}
}

func (Framework) Owners() []schema.GroupVersionKind { return []schema.GroupVersionKind{RayCluster} }

func (Framework) Reads() []schema.GroupKind {
	return []schema.GroupKind{RayCluster.GroupKind(), RayJob}
}

// Size is the head and every worker group at its minReplicas (times its hosts).
func (Framework) Size(_ frameworks.Source, obj *unstructured.Unstructured) (frameworks.Size, error) {
	return frameworks.Size{Members: members(obj, func(g map[string]any) int64 { return frameworks.Int(g, "minReplicas") })}, nil
}

// MaxMembers is the head and every worker group at its most.
func (Framework) MaxMembers(_ frameworks.Source, obj *unstructured.Unstructured) (int64, bool) {
	return members(obj, func(g map[string]any) int64 {
		return max(frameworks.Int(g, "maxReplicas"), frameworks.Int(g, "replicas"), frameworks.Int(g, "minReplicas"))
	}), true
}

// members is the head and, for every worker group, replicas(group) times its hosts.
func members(obj *unstructured.Unstructured, replicas func(group map[string]any) int64) int64 {
	n := int64(1) // the head
	groups, _ := frameworks.Spec(obj)["workerGroupSpecs"].([]any)
	for _, g := range groups {
		gm, _ := g.(map[string]any)
		hosts := max(frameworks.Int(gm, "numOfHosts"), 1)
		n = frameworks.Bounded(n + frameworks.Bounded(replicas(gm))*frameworks.Bounded(hosts))
	}
	return n
}

// Replicas is a cluster's head and each worker group at its minimum; a RayJob's
// are its cluster's.
func (Framework) Replicas(obj *unstructured.Unstructured, add frameworks.Add) error {
	spec := frameworks.Spec(obj)
	if obj.GroupVersionKind().GroupKind() == RayJob {
		spec, _ = spec["rayClusterSpec"].(map[string]any)
	}
	if err := add("head", 1, frameworks.Nested(spec, "headGroupSpec", "template")); err != nil {
		return err
	}
	groups, _ := spec["workerGroupSpecs"].([]any)
	for _, g := range groups {
		gm, _ := g.(map[string]any)
		name, _ := gm["groupName"].(string)
		hosts := max(frameworks.Int(gm, "numOfHosts"), 1)
		if err := add(name, frameworks.Bounded(frameworks.Int(gm, "minReplicas")*hosts), gm["template"]); err != nil {
			return err
		}
	}
	return nil
}

// Creator: a RayJob creates its RayCluster.
func (Framework) Creator(gk schema.GroupKind) (schema.GroupKind, bool) {
	return RayJob, gk == RayCluster.GroupKind()
}
