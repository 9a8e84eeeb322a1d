package config

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// NUMATopologyArgs are the arguments of the NUMATopology plugin, which places pods
// with a NUMA policy (their own hint, or the kubelet's topology manager policy a
// NodeResourceTopology reports) where the kubelet will admit them.
type NUMATopologyArgs struct {
	metav1.TypeMeta `json:",inline"`

	// GPUResources are the extended resources counted per cell on nodes described
	// by the fallback labels (numa.kubenexus.io/node-<i>-gpus, else an even share).
	// NodeResourceTopology objects name their resources themselves.
	GPUResources []corev1.ResourceName `json:"gpuResources,omitempty"`
}

// SetDefaultsNUMATopologyArgs fills unset fields.
func SetDefaultsNUMATopologyArgs(a *NUMATopologyArgs) {
	if len(a.GPUResources) == 0 {
		a.GPUResources = DefaultGPUResources()
	}
}

// ValidateNUMATopologyArgs checks defaulted args.
func ValidateNUMATopologyArgs(path *field.Path, a *NUMATopologyArgs) field.ErrorList {
	return validateGPUResources(path.Child("gpuResources"), a.GPUResources)
}

// DecodeNUMATopologyArgs decodes, defaults and validates NUMATopology's args.
func DecodeNUMATopologyArgs(obj runtime.Object) (*NUMATopologyArgs, error) {
	return decode(obj, "NUMATopologyArgs", SetDefaultsNUMATopologyArgs, ValidateNUMATopologyArgs)
}
