// Package spark is KubeNexus's knowledge of Apache Spark on Kubernetes: pods of
// spark-submit (spark-role) and of the Spark operator's SparkApplications, whose
// spec sizes the gang (the driver and its executors).
package spark

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload/frameworks"
)

// The manager reads the objects that size gangs (the pod webhook auto-groups pods
// by them).
// +kubebuilder:rbac:groups=sparkoperator.k8s.io,resources=sparkapplications,verbs=get

// Labels Spark writes on its pods.
const (
	LabelRole        = "spark-role"
	LabelOperatorApp = "sparkoperator.k8s.io/app-name"
)

// SparkApplication is the Spark operator's kind, at the version read by default.
var SparkApplication = schema.GroupVersionKind{Group: "sparkoperator.k8s.io", Version: "v1beta2", Kind: "SparkApplication"}

// Framework is Spark.
type Framework struct{ frameworks.Base }

func (Framework) Recognise(l map[string]string, _ string) (frameworks.Recognition, bool) {
	if l[LabelRole] == "" && l[LabelOperatorApp] == "" {
		return frameworks.Recognition{}, false
	}
	return frameworks.Recognition{Integration: v1alpha1.IntegrationSpark,
		Role: frameworks.KnownRole(l[LabelRole], v1alpha1.RoleDriver, v1alpha1.RoleExecutor), Class: v1alpha1.WorkloadClassBatch}, true
}

// Source is the SparkApplication the pod names; spark-submit without the operator
// has no object that knows the executor count.
func (Framework) Source(pod *corev1.Pod, _ v1alpha1.Integration) (frameworks.Source, bool) {
	return frameworks.Source{GVK: SparkApplication, Name: pod.Labels[LabelOperatorApp]}, true
}

func (Framework) Integrations() []v1alpha1.Integration {
	return []v1alpha1.Integration{v1alpha1.IntegrationSpark}
}

func (Framework) Owners() []schema.GroupVersionKind {
	return []schema.GroupVersionKind{SparkApplication}
}

// Size is the driver and its executors; with dynamic allocation, the minimum.
func (Framework) Size(_ frameworks.Source, obj *unstructured.Unstructured) (frameworks.Size, error) {
	return frameworks.Size{Members: 1 + executors(obj, func(dynamic map[string]any, _ int64) int64 { return frameworks.Int(dynamic, "minExecutors") })}, nil
}

// MaxMembers is the driver and its executors; with dynamic allocation, the most.
func (Framework) MaxMembers(_ frameworks.Source, obj *unstructured.Unstructured) (int64, bool) {
	return 1 + executors(obj, func(dynamic map[string]any, instances int64) int64 {
		return max(instances, frameworks.Int(dynamic, "maxExecutors"))
	}), true
}

// executors is spec.executor.instances, or what dynamic makes of it (of
// spec.dynamicAllocation) when dynamic allocation is enabled; bounded.
func executors(obj *unstructured.Unstructured, dynamic func(alloc map[string]any, instances int64) int64) int64 {
	spec := frameworks.Spec(obj)
	n := frameworks.Int(spec, "executor", "instances")
	if alloc, _ := spec["dynamicAllocation"].(map[string]any); alloc != nil {
		if enabled, _ := alloc["enabled"].(bool); enabled {
			n = dynamic(alloc, n)
		}
	}
	return frameworks.Bounded(n)
}
