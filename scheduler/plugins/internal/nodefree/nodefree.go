// Package nodefree reads what a node offers a pod from the scheduler snapshot: its
// allocatable less what its bound and assumed pods request, in milli-units (the pods
// resource counts pod slots). An extended resource the node's allocatable lacks
// counts the DRA devices that back it (UseDRABacked).
package nodefree

import (
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	fwk "k8s.io/kube-scheduler/framework"
)

// DRABackedFunc returns how many DRA devices of a node back each extended resource.
type DRABackedFunc func(node string) map[corev1.ResourceName]int64

var draBacked atomic.Pointer[DRABackedFunc]

// UseDRABacked makes Of and All count, for an extended resource a node's allocatable
// lacks, the devices f says back it: a pod asking nvidia.com/gpu: 1 of a node that
// publishes its GPUs only as ResourceSlices (extended resources backed by DRA,
// Kubernetes 1.37) gets one of them, and its request is in the node's requested
// resources like any other. The scheduler's device index installs it; the last
// call wins (one scheduler per process).
func UseDRABacked(f DRABackedFunc) { draBacked.Store(&f) }

// backed returns the DRA-backed extended resources of the node, nil when none.
func backed(ni fwk.NodeInfo) map[corev1.ResourceName]int64 {
	f := draBacked.Load()
	if f == nil || ni.Node() == nil {
		return nil
	}
	return (*f)(ni.Node().Name)
}

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
		return (Allocatable(ni, name) - req.GetScalarResources()[name]) * 1000
	}
}

// Allocatable returns the node's allocatable count of an extended resource (whole
// units), the DRA devices that back it when its allocatable has none.
func Allocatable(ni fwk.NodeInfo, name corev1.ResourceName) int64 {
	if a := ni.GetAllocatable().GetScalarResources()[name]; a > 0 {
		return a
	}
	return backed(ni)[name]
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
	for name := range backed(ni) {
		if _, ok := free[name]; !ok {
			free[name] = Of(ni, name)
		}
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
