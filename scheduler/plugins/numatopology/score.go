package numatopology

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/scheduler/placement/numa"
)

// PreScore skips scoring when PreFilter skipped the pod, and for pods without a
// hint of their own: the kubelet's policy only filters them, so that pods which did
// not ask for NUMA placement are not drawn to the nodes that report cells.
func (pl *Plugin) PreScore(_ context.Context, cs fwk.CycleState, _ *corev1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	if s := readState(cs); s == nil || s.own == "" {
		return fwk.NewStatus(fwk.Skip)
	}
	return nil
}

// Score prefers nodes where the pod spans the fewest cells and leaves the least
// free in them (best fit), so that whole cells stay free for pods that need them.
func (pl *Plugin) Score(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	s := readState(cs)
	if s == nil {
		return 0, nil
	}
	t, _ := pl.topologyOf(nodeInfo.Node())
	if t == nil {
		return 0, nil
	}
	policy, d := numa.EffectivePolicy(s.own, t), numa.DemandOf(pod, t)
	if policy == "" {
		return 0, nil
	}
	var st *numa.CellState
	if v, ok := s.cells.Load(nodeInfo.Node().Name); ok {
		st = v.(*numa.CellState)
	} else {
		st = pl.cellStateOf(nodeInfo, t)
	}
	mask, ok := st.Place(policy, d)
	if !ok {
		return 0, nil
	}
	return st.Score(policy, d, mask), nil
}

// ScoreExtensions is nil: scores are already on the 0–100 scale.
func (pl *Plugin) ScoreExtensions() fwk.ScoreExtensions { return nil }
