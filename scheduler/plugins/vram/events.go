package vram

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/hardware"
	"github.com/kube-nexus/kubenexus/api/workload"
)

// EventsToRegister: a refused pod can fit once a node gains or changes its GPU
// memory label, a ResourceSlice publishes devices, or (claim pods) a claim releases
// its devices.
func (pl *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeLabel | fwk.UpdateNodeAllocatable}, QueueingHintFn: pl.isSchedulableAfterNodeChange},
		{Event: fwk.ClusterEvent{Resource: fwk.ResourceSlice, ActionType: fwk.Add | fwk.Update}},
		{Event: fwk.ClusterEvent{Resource: fwk.ResourceClaim, ActionType: fwk.Update | fwk.Delete}, QueueingHintFn: isSchedulableAfterClaimChange},
	}, nil
}

// isSchedulableAfterNodeChange queues a pod when the node's labels give its GPUs
// enough memory, or the node has no label (its slices may).
func (pl *Plugin) isSchedulableAfterNodeChange(_ klog.Logger, pod *corev1.Pod, _, newObj any) (fwk.QueueingHint, error) {
	n, ok := newObj.(*corev1.Node)
	if !ok {
		return fwk.Queue, nil
	}
	request, ok, err := workload.VRAMRequestOf(pod.Annotations)
	if !ok || err != nil {
		return fwk.QueueSkip, nil //nolint:nilerr // an unreadable request is refused at PreFilter; a node change does not help it
	}
	per, label, err := hardware.GPUMemoryOf(n)
	if err != nil || (label != "" && per < request) {
		return fwk.QueueSkip, nil //nolint:nilerr // a node whose memory label cannot be read offers no VRAM
	}
	return fwk.Queue, nil
}

// isSchedulableAfterClaimChange queues only pods that use claims.
func isSchedulableAfterClaimChange(_ klog.Logger, pod *corev1.Pod, _, _ any) (fwk.QueueingHint, error) {
	if len(pod.Spec.ResourceClaims) == 0 {
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
}
