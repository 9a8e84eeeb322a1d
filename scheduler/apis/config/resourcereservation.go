package config

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// ResourceReservationArgs are the arguments of the ResourceReservation plugin, which
// holds the capacity of ResourceReservations for their owners and places the
// reservations that name no node.
type ResourceReservationArgs struct {
	metav1.TypeMeta `json:",inline"`

	// PlacementRetrySeconds is how often a reservation that fits no node is tried
	// again (default 5; 1–300). Reservation changes retry it at once.
	PlacementRetrySeconds *int32 `json:"placementRetrySeconds,omitempty"`

	// GPUResources are the extended resources that count as GPUs: a reservation
	// whose slot asks for one is placed where it leaves the fewest of them idle
	// (default nvidia.com/gpu).
	GPUResources []corev1.ResourceName `json:"gpuResources,omitempty"`
}

// SetDefaultsResourceReservationArgs fills unset fields.
func SetDefaultsResourceReservationArgs(a *ResourceReservationArgs) {
	if a.PlacementRetrySeconds == nil {
		a.PlacementRetrySeconds = ptr.To[int32](5)
	}
	if len(a.GPUResources) == 0 {
		a.GPUResources = DefaultGPUResources()
	}
}

// ValidateResourceReservationArgs checks defaulted args.
func ValidateResourceReservationArgs(path *field.Path, a *ResourceReservationArgs) field.ErrorList {
	errs := validateGPUResources(path.Child("gpuResources"), a.GPUResources)
	if v := *a.PlacementRetrySeconds; v < 1 || v > 300 {
		errs = append(errs, field.Invalid(path.Child("placementRetrySeconds"), v, fmt.Sprintf("must be between 1 and 300 seconds, got %d", v)))
	}
	return errs
}

// DecodeResourceReservationArgs decodes, defaults and validates ResourceReservation's args.
func DecodeResourceReservationArgs(obj runtime.Object) (*ResourceReservationArgs, error) {
	return decode(obj, "ResourceReservationArgs", SetDefaultsResourceReservationArgs, ValidateResourceReservationArgs)
}
