package config

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// BackfillArgs are the arguments of the Backfill plugin.
type BackfillArgs struct {
	metav1.TypeMeta `json:",inline"`

	// SafetyMarginSeconds is how long before a waiting gang can start a pod whose
	// runtime is bounded must end to borrow the room accumulating for that gang
	// (default 30; 0–3600).
	SafetyMarginSeconds *int32 `json:"safetyMarginSeconds,omitempty"`
}

// SetDefaultsBackfillArgs fills unset fields.
func SetDefaultsBackfillArgs(a *BackfillArgs) {
	if a.SafetyMarginSeconds == nil {
		a.SafetyMarginSeconds = ptr.To[int32](30)
	}
}

// ValidateBackfillArgs checks defaulted args.
func ValidateBackfillArgs(path *field.Path, a *BackfillArgs) field.ErrorList {
	if v := *a.SafetyMarginSeconds; v < 0 || v > 3600 {
		return field.ErrorList{field.Invalid(path.Child("safetyMarginSeconds"), v, fmt.Sprintf("must be between 0 and 3600 seconds, got %d", v))}
	}
	return nil
}

// DecodeBackfillArgs decodes, defaults and validates Backfill's args.
func DecodeBackfillArgs(obj runtime.Object) (*BackfillArgs, error) {
	return decode(obj, "BackfillArgs", SetDefaultsBackfillArgs, ValidateBackfillArgs)
}
