package resourcefragmentation

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/hardware"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/cyclestate"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/dragpus"
)

// The GPU-room filter. kube-scheduler's DynamicResources runs its allocator on every
// node it filters, GPU devices free or not, and that is most of a scheduling cycle
// for a pod whose ResourceClaims ask for GPUs. The plugin already keeps each node's
// cards with what the allocated state holds of them (dra.go), so it refuses, before
// DynamicResources (the operator names it first among the filters), the nodes whose
// GPU devices cannot hold the pod's requests: a necessary condition of the
// allocator's (hardware.GPUs.CanHold), so it never refuses a node the allocator would
// take, and the feasible nodes, hence the placement, are those DynamicResources
// alone would find. Pods whose requests it does not model exactly (all devices of a
// class, prioritized alternatives, administrative access, a claim not in the
// scheduler's cache yet) and clusters where GPU-class devices are published for
// nodes beside their own (slices without spec.nodeName) are left to DynamicResources.

const draStateKey fwk.StateKey = "PreFilterGPURoom" + Name

// ErrReasonGPURoom is the message of a node whose GPU devices cannot hold the pod's
// ResourceClaims.
const ErrReasonGPURoom = "the node's GPU devices cannot hold the pod's ResourceClaims"

// draFilterState is the pod's GPU requests and the cycle's view of the cards, which
// PreScore reuses.
type draFilterState struct {
	claims []hardware.GPURequest
	// key is claims' Key.
	key *dragpus.Key
	dc  *dragpus.Cycle
}

func (s *draFilterState) Clone() fwk.StateData { return s }

var (
	_ fwk.PreFilterPlugin = &Plugin{}
	_ fwk.FilterPlugin    = &Plugin{}
)

// PreFilter reads the pod's GPU requests and the allocated state once for the
// cycle; it skips pods whose claims ask for no GPU device, or that it does not
// model exactly.
func (pl *Plugin) PreFilter(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	active, err := pl.preFilterGPURoom(cs, pod)
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	if !active {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	return nil, nil
}

// preFilterGPURoom writes the filter's state and reports whether the filter applies
// to the pod.
func (pl *Plugin) preFilterGPURoom(cs fwk.CycleState, pod *corev1.Pod) (bool, error) {
	if pl.dra == nil || len(pod.Spec.ResourceClaims) == 0 {
		return false, nil
	}
	claims, _, exact := pl.dra.ClaimRequests(pod, false)
	if len(claims) == 0 || !exact {
		return false, nil
	}
	dc, err := pl.dra.Cycle()
	if err != nil {
		return false, fmt.Errorf("%s: reading allocated devices: %w", Name, err)
	}
	if dc == nil || dc.Remote {
		return false, nil
	}
	cs.Write(draStateKey, &draFilterState{claims: claims, key: pl.dra.Key(claims), dc: dc})
	return true, nil
}

// PreFilterExtensions is nil: the allocated state is read again each cycle.
func (pl *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// Filter refuses a node none of whose devices match a request, or whose matching
// devices with room are fewer than a request's count (Unschedulable, as
// DynamicResources says it: evicting the devices' users may make room).
func (pl *Plugin) Filter(_ context.Context, cs fwk.CycleState, _ *corev1.Pod, ni fwk.NodeInfo) *fwk.Status {
	s := cyclestate.Read[*draFilterState](cs, draStateKey)
	if s == nil {
		return nil
	}
	node := ni.Node().Name
	if e := pl.fleet.cards(ni, s.dc); e == nil || !s.dc.CanHold(node, e, s.claims, s.key) {
		return fwk.NewStatus(fwk.Unschedulable, ErrReasonGPURoom)
	}
	return nil
}

// EventsToRegister: a node refused for want of GPU room may take the pod once an
// allocation is released (its claim deallocated or deleted, or the pod that held it
// in flight gone) or devices or classes are published.
func (pl *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	if pl.dra == nil {
		return []fwk.ClusterEventWithHint{}, nil
	}
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.ResourceClaim, ActionType: fwk.Update | fwk.Delete}, QueueingHintFn: pl.isSchedulableAfterClaimChange},
		{Event: fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: fwk.Delete}, QueueingHintFn: isSchedulableAfterClaimantDeleted},
		{Event: fwk.ClusterEvent{Resource: fwk.ResourceSlice, ActionType: fwk.Add | fwk.Update}},
		{Event: fwk.ClusterEvent{Resource: fwk.DeviceClass, ActionType: fwk.Add | fwk.Update}},
	}, nil
}

// isSchedulableAfterClaimChange queues a pod with GPU claims when a claim's
// allocation is released: deallocated, or deleted while allocated.
func (pl *Plugin) isSchedulableAfterClaimChange(_ klog.Logger, pod *corev1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	if len(pod.Spec.ResourceClaims) == 0 {
		return fwk.QueueSkip, nil
	}
	oldClaim, _ := oldObj.(*resourceapi.ResourceClaim)
	newClaim, _ := newObj.(*resourceapi.ResourceClaim)
	if oldClaim == nil || oldClaim.Status.Allocation == nil {
		return fwk.QueueSkip, nil
	}
	if newClaim == nil || newClaim.Status.Allocation == nil {
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}

// isSchedulableAfterClaimantDeleted queues a pod with claims when a bound pod with
// claims goes: what it held in flight is released.
func isSchedulableAfterClaimantDeleted(_ klog.Logger, pod *corev1.Pod, oldObj, _ any) (fwk.QueueingHint, error) {
	gone, _ := oldObj.(*corev1.Pod)
	if len(pod.Spec.ResourceClaims) == 0 || gone == nil || len(gone.Spec.ResourceClaims) == 0 {
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
}
