package coscheduling

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// PostFilter runs when a gang member fits no node. Unless the gang already has its
// quorum placed, the gang cannot complete in this attempt: its waiting members are
// rejected now instead of holding capacity until the Permit timeout.
func (pl *Plugin) PostFilter(ctx context.Context, cs fwk.CycleState, pod *corev1.Pod, statuses fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	s := gangState(cs)
	if s == nil {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	pl.index.RLock()
	placed, complete := 0, false
	if e := pl.index.Get(s.key); e != nil {
		placed = e.Placed()
		complete = placed >= int(s.minMember)
		roles := gang.RolesOf(s.podGroup)
		switch {
		case e.Subgrouped > 0:
			// Subgroups count only when placed whole.
			p := subgroupProgress(e, pod, true)
			placed = p.placed
			complete = placed >= int(s.minMember) && gang.RolesMet(roles, p.roles)
		case complete && len(roles.Min) > 0:
			complete = gang.RolesMet(roles, e.PlacedRoles(nil))
		}
	}
	pl.index.RUnlock()
	if complete {
		return nil, fwk.NewStatus(fwk.Unschedulable) // the gang is complete; this extra member waits alone
	}
	reason, why := v1alpha1.ReasonInsufficientCapacity, "fits no node"
	// A later plugin's PreFilter refused the member for every node (the status of
	// nodes absent from the map): its message says why, and the gang's backoff
	// repeats it (e.g. NetworkFabric's TopologyUnsatisfiable).
	if st := statuses.Get(""); st != nil && st.Message() != "" && st.Plugin() != "" && !strings.HasPrefix(st.Message(), "node(s) didn't satisfy") {
		why = "cannot be placed: " + st.Message()
		if strings.HasPrefix(st.Message(), v1alpha1.ReasonTopologyUnsatisfiable+":") {
			reason = v1alpha1.ReasonTopologyUnsatisfiable
		}
	}
	msg := fmt.Sprintf("%s: member %s %s; %d/%d members of %s placed", ErrReasonGangRejected, pod.Name, why, placed, s.minMember, s.key)
	pl.rejectGang(ctx, s.key, s.podGroup, reason, msg)
	// A gang that asks for it holds the room that frees from now on.
	if reason == v1alpha1.ReasonInsufficientCapacity && s.podGroup != nil && s.podGroup.Spec.ReserveCapacity != nil && pl.reservations != nil {
		pl.reservations.Accumulate(s.podGroup, pod, int(s.minMember)-placed)
	}
	return nil, fwk.NewStatus(fwk.Unschedulable, msg)
}
