package coscheduling

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// PreEnqueue holds a gang member out of the active queue until the gang's quorum
// exists: minMember ungated, non-terminal members. A member whose PodGroup does not
// exist is let through to PreFilter, which says so where the user sees it. Members behind another system's
// scheduling gate are not counted (the scheduler does not even call PreEnqueue for
// them while they are gated).
//
// In a profile with ProfileClassifier the hold is ProfileClassifier's (it runs admit
// under its own name; see gangview.Gate) and this PreEnqueue passes every pod, so a
// pod's labels are read once per enqueue, not twice.
func (pl *Plugin) PreEnqueue(ctx context.Context, pod *corev1.Pod) *fwk.Status {
	if pl.gangs != nil && pl.gangs.GateTaken(pl.handle.ProfileName()) {
		return nil
	}
	return pl.admit(ctx, pod)
}

// admit is the hold: nil lets the pod into the queue.
func (pl *Plugin) admit(_ context.Context, pod *corev1.Pod) *fwk.Status {
	m, ok, err := gang.Of(pod)
	if err != nil || !ok {
		// Malformed gang labels are refused in PreFilter, where the reason reaches the
		// pod's PodScheduled condition and events; PreEnqueue results do not.
		return nil
	}
	// The queue calls PreEnqueue under its lock: reading the PodGroup before the cache
	// has synced would wait there and stall every pod and node event of the scheduler
	// (about a second at start-up). The member is held and activated once it has synced.
	if !pl.pgs.Synced() && pl.holdForCache(pod) {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, ErrReasonWaitingForCache)
	}
	minMember, pg, known := pl.quorum(m.Key, m.MinMember)
	if !known {
		// The gang's PodGroup does not exist. PreEnqueue results never reach the pod,
		// so the member goes on to PreFilter, which refuses it with a message that
		// reaches its PodScheduled condition and a FailedScheduling event; the
		// PodGroup's creation re-queues it.
		return nil
	}
	pl.index.mu.RLock()
	e := pl.index.get(m.Key)
	present, short := presentMembers(e, pod), rolesShort(e, pod, pg)
	pl.index.mu.RUnlock()
	if present < int(minMember) || len(short) > 0 {
		pl.index.hold(pod.UID)
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, waitingForMembers(m.Key, present, minMember, short))
	}
	pl.index.release(pod.UID) // has its quorum: node events may matter to it again
	// The queue orders the gang by its PodGroup's PriorityClass: the member enters the
	// queue with the class's value as of now. Until the scheduler's PriorityClass cache
	// has synced the value is unknown, and a member queued with the wrong priority
	// would keep that place; it waits instead and is activated once the cache syncs.
	if pg != nil && pg.Spec.PriorityClassName != "" {
		if pl.classesSynced != nil && !pl.classesSynced() {
			return fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
				fmt.Sprintf("%s: the scheduler's PriorityClass cache is not synced yet", ErrReasonWaitingForPriorityClass))
		}
		class := pg.Spec.PriorityClassName
		pl.index.setPriority(m.Key, class, pl.index.priority.value(class))
	}
	return nil
}

// rolesShort lists the per-role minimums of pg the gang's present members (pod
// among them) do not meet. Callers hold the index lock.
func rolesShort(e *gangEntry, pod *corev1.Pod, pg *v1alpha1.PodGroup) []string {
	roles := minPerRole(pg)
	if len(roles) == 0 {
		return nil
	}
	return gang.RoleShortfall(roles, presentRoles(e, pod))
}

// waitingForMembers says how many members of the gang exist against its quorum,
// and which roles lack members.
func waitingForMembers(key gang.Key, present int, minMember int32, short []string) string {
	msg := fmt.Sprintf("%s: %d/%d members of %s exist", ErrReasonWaitingForQuorum, present, minMember, key)
	if len(short) > 0 {
		msg += "; " + gang.DescribeShortfall(short)
	}
	return msg
}

// presentMembers counts the gang's ungated members, including pod itself when the
// informer has not delivered it to the index yet (the queue and the index are fed by
// separate handlers of the same informer). Callers hold the index lock.
func presentMembers(e *gangEntry, pod *corev1.Pod) int {
	if e == nil {
		return 1
	}
	present := e.ungated
	if _, counted := e.members[pod.UID]; !counted && !gang.IsGated(pod) {
		present++
	}
	return present
}
