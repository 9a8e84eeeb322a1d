package coscheduling

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// PostFilter runs when a gang member fits no node. Unless the gang already has its
// quorum placed, the gang cannot complete in this attempt: its waiting members are
// rejected now instead of holding capacity until the Permit timeout.
func (pl *Plugin) PostFilter(ctx context.Context, cs fwk.CycleState, pod *corev1.Pod, _ fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	s := gangState(cs)
	if s == nil {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	pl.index.mu.RLock()
	placed := 0
	if e := pl.index.get(s.key); e != nil {
		placed = e.placed()
	}
	pl.index.mu.RUnlock()
	if placed >= int(s.minMember) {
		return nil, fwk.NewStatus(fwk.Unschedulable) // the gang is complete; this extra member waits alone
	}
	msg := fmt.Sprintf("%s: member %s fits no node; %d/%d members of %s placed", ErrReasonGangRejected, pod.Name, placed, s.minMember, s.key)
	pl.rejectGang(ctx, s.key, s.podGroup, v1alpha1.ReasonInsufficientCapacity, msg)
	return nil, fwk.NewStatus(fwk.Unschedulable, msg)
}
