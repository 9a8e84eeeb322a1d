package resourcereservation

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// PreScore skips pods that own no reservation with a node.
func (pl *Plugin) PreScore(_ context.Context, cs fwk.CycleState, _ *corev1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	s := readState(cs)
	if s == nil {
		return fwk.NewStatus(fwk.Skip)
	}
	for _, r := range s.mine {
		if r.node != "" {
			return nil
		}
	}
	return fwk.NewStatus(fwk.Skip)
}

// Score is 100 on a node where one of the pod's reservations has a slot left, else
// 0: the owner's pods take their reserved capacity first.
func (pl *Plugin) Score(_ context.Context, cs fwk.CycleState, _ *corev1.Pod, ni fwk.NodeInfo) (int64, *fwk.Status) {
	s := readState(cs)
	if s == nil {
		return 0, nil
	}
	name := ni.Node().Name
	var pods []*corev1.Pod
	for _, r := range s.mine {
		if r.node != name {
			continue
		}
		if pods == nil {
			pods = podsOf(ni)
		}
		if podsConsuming(r, pods) < r.slots {
			return fwk.MaxScore, nil
		}
	}
	return 0, nil
}

// ScoreExtensions is nil: scores are already on the 0–100 scale.
func (pl *Plugin) ScoreExtensions() fwk.ScoreExtensions { return nil }
