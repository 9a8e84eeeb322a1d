package resourcereservation

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// EventsToRegister: a pod refused for held capacity can fit once a pod leaves the
// node, or once a reservation stops holding (changed, expired or deleted): that
// retries the refused pods from the plugin's own cache (whenReleased), not from an
// event of the scheduler's, which would make kube-scheduler run a dynamic informer
// of ResourceReservations (its watch of an idle resource held start-up about a
// second).
func (pl *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Delete}, QueueingHintFn: isSchedulableAfterPodDelete},
	}, nil
}

// isSchedulableAfterPodDelete queues when an assigned pod goes: its node has room
// again.
func isSchedulableAfterPodDelete(_ klog.Logger, _ *corev1.Pod, oldObj, _ any) (fwk.QueueingHint, error) {
	if p, ok := oldObj.(*corev1.Pod); ok && p.Spec.NodeName == "" {
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
}
