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
// or tainted node, the gang was rejected and backs off (Coscheduling's
// backoffSeconds), and kube-scheduler retried its members with a backoff that
// reaches 10 s; the node's update alone would leave them waiting that out.
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

// activateRepairsOn ends the backoff of every gang whose repair reservation may
// hold room on node and activates its pending members.
func (pl *Plugin) activateRepairsOn(logger klog.Logger, node *corev1.Node) {
	idx := pl.shared.idx.Load()
	if idx == nil {
		return
	}
	keys := map[gang.Key]bool{}
	for _, r := range idx.accumulating {
		if !r.repair || r.terminal() || r.ownerKind != v1alpha1.ReservationOwnerPodGroup ||
			(r.selector != nil && !r.selector.Matches(labels.Set(node.Labels))) {
			continue
		}
		keys[gang.Key{Namespace: r.key.Namespace, Name: r.ownerName}] = true
	}
	for key := range keys {
		logger.V(4).Info("A node of a repairing gang's domain is schedulable again: retrying its pending members now", "node", node.Name, "podGroup", key.String())
		pl.gangs.RetryNow(key)
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
