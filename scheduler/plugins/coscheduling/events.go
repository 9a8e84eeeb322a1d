package coscheduling

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/gangview"
)

// EventsToRegister lists the events that can make a member this plugin rejected
// schedulable, each with a hint that skips events about other gangs.
func (pl *Plugin) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	events := pl.eventsToRegister()
	if pl.pgs != nil {
		// Other schedulers' PodGroups, registered only when their CRDs are served: the
		// scheduler would otherwise wait for an informer of a resource that does not exist.
		for _, gvk := range pl.pgs.ForeignPodGroupKinds() {
			events = append(events, fwk.ClusterEventWithHint{
				Event:          fwk.ClusterEvent{Resource: fwk.EventResource("podgroups." + gvk.Version + "." + gvk.Group), ActionType: fwk.Add | fwk.Update},
				QueueingHintFn: gangview.IsSchedulableAfterPodGroupChange})
		}
	}
	return events, nil
}

func (pl *Plugin) eventsToRegister() []fwk.ClusterEventWithHint {
	return []fwk.ClusterEventWithHint{
		// Another member appeared or lost its scheduling gates: the quorum may now exist.
		// Registered for unscheduled pods (and the pod itself), not for every Pod: a
		// bound pod never completes a quorum (the hint skips it), and registering the
		// bindings too made each one walk every member waiting for its quorum (the
		// plugin's events are those a member it gates is re-checked for).
		{Event: fwk.ClusterEvent{Resource: fwk.UnscheduledPod, ActionType: fwk.Add | fwk.UpdatePodSchedulingGatesEliminated}, QueueingHintFn: pl.isSchedulableAfterMemberAdded},
		{Event: fwk.ClusterEvent{Resource: fwk.TargetPod, ActionType: fwk.UpdatePodSchedulingGatesEliminated}, QueueingHintFn: pl.isSchedulableAfterMemberAdded},
		// A bound pod went away: its capacity may complete a gang that did not fit.
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Delete}, QueueingHintFn: pl.isSchedulableAfterPodDeleted},
		// New or larger nodes: a gang that did not fit may fit now.
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAllocatable | fwk.UpdateNodeTaint | fwk.UpdateNodeLabel}, QueueingHintFn: pl.isSchedulableAfterNodeChange},
		// The gang's PodGroup appeared or changed (minMember, minResources, timeout).
		{Event: fwk.ClusterEvent{Resource: gangview.PodGroupResource, ActionType: fwk.Add | fwk.Update}, QueueingHintFn: gangview.IsSchedulableAfterPodGroupChange},
	}
}

// isSchedulableAfterNodeChange skips the members that wait for their gang's quorum
// or for the object cache: no node brings them either, and only the member or the
// sync that does re-queues them. In a profile without ProfileClassifier, members
// are gated by PreEnqueue under this plugin's name, so without the hint every node
// event re-ran PreEnqueue for every waiting member: at start-up, where the pending
// members often arrive before the nodes and wait, that was nodes × members
// PreEnqueue calls (75% of kubenexus-scheduler's first five seconds in a profile of
// a slow start, 4000 members on 1000 nodes). kube-scheduler still calls this hint
// for each of them; with ProfileClassifier, which gates them under its own name
// (no node events), it does not.
func (pl *Plugin) isSchedulableAfterNodeChange(_ klog.Logger, pod *corev1.Pod, _, _ any) (fwk.QueueingHint, error) {
	if pl.index.isHeld(pod.UID) || pl.waitsForCache(pod) {
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
}

func (pl *Plugin) isSchedulableAfterMemberAdded(logger klog.Logger, pod *corev1.Pod, _, newObj any) (fwk.QueueingHint, error) {
	added, ok := newObj.(*corev1.Pod)
	if !ok {
		return fwk.Queue, fmt.Errorf("unexpected object %T", newObj)
	}
	// Every binding arrives as an Add of an assigned pod; a bound pod was already a
	// member when it was created, so it never completes a quorum. Skipping it keeps
	// this hint O(1) per binding instead of re-examining every waiting gang.
	if added.Spec.NodeName != "" || added.Namespace != pod.Namespace || gang.IsGated(added) {
		return fwk.QueueSkip, nil
	}
	// kube-scheduler calls the hint for every waiting pod with the same added pod:
	// what the added pod brings is worked out once (pl.added), and the waiting
	// pod's gang is read from the index. Parsing both pods' labels and counting the
	// quorum per pair made the arrival of a gang of n members O(n²) label parses
	// and index walks (one second of start-up for a gang of 1000).
	key, completes, member := pl.added.of(added, pl.completesQuorum)
	if !member {
		return fwk.QueueSkip, nil
	}
	own, known := pl.index.gangOf(pod.UID)
	if !known {
		m, ok, _ := gang.Of(pod)
		if !ok {
			return fwk.QueueSkip, nil
		}
		own = m.Key
	}
	// Only the member that completes the quorum matters: a later one brings the
	// members already pending nothing they lacked. Whichever of this hint and the
	// index sees the completing member first, the index activates the whole gang
	// once it counts the quorum (memberArrived), so skipping here loses no wake-up
	// and avoids requeueing the gang at every arrival.
	if own != key || !completes {
		return fwk.QueueSkip, nil
	}
	logger.V(5).Info("Gang member added and the gang has its quorum", "pod", klog.KObj(pod), "member", klog.KObj(added))
	return fwk.Queue, nil
}

// addedMemo remembers, for the last pod the member-added hint saw, its gang and
// whether it completed the gang's quorum. Hints run one event at a time under the
// queue's lock; the mutex keeps the memo safe regardless.
type addedMemo struct {
	mu        sync.Mutex
	pod       *corev1.Pod
	key       gang.Key
	member    bool
	completes bool
}

// of returns the added pod's gang, whether it completes that gang's quorum (by
// completes), and whether it is a gang member at all; worked out once per pod
// object.
func (a *addedMemo) of(added *corev1.Pod, completes func(gang.Membership, *corev1.Pod) bool) (gang.Key, bool, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pod != added {
		m, ok, err := gang.Of(added)
		a.pod, a.key, a.member = added, m.Key, ok && err == nil
		a.completes = a.member && completes(m, added)
	}
	return a.key, a.completes, a.member
}

// completesQuorum reports whether added is the member that completed the gang: the
// index, counting added, has exactly minMember ungated members (with per-role
// minimums: the gang is complete with added and was not without it).
func (pl *Plugin) completesQuorum(m gang.Membership, added *corev1.Pod) bool {
	// Hints run under the scheduling queue's lock and must not wait for the object
	// cache. Before it has synced every gated member was held for it, and all of them
	// are activated once it has (activateHeldForCache): skipping loses nothing.
	if !pl.pgs.Synced() {
		return false
	}
	minMember, pg, known := pl.quorum(m.Key, m.MinMember)
	if !known {
		return false
	}
	pl.index.mu.RLock()
	defer pl.index.mu.RUnlock()
	e := pl.index.get(m.Key)
	if e == nil {
		return false
	}
	roles := minPerRole(pg)
	if len(roles) == 0 {
		return presentMembers(e, added) == int(minMember)
	}
	return completedBy(added, minMember, roles, presentMembers(e, added), presentRoles(e, added))
}

func (pl *Plugin) isSchedulableAfterPodDeleted(_ klog.Logger, _ *corev1.Pod, oldObj, _ any) (fwk.QueueingHint, error) {
	deleted, ok := oldObj.(*corev1.Pod)
	if !ok {
		return fwk.Queue, fmt.Errorf("unexpected object %T", oldObj)
	}
	if deleted.Spec.NodeName != "" {
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}
