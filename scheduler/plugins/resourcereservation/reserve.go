package resourcereservation

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// Reserve notes where the pod goes, so that a reservation placed meanwhile counts
// it before it is bound, and has the status of the reservations it consumes on
// that node rewritten.
func (pl *Plugin) Reserve(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, nodeName string) *fwk.Status {
	pl.shared.assume(pod, nodeName)
	if s := readState(cs); s != nil {
		for key, slots := range s.lent {
			if slots[nodeName] > 0 {
				pl.shared.borrow(pod, key, nodeName, s.requests)
			}
		}
		for _, r := range s.mine {
			if r.node == nodeName || r.accumulate {
				pl.shared.enqueue(r.key)
			}
		}
	}
	return nil
}

// Unreserve forgets the assumption and rewrites the consumed reservations' status.
func (pl *Plugin) Unreserve(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, nodeName string) {
	pl.shared.forget(pod)
	pl.shared.unborrow(pod)
	if s := readState(cs); s != nil {
		for _, r := range s.mine {
			if r.node == nodeName || r.accumulate {
				pl.shared.enqueue(r.key)
			}
		}
	}
}
