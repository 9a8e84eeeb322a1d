package config

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// BindingBackpressureArgs are the arguments of the BindingBackpressure plugin.
type BindingBackpressureArgs struct {
	metav1.TypeMeta `json:",inline"`

	// MaxBindingsInFlight is how many binding requests may be in flight at once; a
	// scheduling cycle waits while this many pods are in the binding step (default
	// 64; 1–10000).
	MaxBindingsInFlight *int32 `json:"maxBindingsInFlight,omitempty"`
}

// SetDefaultsBindingBackpressureArgs fills unset fields.
func SetDefaultsBindingBackpressureArgs(a *BindingBackpressureArgs) {
	if a.MaxBindingsInFlight == nil {
		a.MaxBindingsInFlight = ptr.To[int32](64)
	}
}

// ValidateBindingBackpressureArgs checks defaulted args.
func ValidateBindingBackpressureArgs(path *field.Path, a *BindingBackpressureArgs) field.ErrorList {
	if v := *a.MaxBindingsInFlight; v < 1 || v > 10000 {
		return field.ErrorList{field.Invalid(path.Child("maxBindingsInFlight"), v, fmt.Sprintf("must be between 1 and 10000, got %d", v))}
	}
	return nil
}

// DecodeBindingBackpressureArgs decodes, defaults and validates BindingBackpressure's args.
func DecodeBindingBackpressureArgs(obj runtime.Object) (*BindingBackpressureArgs, error) {
	return decode(obj, "BindingBackpressureArgs", SetDefaultsBindingBackpressureArgs, ValidateBindingBackpressureArgs)
}
