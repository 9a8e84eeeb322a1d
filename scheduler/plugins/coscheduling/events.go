package coscheduling

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/gangs"
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
				QueueingHintFn: gangs.IsSchedulableAfterPodGroupChange})
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
		{Event: fwk.ClusterEvent{Resource: fwk.UnscheduledPod, ActionType: fwk.Add | fwk.UpdatePodSchedulingGatesEliminated}, QueueingHintFn: pl.index.IsSchedulableAfterMemberAdded},
		{Event: fwk.ClusterEvent{Resource: fwk.TargetPod, ActionType: fwk.UpdatePodSchedulingGatesEliminated}, QueueingHintFn: pl.index.IsSchedulableAfterMemberAdded},
		// A bound pod went away: its capacity may complete a gang that did not fit.
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Delete}, QueueingHintFn: pl.isSchedulableAfterPodDeleted},
		// New or larger nodes: a gang that did not fit may fit now.
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAllocatable | fwk.UpdateNodeTaint | fwk.UpdateNodeLabel}, QueueingHintFn: pl.isSchedulableAfterNodeChange},
		// The gang's PodGroup appeared or changed (minMember, minResources, timeout).
		{Event: fwk.ClusterEvent{Resource: gangs.PodGroupResource, ActionType: fwk.Add | fwk.Update}, QueueingHintFn: gangs.IsSchedulableAfterPodGroupChange},
		// A claim members share was allocated or deleted (sharedclaims.go).
		{Event: fwk.ClusterEvent{Resource: fwk.ResourceClaim, ActionType: fwk.Update | fwk.Delete}, QueueingHintFn: isSchedulableAfterClaimChange},
	}
}

// isSchedulableAfterNodeChange skips the members that wait for their gang's quorum
// or for the object cache: no node brings them either, and only the member or the
// sync that does re-queues them. In a profile without ProfileClassifier, members
// are gated by PreEnqueue under this plugin's name, so without the hint every node
// event re-ran PreEnqueue for every waiting member: at start-up, where the pending
// members often arrive before the nodes and wait, that was nodes × members
// PreEnqueue calls. kube-scheduler still calls this hint for each of them; with
// ProfileClassifier, which gates them under its own name (no node events), it does
// not.
// A node that may bring room ends the backoff of gangs rejected only for want of
// room (gangs.Service.RoomFreed; the Service notes bound pods that end itself).
func (pl *Plugin) isSchedulableAfterNodeChange(_ klog.Logger, pod *corev1.Pod, _, _ any) (fwk.QueueingHint, error) {
	if pl.index.IsHeld(pod.UID) || pl.index.WaitsForCache(pod) {
		return fwk.QueueSkip, nil
	}
	pl.index.RoomFreed()
	return fwk.Queue, nil
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
