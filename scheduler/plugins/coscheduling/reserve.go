package coscheduling

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/gangs"
)

// Reserve records the member as reserved for its gang.
func (pl *Plugin) Reserve(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, nodeName string) *fwk.Status {
	s := gangState(cs)
	if s == nil {
		return nil
	}
	pl.index.Lock()
	defer pl.index.Unlock()
	e := pl.index.Ensure(s.key)
	e.Assumed.Insert(pod.UID)
	if e.ReservedOn == nil {
		e.ReservedOn = map[types.UID]string{}
	}
	e.ReservedOn[pod.UID] = nodeName
	return nil
}

// Unreserve runs when a reserved member is rejected: it timed out at Permit, another
// member's failure rejected it, or a later plugin failed. Unless the gang had
// already reached its quorum, the whole gang is rejected and backs off.
func (pl *Plugin) Unreserve(ctx context.Context, cs fwk.CycleState, pod *corev1.Pod, _ string) {
	s := gangState(cs)
	if s == nil {
		return
	}
	pl.index.Lock()
	e := pl.index.Get(s.key)
	if e == nil {
		pl.index.Unlock()
		return
	}
	if e.Allowed.Has(pod.UID) || e.Assumed.Has(pod.UID) {
		unreservedMembers.Inc()
	}
	if e.Allowed.Has(pod.UID) {
		// The gang was complete; only this member's binding failed. It retries alone
		// and passes Permit at once because the rest of the gang is placed.
		e.Allowed.Delete(pod.UID)
		pl.index.Unlock()
		return
	}
	if !e.Assumed.Has(pod.UID) {
		pl.index.Unlock() // already rejected together with its gang
		return
	}
	e.Assumed.Delete(pod.UID)
	placed := e.Placed()
	pl.index.Unlock()
	pl.rejectGang(ctx, s.key, s.podGroup, v1alpha1.ReasonTimeout,
		fmt.Sprintf("%s: %s could not place %d members within %s (%d/%d placed when member %s was rejected)",
			ErrReasonGangRejected, s.key, s.minMember, pl.scheduleTimeout(s.podGroup), placed+1, s.minMember, pod.Name))
}

// rejectGang rejects every waiting member of the gang, starts the gang's backoff and
// schedules its re-activation when the backoff ends. The message starts with the
// reason (a PodGroup condition reason), which the PodGroup controller reads back
// from the members' PodScheduled condition.
func (pl *Plugin) rejectGang(ctx context.Context, key gang.Key, pg *v1alpha1.PodGroup, reason, msg string) {
	msg = reason + ": " + msg
	pl.index.Lock()
	e := pl.index.Get(key)
	if e == nil {
		pl.index.Unlock()
		return
	}
	waiting := e.Assumed.UnsortedList()
	e.Assumed.Clear()
	e.Activated = false
	backoff := pl.args.Backoff()
	e.BackoffUntil = pl.now().Add(backoff)
	e.LastRejection = msg
	// Refused for want of room (anywhere, or in one domain of its topology: a member
	// fit no node, and the members waiting at Permit are released now): room
	// freeing ends the backoff (Gang.UntilRoom). A Permit timeout does not.
	e.UntilRoom = reason == v1alpha1.ReasonInsufficientCapacity || reason == v1alpha1.ReasonTopologyUnsatisfiable
	// A gang that yielded and was then tried (the gangs ahead were tried first) has
	// seen the room: the wake need not bring it back.
	e.RoomEpoch, e.Yielded = pl.index.RoomEpoch(), false
	pl.index.Unlock()

	for _, uid := range waiting {
		if wp := pl.handle.GetWaitingPod(uid); wp != nil {
			wp.Reject(Name, msg)
		}
	}
	gangRejections.WithLabelValues(reason).Inc()
	unreservedMembers.Add(float64(len(waiting))) // their own Unreserve finds them gone
	klog.FromContext(ctx).V(2).Info("Rejected gang", "podGroup", key.String(), "reason", reason, "waitingRejected", len(waiting), "backoff", backoff)
	pl.recordEvent(key, pg, corev1.EventTypeWarning, reason, "%s; retrying in %s", msg, backoff)
	time.AfterFunc(backoff, func() { pl.index.ActivateIfQuorum(key) })
}

func (pl *Plugin) recordEvent(key gang.Key, pg *v1alpha1.PodGroup, eventType, reason, note string, args ...any) {
	if r := pl.handle.EventRecorder(); r != nil {
		r.Eventf(gangs.PodGroupRef(key, pg), nil, eventType, reason, "Scheduling", note, args...)
	}
}
