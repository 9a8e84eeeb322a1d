package numatopology

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
)

// EventsToRegister: a refused pod can fit once an aligned pod is deleted or a node
// gains NUMA labels or capacity. Reports are not registered here: the scheduler's
// event would come before the plugin's cache has the report, and its objects are
// unstructured; the cache's own handler re-activates the refused pods when a
// report loosens (setReport), in flight or not.
func (pl *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Delete}, QueueingHintFn: isSchedulableAfterPodDelete},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeLabel | fwk.UpdateNodeAllocatable}, QueueingHintFn: isSchedulableAfterNodeChange},
	}, nil
}

// isSchedulableAfterPodDelete queues when the deleted pod was on a node and may have
// taken NUMA-aligned resources.
func isSchedulableAfterPodDelete(_ klog.Logger, _ *corev1.Pod, oldObj, _ any) (fwk.QueueingHint, error) {
	p, ok := oldObj.(*corev1.Pod)
	if !ok {
		return fwk.Queue, nil
	}
	if p.Spec.NodeName == "" {
		return fwk.QueueSkip, nil
	}
	if own, _ := workload.NUMAPolicyOf(p.Annotations); own != "" || mayAlign(p) {
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}

// isSchedulableAfterNodeChange queues for nodes that carry the fallback NUMA label
// (nodes described by a report change with it).
func isSchedulableAfterNodeChange(_ klog.Logger, _ *corev1.Pod, _, newObj any) (fwk.QueueingHint, error) {
	n, ok := newObj.(*corev1.Node)
	if !ok {
		return fwk.Queue, nil
	}
	if _, ok := n.Labels[v1alpha1.LabelNUMANodeCount]; ok {
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}
