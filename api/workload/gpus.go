package workload

import (
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// HeldGPUs is how many GPUs a pod holds on its node: its effective request (init
// containers and overhead included) of the named resources (nvidia.com/gpu when none
// are named) while it is bound and not finished; 0 otherwise. The manager's
// HardwareTier status, the scheduler's largest-placeable-gang gauges and the demo
// report count allocation with it.
func HeldGPUs(p *corev1.Pod, names ...corev1.ResourceName) int64 {
	if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return 0
	}
	if len(names) == 0 {
		names = []corev1.ResourceName{v1alpha1.ResourceNvidiaGPU}
	}
	reqs := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	var n int64
	for _, name := range names {
		if q, ok := reqs[name]; ok {
			n += q.Value()
		}
	}
	return n
}
