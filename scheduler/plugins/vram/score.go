package vram

import (
	"context"
	"slices"

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

// Score is the best fit: the request as a share of the smallest memory that holds
// it, so a 40Gi pod scores 83 on a 48 GB card and 50 on an 80 GB one.
func (pl *Plugin) Score(_ context.Context, cs fwk.CycleState, _ *corev1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	s := readState(cs)
	if s == nil {
		return 0, nil
	}
	m, why := pl.memoryOf(s, nodeInfo.Node())
	if why != "" {
		return 0, nil
	}
	return bestFit(s.request, m), nil
}

// bestFit is request as a percentage of the smallest memory among the GPUs that
// hold it; 0 when none does.
func bestFit(request int64, m gpuMemory) int64 {
	if len(m.fitting) == 0 {
		return 0
	}
	smallest := slices.Min(m.fitting)
	return int64(100 * float64(request) / float64(smallest))
}

// ScoreExtensions is nil: scores are already on the 0–100 scale.
func (pl *Plugin) ScoreExtensions() fwk.ScoreExtensions { return nil }
