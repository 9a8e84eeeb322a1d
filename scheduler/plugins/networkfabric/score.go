package networkfabric

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// PreScore skips pods PreFilter did not plan.
func (pl *Plugin) PreScore(_ context.Context, cs fwk.CycleState, _ *corev1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	if readState(cs) == nil {
		return fwk.NewStatus(fwk.Skip)
	}
	return nil
}

// Score favours the plan's domains: 100 for a node of the best domain, 10 less for
// each domain after it (at least 10), 0 outside the plan.
func (pl *Plugin) Score(_ context.Context, cs fwk.CycleState, _ *corev1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	s := readState(cs)
	if s == nil {
		return 0, nil
	}
	// rank is written once, before the plan is shared, and only read after: Score
	// runs for many nodes at once and takes no lock.
	r, ok := s.plan.rank[nodeInfo.Node().Name]
	if !ok {
		return 0, nil
	}
	return max(100-10*int64(r), 10), nil
}

// ScoreExtensions is nil: scores are already on the 0–100 scale.
func (pl *Plugin) ScoreExtensions() fwk.ScoreExtensions { return nil }
