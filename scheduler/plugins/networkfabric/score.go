package networkfabric

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/cyclestate"
)

// PreScore goes on for pods PreFilter planned, and for the other pods while a
// level is kept whole and some of their nodes are in its domains (keepwhole.go); it
// skips the rest.
func (pl *Plugin) PreScore(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) *fwk.Status {
	if readState(cs) != nil || pl.preScoreKeepWhole(cs, pod, nodes) {
		return nil
	}
	return fwk.NewStatus(fwk.Skip)
}

// Score favours the nodes the plan assigned members to (100): they are where the
// whole gang fits, on the hardware its tenant prefers most. Other nodes of the
// plan's domains score 50, 10 less for each domain after the first (at least 10);
// nodes outside the plan 0. A pod it did not plan is scored to keep domains whole
// (keepWholeScore).
func (pl *Plugin) Score(_ context.Context, cs fwk.CycleState, _ *corev1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	s := readState(cs)
	if s == nil {
		if k := cyclestate.Read[*keepState](cs, keepKey); k != nil {
			return keepWholeScore(k, nodeInfo.Node()), nil
		}
		return 0, nil
	}
	// rank is written once, before the plan is shared, and only read after: Score
	// runs for many nodes at once and takes no lock.
	name := nodeInfo.Node().Name
	if s.plan.claimed[name] {
		return 100, nil
	}
	r, ok := s.plan.rank[name]
	if !ok {
		return 0, nil
	}
	return max(50-10*int64(r), 10), nil
}

// ScoreExtensions is nil: scores are already on the 0–100 scale.
func (pl *Plugin) ScoreExtensions() fwk.ScoreExtensions { return nil }
