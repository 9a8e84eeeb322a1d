// Package nodefree reads what a node offers a pod from the scheduler snapshot: its
// allocatable less what its bound and assumed pods request, in milli-units (the pods
// resource counts pod slots).
package nodefree

import (
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	fwk "k8s.io/kube-scheduler/framework"
)

// Of returns the node's free capacity of one resource, in milli-units; negative when
// the node is over-committed.
func Of(ni fwk.NodeInfo, name corev1.ResourceName) int64 {
	alloc, req := ni.GetAllocatable(), ni.GetRequested()
	switch name {
	case corev1.ResourceCPU:
		return alloc.GetMilliCPU() - req.GetMilliCPU()
	case corev1.ResourceMemory:
		return (alloc.GetMemory() - req.GetMemory()) * 1000
	case corev1.ResourceEphemeralStorage:
		return (alloc.GetEphemeralStorage() - req.GetEphemeralStorage()) * 1000
	case corev1.ResourcePods:
		return int64(alloc.GetAllowedPodNumber()-len(ni.GetPods())) * 1000
	default:
		return (alloc.GetScalarResources()[name] - req.GetScalarResources()[name]) * 1000
	}
}

// All returns the node's free capacity of every resource it has, in milli-units.
func All(ni fwk.NodeInfo) map[corev1.ResourceName]int64 {
	free := map[corev1.ResourceName]int64{}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourcePods} {
		free[name] = Of(ni, name)
	}
	for name := range ni.GetAllocatable().GetScalarResources() {
		free[name] = Of(ni, name)
	}
	return free
}

// Requests returns what a pod requests (its effective requests: init containers
// and overhead counted as the kubelet does), in milli-units, zero requests left out.
func Requests(pod *corev1.Pod) map[corev1.ResourceName]int64 {
	out := map[corev1.ResourceName]int64{}
	for name, q := range resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}) {
		if v := q.MilliValue(); v > 0 {
			out[name] = v
		}
	}
	return out
}
