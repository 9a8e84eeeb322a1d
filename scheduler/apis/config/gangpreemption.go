package config

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// GangPreemptionArgs are the arguments of the GangPreemption plugin, the PostFilter
// that evicts whole lower-priority gangs and lower-priority pods to make room.
type GangPreemptionArgs struct {
	metav1.TypeMeta `json:",inline"`

	// PreemptServicesForBatch lets batch and training pods evict lower-priority
	// service, inference and interactive pods. Default false: those are preempted
	// only by pods of their own kind.
	PreemptServicesForBatch *bool `json:"preemptServicesForBatch,omitempty"`

	// VictimGraceSeconds is how long a preemptor waits for the pods it evicted to
	// go before it may choose victims again (default 120; 1–3600). While they
	// terminate, further members of its gang do not evict more.
	VictimGraceSeconds *int32 `json:"victimGraceSeconds,omitempty"`

	// GPUResources are the extended resources that count as GPUs: a victim's GPU
	// time thrown away is counted over them (default nvidia.com/gpu).
	GPUResources []corev1.ResourceName `json:"gpuResources,omitempty"`

	// Consolidation moves running pods to make one whole place for a gang the
	// free room holds only in pieces.
	Consolidation *ConsolidationArgs `json:"consolidation,omitempty"`
}

// ConsolidationArgs configure GangPreemption's consolidation (the KubeNexusConfig's
// spec.plugins.gangPreemption.consolidation).
type ConsolidationArgs struct {
	// Enabled turns it on (default true).
	Enabled *bool `json:"enabled,omitempty"`
	// CheckpointedPods also moves pods that declare checkpoints without the
	// preemptible label (default false).
	CheckpointedPods *bool `json:"checkpointedPods,omitempty"`
	// MaxEvictionsPerGang is the most pods moved for one gang (default 4; 1–64).
	MaxEvictionsPerGang *int32 `json:"maxEvictionsPerGang,omitempty"`
	// MaxEvictionsPerHour is the most pods moved in any hour (default 32; 1–10000).
	MaxEvictionsPerHour *int32 `json:"maxEvictionsPerHour,omitempty"`
}

// SetDefaultsGangPreemptionArgs fills unset fields.
func SetDefaultsGangPreemptionArgs(a *GangPreemptionArgs) {
	if a.PreemptServicesForBatch == nil {
		a.PreemptServicesForBatch = ptr.To(false)
	}
	if a.VictimGraceSeconds == nil {
		a.VictimGraceSeconds = ptr.To[int32](120)
	}
	if len(a.GPUResources) == 0 {
		a.GPUResources = DefaultGPUResources()
	}
	if a.Consolidation == nil {
		a.Consolidation = &ConsolidationArgs{}
	}
	c := a.Consolidation
	if c.Enabled == nil {
		c.Enabled = ptr.To(true)
	}
	if c.CheckpointedPods == nil {
		c.CheckpointedPods = ptr.To(false)
	}
	if c.MaxEvictionsPerGang == nil {
		c.MaxEvictionsPerGang = ptr.To[int32](4)
	}
	if c.MaxEvictionsPerHour == nil {
		c.MaxEvictionsPerHour = ptr.To[int32](32)
	}
}

// ValidateGangPreemptionArgs checks defaulted args.
func ValidateGangPreemptionArgs(path *field.Path, a *GangPreemptionArgs) field.ErrorList {
	errs := validateGPUResources(path.Child("gpuResources"), a.GPUResources)
	if v := *a.VictimGraceSeconds; v < 1 || v > 3600 {
		errs = append(errs, field.Invalid(path.Child("victimGraceSeconds"), v, fmt.Sprintf("must be between 1 and 3600 seconds, got %d", v)))
	}
	c := path.Child("consolidation")
	if v := *a.Consolidation.MaxEvictionsPerGang; v < 1 || v > 64 {
		errs = append(errs, field.Invalid(c.Child("maxEvictionsPerGang"), v, fmt.Sprintf("must be between 1 and 64 pods, got %d", v)))
	}
	if v := *a.Consolidation.MaxEvictionsPerHour; v < 1 || v > 10000 {
		errs = append(errs, field.Invalid(c.Child("maxEvictionsPerHour"), v, fmt.Sprintf("must be between 1 and 10000 pods, got %d", v)))
	}
	return errs
}

// DecodeGangPreemptionArgs decodes, defaults and validates GangPreemption's args.
func DecodeGangPreemptionArgs(obj runtime.Object) (*GangPreemptionArgs, error) {
	return decode(obj, "GangPreemptionArgs", SetDefaultsGangPreemptionArgs, ValidateGangPreemptionArgs)
}
