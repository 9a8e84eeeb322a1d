package tenanthardware

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// PreScore skips scoring when PreFilter skipped the pod.
func (pl *Plugin) PreScore(_ context.Context, cs fwk.CycleState, _ *corev1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	if readState(cs) == nil {
		return fwk.NewStatus(fwk.Skip)
	}
	return nil
}

// Score rates the node's HardwareTier for the pod's tenant tier (see tierSet.score).
func (pl *Plugin) Score(_ context.Context, cs fwk.CycleState, _ *corev1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	s := readState(cs)
	if s == nil {
		return 0, nil
	}
	t := s.tiers.of(nodeInfo.Node().Name, nodeInfo.Node().Labels, pl.devices)
	return s.tiers.score(t, s.tenant, s.preemptible, int64(*pl.args.UntieredNodeScore), int64(*pl.args.BorrowedNodeScore)), nil
}

// ScoreExtensions is nil: scores are already on the 0–100 scale.
func (pl *Plugin) ScoreExtensions() fwk.ScoreExtensions { return nil }
