package config

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// CoschedulingArgs are the arguments of the Coscheduling plugin.
type CoschedulingArgs struct {
	metav1.TypeMeta `json:",inline"`

	// DefaultScheduleTimeoutSeconds is the Permit wait of gangs whose PodGroup sets
	// no scheduleTimeoutSeconds (and of label-only gangs). Default 60.
	DefaultScheduleTimeoutSeconds *int32 `json:"defaultScheduleTimeoutSeconds,omitempty"`

	// BackoffSeconds is how long a rejected gang waits, as a unit, before its members
	// are tried again. Default 10.
	BackoffSeconds *int32 `json:"backoffSeconds,omitempty"`

	// StarvationAgingSeconds turns on starvation aging in the queue: every this many
	// seconds a pod (or gang) has waited count as one point of priority, so that a
	// long-waiting gang eventually overtakes newer ones of slightly higher priority.
	// 0 (the default) orders by priority alone, like kube-scheduler.
	StarvationAgingSeconds *int32 `json:"starvationAgingSeconds,omitempty"`
}

const (
	DefaultScheduleTimeoutSeconds = 60
	DefaultGangBackoffSeconds     = 10
	maxScheduleTimeoutSeconds     = 86400
	maxGangBackoffSeconds         = 3600
)

// SetDefaultsCoschedulingArgs fills unset fields.
func SetDefaultsCoschedulingArgs(a *CoschedulingArgs) {
	if a.DefaultScheduleTimeoutSeconds == nil {
		a.DefaultScheduleTimeoutSeconds = ptr.To[int32](DefaultScheduleTimeoutSeconds)
	}
	if a.BackoffSeconds == nil {
		a.BackoffSeconds = ptr.To[int32](DefaultGangBackoffSeconds)
	}
	if a.StarvationAgingSeconds == nil {
		a.StarvationAgingSeconds = ptr.To[int32](0)
	}
}

// ValidateCoschedulingArgs checks defaulted args.
func ValidateCoschedulingArgs(path *field.Path, a *CoschedulingArgs) field.ErrorList {
	var errs field.ErrorList
	if v := *a.DefaultScheduleTimeoutSeconds; v < 1 || v > maxScheduleTimeoutSeconds {
		errs = append(errs, field.Invalid(path.Child("defaultScheduleTimeoutSeconds"), v, "must be between 1 and 86400"))
	}
	if v := *a.BackoffSeconds; v < 1 || v > maxGangBackoffSeconds {
		errs = append(errs, field.Invalid(path.Child("backoffSeconds"), v, "must be between 1 and 3600"))
	}
	if v := *a.StarvationAgingSeconds; v < 0 || v > maxScheduleTimeoutSeconds {
		errs = append(errs, field.Invalid(path.Child("starvationAgingSeconds"), v, "must be between 0 (off) and 86400"))
	}
	return errs
}

// DecodeCoschedulingArgs decodes, defaults and validates Coscheduling's args.
func DecodeCoschedulingArgs(obj runtime.Object) (*CoschedulingArgs, error) {
	return decode(obj, "CoschedulingArgs", SetDefaultsCoschedulingArgs, ValidateCoschedulingArgs)
}

// CheckCoschedulingArgs decodes, defaults and validates Coscheduling's args as the scheduler
// would, reporting errors under path (the KubeNexusConfig field they come from).
func CheckCoschedulingArgs(obj runtime.Object, path *field.Path) (*CoschedulingArgs, field.ErrorList) {
	return check(obj, path, SetDefaultsCoschedulingArgs, ValidateCoschedulingArgs)
}

// ScheduleTimeout is DefaultScheduleTimeoutSeconds as a duration.
func (a *CoschedulingArgs) ScheduleTimeout() time.Duration {
	return time.Duration(*a.DefaultScheduleTimeoutSeconds) * time.Second
}

// Backoff is BackoffSeconds as a duration.
func (a *CoschedulingArgs) Backoff() time.Duration {
	return time.Duration(*a.BackoffSeconds) * time.Second
}
