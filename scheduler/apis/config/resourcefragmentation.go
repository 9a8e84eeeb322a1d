package config

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// ResourceFragmentationArgs are the arguments of the ResourceFragmentation plugin,
// which places GPU pods where they fragment GPU capacity least relative to the
// demand that is coming (queued GPU pods and recent arrivals), and keeps nodes whole
// while queued pods need them.
type ResourceFragmentationArgs struct {
	metav1.TypeMeta `json:",inline"`

	// GPUResources are the extended resources that count as GPUs; a node's GPUs are
	// their sum.
	GPUResources []corev1.ResourceName `json:"gpuResources,omitempty"`

	// GPUDeviceClasses are the DRA DeviceClasses whose devices are GPUs (besides the
	// classes whose extendedResourceName is one of GPUResources): a node's devices
	// that match one are its GPUs, and a pod's ResourceClaim request for one asks for
	// GPUs, or for a share of one (consumable capacity, partitions).
	GPUDeviceClasses []string `json:"gpuDeviceClasses,omitempty"`

	// ArrivalHalfLifeSeconds is how fast the memory of recent GPU pod arrivals fades:
	// an arrival counts half after this long.
	ArrivalHalfLifeSeconds *int32 `json:"arrivalHalfLifeSeconds,omitempty"`

	// KeepHostsForQueued adds a Filter: a GPU pod is refused a node when placing it
	// there would leave a larger GPU size that queued pods need with fewer nodes that
	// host it than pods queued for it (default false: the score only prefers other
	// nodes). Queued pods that never start keep the room from smaller pods meanwhile.
	KeepHostsForQueued *bool `json:"keepHostsForQueued,omitempty"`

	// Levels are the topology levels the largest-placeable-gang gauges report, as
	// NetworkFabric's (the KubeNexusConfig's spec.topology.levels).
	Levels []TopologyLevel `json:"levels,omitempty"`
}

// DefaultGPUDeviceClasses are the DeviceClasses of NVIDIA's DRA driver for GPUs:
// whole GPUs and MIG partitions (the KubeNexusConfig's default).
var DefaultGPUDeviceClasses = v1alpha1.DefaultGPUDeviceClasses

// DefaultGPUResources are the extended resources that count as GPUs when a plugin's
// args name none (NVIDIA's device plugin's): one declaration for every plugin that
// counts GPUs (ResourceFragmentation, VRAM, NUMATopology, ResourceReservation,
// GangPreemption; WorkloadAware's accelerators and weights start from it too).
func DefaultGPUResources() []corev1.ResourceName {
	return []corev1.ResourceName{v1alpha1.ResourceNvidiaGPU}
}

// DefaultArrivalHalfLifeSeconds is ten minutes.
const DefaultArrivalHalfLifeSeconds = 600

// SetDefaultsResourceFragmentationArgs fills unset fields.
func SetDefaultsResourceFragmentationArgs(a *ResourceFragmentationArgs) {
	if len(a.GPUResources) == 0 {
		a.GPUResources = DefaultGPUResources()
	}
	if a.GPUDeviceClasses == nil {
		a.GPUDeviceClasses = append([]string(nil), DefaultGPUDeviceClasses...)
	}
	if len(a.Levels) == 0 {
		a.Levels = append([]TopologyLevel(nil), DefaultTopologyLevels...)
	}
	if a.ArrivalHalfLifeSeconds == nil {
		a.ArrivalHalfLifeSeconds = ptr.To[int32](DefaultArrivalHalfLifeSeconds)
	}
	if a.KeepHostsForQueued == nil {
		a.KeepHostsForQueued = ptr.To(false)
	}
}

// ValidateResourceFragmentationArgs checks defaulted args; errors in the levels are
// reported under levelsPath (they come from the KubeNexusConfig's spec.topology).
func ValidateResourceFragmentationArgs(path, levelsPath *field.Path, a *ResourceFragmentationArgs) field.ErrorList {
	errs := validateGPUResources(path.Child("gpuResources"), a.GPUResources)
	for i, c := range a.GPUDeviceClasses {
		for _, msg := range validation.IsDNS1123Subdomain(c) {
			errs = append(errs, field.Invalid(path.Child("gpuDeviceClasses").Index(i), c, "must be a DeviceClass name: "+msg))
		}
	}
	errs = append(errs, validateLevels(levelsPath, a.Levels)...)
	if h := *a.ArrivalHalfLifeSeconds; h < 1 || h > 86400 {
		errs = append(errs, field.Invalid(path.Child("arrivalHalfLifeSeconds"), h, "must be between 1 and 86400 seconds"))
	}
	return errs
}

// DecodeResourceFragmentationArgs decodes, defaults and validates ResourceFragmentation's args.
func DecodeResourceFragmentationArgs(obj runtime.Object) (*ResourceFragmentationArgs, error) {
	a, errs := CheckResourceFragmentationArgs(obj, field.NewPath("ResourceFragmentationArgs"), field.NewPath("ResourceFragmentationArgs"))
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return a, nil
}

// CheckResourceFragmentationArgs decodes, defaults and validates the args as the
// scheduler would, reporting errors under path and those of the topology levels
// under levelsPath (the KubeNexusConfig fields they come from).
func CheckResourceFragmentationArgs(obj runtime.Object, path, levelsPath *field.Path) (*ResourceFragmentationArgs, field.ErrorList) {
	return check(obj, path, SetDefaultsResourceFragmentationArgs, func(path *field.Path, a *ResourceFragmentationArgs) field.ErrorList {
		return ValidateResourceFragmentationArgs(path, levelsPath, a)
	})
}

// validateGPUResources checks a list of the extended resources that count as GPUs.
func validateGPUResources(path *field.Path, names []corev1.ResourceName) field.ErrorList {
	var errs field.ErrorList
	seen := map[corev1.ResourceName]bool{}
	for i, r := range names {
		p := path.Index(i)
		switch {
		case r == "":
			errs = append(errs, field.Required(p, "a resource name"))
		case seen[r]:
			errs = append(errs, field.Duplicate(p, r))
		}
		seen[r] = true
	}
	return errs
}
