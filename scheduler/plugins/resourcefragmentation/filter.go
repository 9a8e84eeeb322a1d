package resourcefragmentation

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/scheduler/placement"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/cyclestate"
)

const filterStateKey fwk.StateKey = "PreFilter" + Name

// ErrReasonKeptForQueued starts the message of a node kept for queued pods.
const ErrReasonKeptForQueued = "node kept for queued pods"

// keeping is the plugin with keepHostsForQueued: it also refuses the last hosts of
// sizes queued pods need, beside the GPU-room filter every instance runs (drafit.go).
type keeping struct{ *Plugin }

var (
	_ fwk.PreFilterPlugin   = &keeping{}
	_ fwk.FilterPlugin      = &keeping{}
	_ fwk.EnqueueExtensions = &keeping{}
)

// filterState is what Filter needs: the pod's GPUs, the larger sizes queued pods
// need, and how many nodes of the fleet host each.
type filterState struct {
	req    int64
	queued map[int64]int
	hosts  map[int64]int
	held   func(fwk.NodeInfo) map[corev1.ResourceName]int64
}

func (s *filterState) Clone() fwk.StateData { return s }

// PreFilter skips pods that ask for no GPU and pods for which no larger size is
// queued; otherwise it counts the hosts of each larger queued size over all nodes:
// O(nodes × queued sizes).
func (k *keeping) PreFilter(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	gpuRoom, err := k.preFilterGPURoom(cs, pod)
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	skip := func() (*fwk.PreFilterResult, *fwk.Status) {
		if gpuRoom {
			return nil, nil
		}
		return nil, fwk.NewStatus(fwk.Skip)
	}
	sh := shapeOf(pod, k.gpus)
	if sh.gpus == 0 {
		return skip()
	}
	_, queued := k.demand.snapshot(pod.UID)
	larger := map[int64]int{}
	for size, n := range queued {
		if size > sh.gpus && n > 0 {
			larger[size] = n
		}
	}
	if len(larger) == 0 {
		return skip()
	}
	held := k.heldFor(pod)
	hosts := map[int64]int{}
	for _, ni := range nodes {
		if n := ni.Node(); n == nil || n.Spec.Unschedulable {
			continue
		}
		free := k.room(ni, held, nil).GPUs
		for size := range larger {
			if free >= size {
				hosts[size]++
			}
		}
	}
	cs.Write(filterStateKey, &filterState{req: sh.gpus, queued: larger, hosts: hosts, held: held})
	return nil, nil
}

// PreFilterExtensions is nil: a node's verdict is recomputed from its room.
func (k *keeping) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// Filter refuses the node when the pod would take one of the last hosts of a larger
// size queued pods need.
func (k *keeping) Filter(ctx context.Context, cs fwk.CycleState, pod *corev1.Pod, ni fwk.NodeInfo) *fwk.Status {
	if st := k.Plugin.Filter(ctx, cs, pod, ni); !st.IsSuccess() {
		return st
	}
	s := cyclestate.Read[*filterState](cs, filterStateKey)
	if s == nil {
		return nil
	}
	size := placement.BrokenSize(k.room(ni, s.held, nil).GPUs, s.req, s.queued, s.hosts)
	if size == 0 {
		return nil
	}
	return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("%s: %d pod(s) of %d GPUs wait and %d node(s) can host them; keepHostsForQueued keeps them for those pods",
		ErrReasonKeptForQueued, s.queued[size], size, s.hosts[size]))
}

// EventsToRegister: a node kept for queued pods frees up when those pods are placed
// or deleted, when a bound GPU pod ends, or when a node joins or grows; and the
// GPU-room filter's events.
func (k *keeping) EventsToRegister(ctx context.Context) ([]fwk.ClusterEventWithHint, error) {
	events, err := k.Plugin.EventsToRegister(ctx)
	if err != nil {
		return nil, err
	}
	return append(events,
		fwk.ClusterEventWithHint{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Add | fwk.Update | fwk.Delete}, QueueingHintFn: k.isSchedulableAfterPodChange},
		fwk.ClusterEventWithHint{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAllocatable}},
	), nil
}

// isSchedulableAfterPodChange queues a refused GPU pod when a GPU pod of this
// scheduler was placed (a queued one fewer: the scheduler sees a pod it bound as an
// assigned pod added) or a GPU pod went away.
func (k *keeping) isSchedulableAfterPodChange(_ klog.Logger, pod *corev1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	if shapeOf(pod, k.gpus).gpus == 0 {
		return fwk.QueueSkip, nil
	}
	oldPod, _ := oldObj.(*corev1.Pod)
	newPod, _ := newObj.(*corev1.Pod)
	switch {
	case newPod == nil && oldPod != nil: // deleted
		if shapeOf(oldPod, k.gpus).gpus > 0 {
			return fwk.Queue, nil
		}
	case newPod != nil && newPod.Spec.NodeName != "" && (oldPod == nil || oldPod.Spec.NodeName == ""):
		if newPod.Spec.SchedulerName == k.demand.scheduler && shapeOf(newPod, k.gpus).gpus > 0 {
			return fwk.Queue, nil
		}
	}
	return fwk.QueueSkip, nil
}
