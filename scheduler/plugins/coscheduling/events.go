package coscheduling

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// podGroupResource is how the scheduler names PodGroup events (<resource>.<version>.<group>).
var podGroupResource = fwk.EventResource("podgroups." + v1alpha1.GroupVersion.Version + "." + v1alpha1.GroupVersion.Group)

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
				QueueingHintFn: pl.isSchedulableAfterPodGroupChange})
		}
	}
	return events, nil
}

func (pl *Plugin) eventsToRegister() []fwk.ClusterEventWithHint {
	return []fwk.ClusterEventWithHint{
		// Another member appeared or lost its scheduling gates: the quorum may now exist.
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Add | fwk.UpdatePodSchedulingGatesEliminated}, QueueingHintFn: pl.isSchedulableAfterMemberAdded},
		// A bound pod went away: its capacity may complete a gang that did not fit.
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Delete}, QueueingHintFn: pl.isSchedulableAfterPodDeleted},
		// New or larger nodes: a gang that did not fit may fit now.
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAllocatable | fwk.UpdateNodeTaint | fwk.UpdateNodeLabel}},
		// The gang's PodGroup appeared or changed (minMember, minResources, timeout).
		{Event: fwk.ClusterEvent{Resource: podGroupResource, ActionType: fwk.Add | fwk.Update}, QueueingHintFn: pl.isSchedulableAfterPodGroupChange},
	}
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
	m, ok, _ := gang.Of(pod)
	if !ok {
		return fwk.QueueSkip, nil
	}
	if ma, okA, _ := gang.Of(added); !okA || ma.Key != m.Key {
		return fwk.QueueSkip, nil
	}
	// Only the member that completes the quorum matters. If the index has not seen
	// it yet, the index activates the gang itself once it does (activateIfQuorum), so
	// skipping here loses no wake-up and avoids requeueing the gang N times.
	if !pl.hasQuorum(m) {
		return fwk.QueueSkip, nil
	}
	logger.V(5).Info("Gang member added and the quorum exists", "pod", klog.KObj(pod), "member", klog.KObj(added))
	return fwk.Queue, nil
}

// hasQuorum reports whether the index counts minMember ungated members of the gang.
func (pl *Plugin) hasQuorum(m gang.Membership) bool {
	minMember, _, known := pl.quorum(m.Key, m.MinMember)
	if !known {
		return false
	}
	pl.index.mu.RLock()
	defer pl.index.mu.RUnlock()
	e := pl.index.get(m.Key)
	return e != nil && e.ungated >= int(minMember)
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

func (pl *Plugin) isSchedulableAfterPodGroupChange(_ klog.Logger, pod *corev1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	ns, name, gen, err := objectMeta(newObj)
	if err != nil {
		return fwk.Queue, err
	}
	if oldObj != nil {
		// The controller updates status often; only spec changes (generation) matter.
		if _, _, oldGen, err := objectMeta(oldObj); err == nil && oldGen == gen {
			return fwk.QueueSkip, nil
		}
	}
	m, ok, _ := gang.Of(pod)
	if ok && m.Key == (gang.Key{Namespace: ns, Name: name}) {
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}

// objectMeta reads namespace, name and generation of a PodGroup delivered by the
// scheduler's dynamic informer (unstructured) or typed.
func objectMeta(obj any) (string, string, int64, error) {
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		return o.GetNamespace(), o.GetName(), o.GetGeneration(), nil
	case *v1alpha1.PodGroup:
		return o.Namespace, o.Name, o.Generation, nil
	}
	return "", "", 0, fmt.Errorf("unexpected object %T", obj)
}
