// Package accelerators is the rule that a pod asking for no accelerator keeps off
// accelerator nodes while other nodes have room: a node is an accelerator node when
// its allocatable has one of the accelerator resources (DRA devices that back one
// included) or it publishes GPU-class DRA devices; a pod asks for one when its
// requests name one or its ResourceClaims ask for GPU-class devices. WorkloadAware
// scores by it and applies it in its profile (Rules.Apply); NetworkFabric keeps
// CPU-only gangs off accelerator nodes by the same profile's rule (Rules.For).
package accelerators

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/nodefree"
)

// GPUs is what the rule reads of GPUs published through DRA (dragpus.View).
type GPUs interface {
	// Nodes returns the test for a node whose GPUs are DRA devices, nil while no
	// node publishes any.
	Nodes() func(node string) bool
	// AsksForGPUs reports whether the pod's ResourceClaims ask for GPU devices.
	AsksForGPUs(pod *corev1.Pod) bool
}

// Rule tells accelerator nodes and the pods that ask for accelerators.
type Rule struct {
	resources []corev1.ResourceName
	gpus      GPUs
}

// New is the rule for these accelerator resources and DRA GPUs (nil: none are
// published).
func New(resources []corev1.ResourceName, gpus GPUs) *Rule {
	return &Rule{resources: resources, gpus: gpus}
}

// AsksFor reports whether the pod asks for an accelerator: its requests (reqs)
// name one of the accelerator resources, or its ResourceClaims ask for GPU-class
// DRA devices (onlyDRA: only they do).
func (r *Rule) AsksFor(pod *corev1.Pod, reqs corev1.ResourceList) (accelerator, onlyDRA bool) {
	for _, name := range r.resources {
		if q, ok := reqs[name]; ok && q.Sign() > 0 {
			return true, false
		}
	}
	if len(pod.Spec.ResourceClaims) > 0 && r.gpus != nil && r.gpus.AsksForGPUs(pod) {
		return true, true
	}
	return false, false
}

// DRANodes returns the test for a node whose GPUs are DRA devices, nil while no
// node publishes any.
func (r *Rule) DRANodes() func(string) bool {
	if r.gpus == nil {
		return nil
	}
	return r.gpus.Nodes()
}

// IsAcceleratorNode reports whether the node has one of the accelerator resources,
// in its allocatable or as DRA devices that back it, or publishes GPU-class DRA
// devices (draNode, from DRANodes; nil: none does).
func (r *Rule) IsAcceleratorNode(ni fwk.NodeInfo, draNode func(string) bool) bool {
	if draNode != nil && draNode(ni.Node().Name) {
		return true
	}
	for _, name := range r.resources {
		if nodefree.Allocatable(ni, name) > 0 {
			return true
		}
	}
	return false
}

// KeepsOff returns, for a pod that asks for no accelerator, the test for an
// accelerator node; nil for a pod that asks for one.
func (r *Rule) KeepsOff(pod *corev1.Pod) func(fwk.NodeInfo) bool {
	if accelerator, _ := r.AsksFor(pod, resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})); accelerator {
		return nil
	}
	has := r.DRANodes()
	return func(ni fwk.NodeInfo) bool { return r.IsAcceleratorNode(ni, has) }
}

// Rules are the profiles' accelerator rules, one per profile whose WorkloadAware
// applies one.
type Rules struct {
	mu        sync.Mutex
	byProfile map[string]*Rule
}

// Apply makes rule profile's rule (WorkloadAware's New).
func (rs *Rules) Apply(profile string, rule *Rule) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.byProfile == nil {
		rs.byProfile = map[string]*Rule{}
	}
	rs.byProfile[profile] = rule
}

// For returns profile's rule: nil when its WorkloadAware does not apply one (the
// plugin is not enabled there).
func (rs *Rules) For(profile string) *Rule {
	if rs == nil {
		return nil
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.byProfile[profile]
}
