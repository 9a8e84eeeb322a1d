package config

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// WorkloadAwareArgs are the arguments of the WorkloadAware plugin, which scores nodes
// by the pod's workload class: classes in PackClasses (batch and training by default)
// go to the most-allocated nodes, so that whole nodes stay free for the jobs that
// need them; the others (services, inference, interactive) to the least-allocated,
// so that they keep headroom. A pod that asks for no accelerator keeps off nodes
// that have one while other nodes can take it.
type WorkloadAwareArgs struct {
	metav1.TypeMeta `json:",inline"`

	// Resources are the resources whose allocation drives the score, with their
	// relative weights. Only the resources the pod requests count for it.
	Resources []ResourceWeight `json:"resources,omitempty"`

	// PackClasses are the workload classes (workload.kubenexus.io/type values) that
	// are packed; every other class is spread.
	PackClasses []string `json:"packClasses,omitempty"`

	// AcceleratorResources are the resources that make a node an accelerator node.
	AcceleratorResources []string `json:"acceleratorResources,omitempty"`

	// AcceleratorNodeScore is the score (0–100) of an accelerator node for a pod that
	// requests none of AcceleratorResources. Other nodes score it 50–100, so that the
	// pod still runs on an accelerator node when no other node has room.
	AcceleratorNodeScore *int32 `json:"acceleratorNodeScore,omitempty"`
}

// ResourceWeight weighs one resource.
type ResourceWeight struct {
	Name   corev1.ResourceName `json:"name"`
	Weight int32               `json:"weight"`
}

// Workload classes packed by default.
var DefaultPackClasses = []string{"batch", "training"}

// DefaultWorkloadAwareResources are the default resource weights: GPUs weigh most.
var DefaultWorkloadAwareResources = []ResourceWeight{{Name: corev1.ResourceCPU, Weight: 1}, {Name: corev1.ResourceMemory, Weight: 1}, {Name: v1alpha1.ResourceNvidiaGPU, Weight: 3}}

// SetDefaultsWorkloadAwareArgs fills unset fields.
func SetDefaultsWorkloadAwareArgs(a *WorkloadAwareArgs) {
	if len(a.Resources) == 0 {
		a.Resources = slices.Clone(DefaultWorkloadAwareResources)
	}
	if a.PackClasses == nil {
		a.PackClasses = slices.Clone(DefaultPackClasses)
	}
	if len(a.AcceleratorResources) == 0 {
		a.AcceleratorResources = []string{string(v1alpha1.ResourceNvidiaGPU)}
	}
	if a.AcceleratorNodeScore == nil {
		a.AcceleratorNodeScore = ptr.To[int32](0)
	}
}

// knownClasses are the workload classes the webhook and ProfileClassifier assign.
var knownClasses = []string{"service", "batch", "training", "inference", "interactive"}

// ValidateWorkloadAwareArgs checks defaulted args.
func ValidateWorkloadAwareArgs(path *field.Path, a *WorkloadAwareArgs) field.ErrorList {
	var errs field.ErrorList
	seen := map[corev1.ResourceName]bool{}
	for i, r := range a.Resources {
		p := path.Child("resources").Index(i)
		if r.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), "a resource name"))
		}
		if seen[r.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), r.Name))
		}
		seen[r.Name] = true
		if r.Weight < 1 || r.Weight > 100 {
			errs = append(errs, field.Invalid(p.Child("weight"), r.Weight, "must be between 1 and 100"))
		}
	}
	for i, c := range a.PackClasses {
		if !slices.Contains(knownClasses, c) {
			errs = append(errs, field.NotSupported(path.Child("packClasses").Index(i), c, knownClasses))
		}
	}
	for i, r := range a.AcceleratorResources {
		if r == "" {
			errs = append(errs, field.Required(path.Child("acceleratorResources").Index(i), "a resource name"))
		}
	}
	if s := *a.AcceleratorNodeScore; s < 0 || s > 100 {
		errs = append(errs, field.Invalid(path.Child("acceleratorNodeScore"), s, "must be between 0 and 100 (the node score scale)"))
	}
	return errs
}

// DecodeWorkloadAwareArgs decodes, defaults and validates WorkloadAware's args.
func DecodeWorkloadAwareArgs(obj runtime.Object) (*WorkloadAwareArgs, error) {
	return decode(obj, "WorkloadAwareArgs", SetDefaultsWorkloadAwareArgs, ValidateWorkloadAwareArgs)
}

// CheckWorkloadAwareArgs decodes, defaults and validates WorkloadAware's args as the scheduler
// would, reporting errors under path (the KubeNexusConfig field they come from).
func CheckWorkloadAwareArgs(obj runtime.Object, path *field.Path) (*WorkloadAwareArgs, field.ErrorList) {
	return check(obj, path, SetDefaultsWorkloadAwareArgs, ValidateWorkloadAwareArgs)
}
