package config

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// TenantHardwareArgs are the arguments of the TenantHardware plugin. Scores are on
// the scheduler's 0–100 node score scale; a node in a HardwareTier the pod's tenant
// tier is allowed on scores between 50 and 100 by how well the tier's rank suits the
// tenant tier (gold: the highest rank, bronze: the lowest, silver: the middle).
type TenantHardwareArgs struct {
	metav1.TypeMeta `json:",inline"`

	// UntieredNodeScore is the score of a node no HardwareTier selects. Default 50:
	// as good as the least suitable allowed tier.
	UntieredNodeScore *int32 `json:"untieredNodeScore,omitempty"`

	// BorrowedNodeScore is the score of a node a pod may only borrow (its
	// HardwareTier does not allow the pod's tenant tier, has borrowing Preemptible,
	// and the pod is preemptible). Default 0: borrowed capacity is the last resort.
	BorrowedNodeScore *int32 `json:"borrowedNodeScore,omitempty"`
}

const (
	DefaultUntieredNodeScore = 50
	DefaultBorrowedNodeScore = 0
)

// SetDefaultsTenantHardwareArgs fills unset fields.
func SetDefaultsTenantHardwareArgs(a *TenantHardwareArgs) {
	if a.UntieredNodeScore == nil {
		a.UntieredNodeScore = ptr.To[int32](DefaultUntieredNodeScore)
	}
	if a.BorrowedNodeScore == nil {
		a.BorrowedNodeScore = ptr.To[int32](DefaultBorrowedNodeScore)
	}
}

// ValidateTenantHardwareArgs checks defaulted args.
func ValidateTenantHardwareArgs(path *field.Path, a *TenantHardwareArgs) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct {
		name string
		v    int32
	}{{"untieredNodeScore", *a.UntieredNodeScore}, {"borrowedNodeScore", *a.BorrowedNodeScore}} {
		if f.v < 0 || f.v > 100 {
			errs = append(errs, field.Invalid(path.Child(f.name), f.v, "must be between 0 and 100 (the node score scale)"))
		}
	}
	return errs
}

// DecodeTenantHardwareArgs decodes, defaults and validates TenantHardware's args.
func DecodeTenantHardwareArgs(obj runtime.Object) (*TenantHardwareArgs, error) {
	return decode(obj, "TenantHardwareArgs", SetDefaultsTenantHardwareArgs, ValidateTenantHardwareArgs)
}
