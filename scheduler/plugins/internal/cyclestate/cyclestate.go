// Package cyclestate reads what a plugin stored in the scheduling cycle's state.
package cyclestate

import (
	"errors"

	fwk "k8s.io/kube-scheduler/framework"
)

// ErrMissing is the error of a Score that finds nothing its plugin's PreScore
// stored: PreScore ran (it did not skip the pod) and wrote nothing.
var ErrMissing = errors.New("the state the plugin's PreScore writes is missing from the cycle")

// Read returns the data stored under key as a T, or the zero T when nothing (or
// something of another type) is stored there — e.g. when the plugin's PreFilter
// skipped the pod.
func Read[T fwk.StateData](cs fwk.CycleState, key fwk.StateKey) T {
	var zero T
	d, err := cs.Read(key)
	if err != nil {
		return zero
	}
	s, ok := d.(T)
	if !ok {
		return zero
	}
	return s
}
