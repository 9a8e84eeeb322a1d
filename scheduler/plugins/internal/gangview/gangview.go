// Package gangview lets plugins see what other plugins know without a second copy,
// for the four views not yet moved into services of their own (the gang Service,
// plugins/internal/gangs, holds gang state): TenantHardware's rating of a node for a
// pod and its tier-borrowing verdict, WorkloadAware's rule for the nodes a pod keeps
// off, and ResourceFragmentation's view of GPUs published through DRA. Each is
// published by its plugin (per profile; the DRA view per process) and read by others
// (NetworkFabric, GangPreemption, WorkloadAware); a reader gets nil while its
// writer is not enabled.
package gangview

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// NodePreferenceFunc rates a node for a pod as TenantHardware does: allowed is false
// when the pod's tenant may not use the node; score (0–100) is its preference.
type NodePreferenceFunc func(pod *corev1.Pod, node *corev1.Node) (score int64, allowed bool)

// KeepOffFunc returns which nodes pod keeps off while other nodes have room
// (WorkloadAware's rule: a pod that asks for no accelerator keeps off accelerator
// nodes), or nil when it keeps off none.
type KeepOffFunc func(pod *corev1.Pod) func(fwk.NodeInfo) bool

// TierBorrowFunc reports whether victim runs on node only by borrowing the node's
// HardwareTier (it is preemptible and its tenant tier is not admitted there) while
// the preemptor's tenant tier is admitted: TenantHardware's verdict.
type TierBorrowFunc func(victim, preemptor *corev1.Pod, node *corev1.Node) bool

// Registry holds one view per scheduler profile.
type Registry struct {
	mu         sync.RWMutex
	tierBorrow map[string]TierBorrowFunc
	prefs      map[string]NodePreferenceFunc
	keepOff    map[string]KeepOffFunc
	draGPUs    DRAGPUs
}

// DRAGPUs tells the nodes whose GPUs are DRA devices of a GPU DeviceClass and the
// pods whose ResourceClaims ask for such devices (ResourceFragmentation's view, one
// per process): Nodes returns the test for a node, nil while no node publishes
// any.
type DRAGPUs struct {
	Nodes func() func(node string) bool
	Pod   func(pod *corev1.Pod) bool
	// Asks is what the pod's ResourceClaims ask of GPU-class devices, allocated or
	// not: whole GPUs, or a share of one in thousandths (0, 0: none).
	Asks func(pod *corev1.Pod) (gpus, share int64)
	// Cards reads the nodes' GPU cards from the scheduler's allocated state
	// (assumed and in-flight allocations included) and returns, per node, its whole
	// free cards and the free capacity of all its cards in thousandths of a card;
	// ok is false for a node that publishes none. One call reads the state once.
	Cards func() (func(node string) (whole, milli int64, ok bool), error)
}

// SetDRAGPUs publishes the view of GPUs published through DRA.
func (r *Registry) SetDRAGPUs(g DRAGPUs) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.draGPUs = g
}

// DRAGPUs returns the view of GPUs published through DRA (zero: none published).
func (r *Registry) DRAGPUs() DRAGPUs {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.draGPUs
}

// SetTierBorrow publishes profile's tier borrowing verdict (TenantHardware's).
func (r *Registry) SetTierBorrow(profile string, f TierBorrowFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tierBorrow == nil {
		r.tierBorrow = map[string]TierBorrowFunc{}
	}
	r.tierBorrow[profile] = f
}

// TierBorrow returns profile's tier borrowing verdict, or nil.
func (r *Registry) TierBorrow(profile string) TierBorrowFunc {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.tierBorrow[profile]
}

// SetNodePreference publishes profile's node preference (TenantHardware's).
func (r *Registry) SetNodePreference(profile string, f NodePreferenceFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.prefs == nil {
		r.prefs = map[string]NodePreferenceFunc{}
	}
	r.prefs[profile] = f
}

// NodePreference returns profile's node preference, or nil.
func (r *Registry) NodePreference(profile string) NodePreferenceFunc {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.prefs[profile]
}

// SetKeepOff publishes profile's rule for nodes a pod keeps off (WorkloadAware's).
func (r *Registry) SetKeepOff(profile string, f KeepOffFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.keepOff == nil {
		r.keepOff = map[string]KeepOffFunc{}
	}
	r.keepOff[profile] = f
}

// KeepOff returns profile's keep-off rule, or nil when WorkloadAware does not run in it.
func (r *Registry) KeepOff(profile string) KeepOffFunc {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.keepOff[profile]
}
