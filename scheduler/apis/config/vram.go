package config

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// VRAMArgs are the arguments of the VRAM plugin, which places pods that ask for GPU
// memory (scheduling.kubenexus.io/vram-request) on GPUs that have it, tightest fit
// first.
type VRAMArgs struct {
	metav1.TypeMeta `json:",inline"`

	// GPUResources are the extended resources that count a pod's GPUs (device
	// plugins); their sum is how many GPUs the request applies to.
	GPUResources []corev1.ResourceName `json:"gpuResources,omitempty"`

	// DeviceMemoryCapacities name the DRA device capacity that holds a device's
	// memory, qualified ("gpu.nvidia.com/memory") or in any driver's domain
	// ("memory", as NVIDIA's DRA driver publishes it).
	DeviceMemoryCapacities []string `json:"deviceMemoryCapacities,omitempty"`
}

// SetDefaultsVRAMArgs fills unset fields.
func SetDefaultsVRAMArgs(a *VRAMArgs) {
	if len(a.GPUResources) == 0 {
		a.GPUResources = DefaultGPUResources()
	}
	if len(a.DeviceMemoryCapacities) == 0 {
		a.DeviceMemoryCapacities = []string{"memory"} // hardware.DeviceMemoryCapacity
	}
}

// ValidateVRAMArgs checks defaulted args.
func ValidateVRAMArgs(path *field.Path, a *VRAMArgs) field.ErrorList {
	errs := validateGPUResources(path.Child("gpuResources"), a.GPUResources)
	for i, c := range a.DeviceMemoryCapacities {
		if c == "" || len(c) > 253 {
			errs = append(errs, field.Invalid(path.Child("deviceMemoryCapacities").Index(i), c, fmt.Sprintf("must be a capacity name of 1 to %d characters", 253)))
		}
	}
	return errs
}

// DecodeVRAMArgs decodes, defaults and validates VRAM's args.
func DecodeVRAMArgs(obj runtime.Object) (*VRAMArgs, error) {
	return decode(obj, "VRAMArgs", SetDefaultsVRAMArgs, ValidateVRAMArgs)
}
