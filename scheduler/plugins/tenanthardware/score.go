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

// Score rates the node's HardwareTier for the pod's tenant tier (tenant.Rules.Score).
func (pl *Plugin) Score(_ context.Context, cs fwk.CycleState, _ *corev1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	s := readState(cs)
	if s == nil {
		return 0, nil
	}
	t := s.tiers.OfNode(nodeInfo.Node().Name, nodeInfo.Node().Labels, pl.tiers.Devices())
	return pl.rules.Score(s.tiers, t, s.tenant, s.preemptible), nil
}

// ScoreExtensions is nil: scores are already on the 0–100 scale.
func (pl *Plugin) ScoreExtensions() fwk.ScoreExtensions { return nil }
