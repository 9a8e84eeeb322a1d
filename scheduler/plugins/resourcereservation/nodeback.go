package resourcereservation

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// watchNodesBack activates a repairing gang's pending members when a node of the
// domain its repair reservation holds turns schedulable again (its NoSchedule and
// NoExecute taints gone, not cordoned). While their room was on a NotReady
// or tainted node, kube-scheduler retried them with a backoff that reaches 10 s;
// the node's update would only move them to the backoff queue.
func (pl *Plugin) watchNodesBack(logger klog.Logger) error {
	f := pl.handle.SharedInformerFactory()
	if f == nil || pl.gangs == nil {
		return nil
	}
	_, err := f.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			old, okOld := oldObj.(*corev1.Node)
			cur, okCur := newObj.(*corev1.Node)
			if okOld && okCur && !schedulable(old) && schedulable(cur) {
				pl.activateRepairsOn(logger, cur)
			}
		},
	})
	return err
}

// activateRepairsOn activates the pending members of every gang whose repair
// reservation may hold room on node.
func (pl *Plugin) activateRepairsOn(logger klog.Logger, node *corev1.Node) {
	idx := pl.shared.idx.Load()
	if idx == nil {
		return
	}
	pods := map[string]*corev1.Pod{}
	for _, r := range idx.accumulating {
		if !r.repair || r.terminal() || r.ownerKind != v1alpha1.ReservationOwnerPodGroup ||
			(r.selector != nil && !r.selector.Matches(labels.Set(node.Labels))) {
			continue
		}
		for _, p := range pl.gangs.Pending(gang.Key{Namespace: r.key.Namespace, Name: r.ownerName}) {
			pods[p.Namespace+"/"+p.Name] = p
		}
	}
	if len(pods) > 0 {
		logger.V(4).Info("A node of a repairing gang's domain is schedulable again: activating its pending members", "node", node.Name, "pods", len(pods))
		pl.handle.Activate(logger, pods)
	}
}

// schedulable: the node takes new pods as kube-scheduler sees it — not cordoned,
// no NoSchedule or NoExecute taint (a NotReady or unreachable node is tainted by
// the node lifecycle controller).
func schedulable(n *corev1.Node) bool {
	if n.Spec.Unschedulable {
		return false
	}
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			return false
		}
	}
	return true
}
