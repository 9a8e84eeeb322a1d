// Package batch is KubeNexus's knowledge of Kubernetes Jobs (batch/v1): a Job's
// pods are a gang of the pods it runs at once.
package batch

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload/frameworks"
)

// The manager reads the objects that size gangs (the pod webhook auto-groups pods
// by them).
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get

// Labels the Job controller writes on its pods (the second before 1.27).
const (
	LabelJobName       = "batch.kubernetes.io/job-name"
	LabelLegacyJobName = "job-name"
)

// Job is the kind.
var Job = schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}

// Framework is the Job controller.
type Framework struct{ frameworks.Base }

func (Framework) Recognise(l map[string]string, controllerKind string) (frameworks.Recognition, bool) {
	if l[LabelJobName] == "" && l[LabelLegacyJobName] == "" && controllerKind != Job.Kind {
		return frameworks.Recognition{}, false
	}
	return frameworks.Recognition{Integration: v1alpha1.IntegrationJob, Class: v1alpha1.WorkloadClassBatch}, true
}

// Source is the Job that controls the pod (a label names no UID to check).
func (Framework) Source(pod *corev1.Pod, _ v1alpha1.Integration) (frameworks.Source, bool) {
	if ref := metav1.GetControllerOf(pod); ref != nil && ref.Kind == Job.Kind && ref.APIVersion == Job.GroupVersion().String() {
		return frameworks.Source{GVK: Job, Name: ref.Name}, true
	}
	return frameworks.Source{}, false
}

func (Framework) Integrations() []v1alpha1.Integration {
	return []v1alpha1.Integration{v1alpha1.IntegrationJob}
}

func (Framework) Owners() []schema.GroupVersionKind { return []schema.GroupVersionKind{Job} }

func (Framework) Reads() []schema.GroupKind { return []schema.GroupKind{Job.GroupKind()} }

// Size is the pods the Job runs at once: min(parallelism, completions).
func (Framework) Size(_ frameworks.Source, obj *unstructured.Unstructured) (frameworks.Size, error) {
	return frameworks.Size{Members: frameworks.JobPods(frameworks.Spec(obj))}, nil
}

// Replicas is the pods the Job runs at once.
func (Framework) Replicas(obj *unstructured.Unstructured, add frameworks.Add) error {
	spec := frameworks.Spec(obj)
	return add("job", frameworks.JobPods(spec), spec["template"])
}
