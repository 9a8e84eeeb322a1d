package placement

import (
	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// Eligible reports whether the pod may run on the node at all: it applies the
// node-level checks of kube-scheduler's NodeAffinity,
// TaintToleration and NodeUnschedulable filters, with the same helpers they use.
func Eligible(pod *corev1.Pod, node *corev1.Node) bool {
	if ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); !ok {
		return false
	}
	logger := klog.Background()
	_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(logger, node.Spec.Taints, pod.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, false)
	if untolerated {
		return false
	}
	if node.Spec.Unschedulable {
		return corev1helpers.TolerationsTolerateTaint(logger, pod.Spec.Tolerations, &corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}, false)
	}
	return true
}
