package tenanthardware

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
)

// EventsToRegister: a refused pod can fit once a node is added or relabelled into
// a tier that admits it, or its devices change. A HardwareTier's spec change
// retries the refused pods from this plugin's cache (refused), not from an event of
// the scheduler's: registering one made kube-scheduler run a dynamic informer of
// HardwareTiers whose watch of an idle resource held its start-up about a second.
func (pl *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeLabel}, QueueingHintFn: pl.isSchedulableAfterNodeChange},
		{Event: fwk.ClusterEvent{Resource: fwk.ResourceSlice, ActionType: fwk.All}, QueueingHintFn: pl.isSchedulableAfterSliceChange},
	}, nil
}

// isSchedulableAfterNodeChange queues the pod when the node is untiered or its tier
// does not deny the pod. The tenant tier is read from the pod's namespace, as
// ProfileClassifier does (the pod's own tier label is untrusted); a namespace
// without a tier label, or not in the cache yet, queues the pod.
func (pl *Plugin) isSchedulableAfterNodeChange(_ klog.Logger, pod *corev1.Pod, _, newObj any) (fwk.QueueingHint, error) {
	node, ok := newObj.(*corev1.Node)
	if !ok {
		return fwk.Queue, fmt.Errorf("unexpected object %T", newObj)
	}
	src, ok := pl.tenants.Source(pod)
	if !ok || src[v1alpha1.LabelTenantTier] == "" {
		return fwk.Queue, nil
	}
	tenant := workload.TierOf(workload.Namespace{Labels: src}, "")
	tiers := pl.tiers.Current()
	if tiers == nil {
		return fwk.Queue, nil
	}
	if tiers.Denied(node.Name, node.Labels, pl.tiers.Devices(), tenant, pod.Labels[v1alpha1.LabelPreemptible] == "true") {
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
}

// isSchedulableAfterSliceChange queues only while some tier selects nodes by their
// devices.
func (pl *Plugin) isSchedulableAfterSliceChange(klog.Logger, *corev1.Pod, any, any) (fwk.QueueingHint, error) {
	if pl.tiers.Current().UsesDevices() {
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}
