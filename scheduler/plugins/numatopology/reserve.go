package numatopology

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/scheduler/placement/numa"
)

// Reserve records the cells the pod is expected to take on its node, so that the
// next pods see them used before any report arrives.
func (pl *Plugin) Reserve(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, nodeName string) *fwk.Status {
	s := readState(cs)
	if s == nil {
		return nil
	}
	ni, err := pl.handle.SnapshotSharedLister().NodeInfos().Get(nodeName)
	if err != nil {
		return nil
	}
	t, _ := pl.topologyOf(ni.Node())
	if t == nil {
		return nil
	}
	policy, d := numa.EffectivePolicy(s.own, t), numa.DemandOf(pod, t)
	if policy == "" || (len(d) == 0 && policy != v1alpha1.NUMAPolicyIsolated) {
		return nil
	}
	// The snapshot does not hold the pod yet: its cells are those Filter found.
	mask, ok := pl.cellStateOf(ni, t).Place(policy, d)
	if !ok {
		return nil
	}
	pl.placedMu.Lock()
	pl.placed[pod.UID] = placement{node: nodeName, mask: mask}
	pl.placedMu.Unlock()
	return nil
}

// Unreserve forgets the pod's cells.
func (pl *Plugin) Unreserve(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) {
	pl.forget(pod.UID)
}
