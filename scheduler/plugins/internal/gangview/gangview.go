// Package gangview lets plugins of one profile see what other plugins know without a
// second copy: the gang members Coscheduling keeps in its index, and TenantHardware's
// rating of a node for a pod. Each publishes a view per scheduler profile, and other
// plugins (NetworkFabric) read it when they need it.
package gangview

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// PendingFunc returns a gang's members that still need a node (not bound, not
// waiting at Permit, not behind a scheduling gate).
type PendingFunc func(gang.Key) []*corev1.Pod

// PlacedFunc returns the nodes of a gang's members already placed: bound, waiting at
// Permit or permitted (a node once per member).
type PlacedFunc func(gang.Key) []string

// NodePreferenceFunc rates a node for a pod as TenantHardware does: allowed is false
// when the pod's tenant may not use the node; score (0–100) is its preference.
type NodePreferenceFunc func(pod *corev1.Pod, node *corev1.Node) (score int64, allowed bool)

// KeepOffFunc returns which nodes pod keeps off while other nodes have room
// (WorkloadAware's rule: a pod that asks for no accelerator keeps off accelerator
// nodes), or nil when it keeps off none.
type KeepOffFunc func(pod *corev1.Pod) func(fwk.NodeInfo) bool

// HeldFunc returns what ResourceReservations of other owners hold on a node against
// pod (nil when nothing): capacity a plan must not count as free.
type HeldFunc func(pod *corev1.Pod, ni fwk.NodeInfo) map[corev1.ResourceName]int64

// ShortageFunc is told that a gang whose PodGroup asks for it
// (spec.reserveCapacity) was rejected for lack of capacity, with one of its pending
// members (the shape of a slot) and how many members still need a node.
type ShortageFunc func(pg *v1alpha1.PodGroup, member *corev1.Pod, missing int)

// TierBorrowFunc reports whether victim runs on node only by borrowing the node's
// HardwareTier (it is preemptible and its tenant tier is not admitted there) while
// the preemptor's tenant tier is admitted: TenantHardware's verdict.
type TierBorrowFunc func(victim, preemptor *corev1.Pod, node *corev1.Node) bool

// PriorityFunc returns the value of the PriorityClass a gang's PodGroup names, as
// the queue orders it: nil when it names none (the members' own priorities apply);
// known is false when the gang is not in the view at all.
type PriorityFunc func(gang.Key) (value *int32, known bool)

// Gate is Coscheduling's admission of gang members to the scheduling queue (its
// PreEnqueue check; nil lets the pod in) and the hint that re-checks a member it
// turned away when another member arrives. ProfileClassifier runs it under its own
// name: see profileclassifier.Plugin.PreEnqueue.
type Gate struct {
	Admit       func(ctx context.Context, pod *corev1.Pod) *fwk.Status
	MemberAdded fwk.QueueingHintFn
}

// Registry holds one view per scheduler profile.
type Registry struct {
	mu         sync.RWMutex
	gates      map[string]Gate
	gateTaken  map[string]bool
	tierBorrow map[string]TierBorrowFunc
	priority   map[string]PriorityFunc
	held       HeldFunc
	shortage   ShortageFunc
	byProfile  map[string]PendingFunc
	prefs      map[string]NodePreferenceFunc
	placed     map[string]PlacedFunc
	keepOff    map[string]KeepOffFunc
	draGPUs    DRAGPUs
}

// SetGate publishes profile's gang admission (Coscheduling's).
func (r *Registry) SetGate(profile string, g Gate) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gates == nil {
		r.gates = map[string]Gate{}
	}
	r.gates[profile] = g
}

// TakeGate records that ProfileClassifier runs profile's gang admission, so that
// Coscheduling's own PreEnqueue need not.
func (r *Registry) TakeGate(profile string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gateTaken == nil {
		r.gateTaken = map[string]bool{}
	}
	r.gateTaken[profile] = true
}

// GateTaken reports whether ProfileClassifier runs profile's gang admission.
func (r *Registry) GateTaken(profile string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.gateTaken[profile]
}

// GateOf returns profile's gang admission; ok is false when the profile has none
// (Coscheduling is not enabled).
func (r *Registry) GateOf(profile string) (g Gate, ok bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	g, ok = r.gates[profile]
	return g, ok
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

// SetHeld publishes the reserved capacity view (ResourceReservation's, one per
// process).
func (r *Registry) SetHeld(f HeldFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held = f
}

// Held returns the reserved capacity view, or nil.
func (r *Registry) Held() HeldFunc {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.held
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

// SetPriority publishes profile's gang priorities (Coscheduling's).
func (r *Registry) SetPriority(profile string, f PriorityFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.priority == nil {
		r.priority = map[string]PriorityFunc{}
	}
	r.priority[profile] = f
}

// Priority returns profile's gang priorities, or nil.
func (r *Registry) Priority(profile string) PriorityFunc {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.priority[profile]
}

// SetShortage publishes what to do when a gang that asks for it lacks capacity
// (ResourceReservation's accumulation, one per process).
func (r *Registry) SetShortage(f ShortageFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.shortage = f
}

// Shortage returns the shortage handler, or nil.
func (r *Registry) Shortage() ShortageFunc {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.shortage
}

// SetPlaced publishes profile's placed-member view (Coscheduling's).
func (r *Registry) SetPlaced(profile string, f PlacedFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.placed == nil {
		r.placed = map[string]PlacedFunc{}
	}
	r.placed[profile] = f
}

// Placed returns profile's placed-member view, or nil.
func (r *Registry) Placed(profile string) PlacedFunc {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.placed[profile]
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

// Set publishes profile's view.
func (r *Registry) Set(profile string, f PendingFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byProfile == nil {
		r.byProfile = map[string]PendingFunc{}
	}
	r.byProfile[profile] = f
}

// Get returns profile's view, or nil when Coscheduling does not run in it.
func (r *Registry) Get(profile string) PendingFunc {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.byProfile[profile]
}

// PodGroupRef is the reference events about a gang are recorded against: the
// PodGroup of whichever API defines the gang (KubeNexus's when none exists).
func PodGroupRef(key gang.Key, pg *v1alpha1.PodGroup) *corev1.ObjectReference {
	ref := &corev1.ObjectReference{
		APIVersion: v1alpha1.GroupVersion.String(),
		Kind:       "PodGroup",
		Namespace:  key.Namespace,
		Name:       key.Name,
	}
	if pg != nil {
		ref.UID = pg.UID
		if pg.APIVersion != "" {
			ref.APIVersion = pg.APIVersion
		}
	}
	return ref
}
