package resourcereservation

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/nodefree"
)

// Filter refuses a node where the pod's requests fit only in capacity that
// reservations of other owners hold, unless Backfill lends it to the pod
// (preemptible: its owner takes it back through GangPreemption). A reservation
// holds its unconsumed slots: its slots less the owner's pods already on the node
// (bound or assumed, from the snapshot).
func (pl *Plugin) Filter(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, ni fwk.NodeInfo) *fwk.Status {
	s := readState(cs)
	if s == nil || s.borrower {
		return nil
	}
	name := ni.Node().Name
	rs, acc := s.idx.byNode[name], s.accumulated[name]
	if len(rs) == 0 && len(acc) == 0 {
		return nil
	}
	held, holders := heldOn(rs, ni, s.now, s.isMine)
	for res, v := range acc {
		held[res] += v
	}
	holders = append(holders, s.accumulators[name]...)
	var short []string
	for name, req := range s.requests {
		h := held[name]
		if h == 0 {
			continue
		}
		if free := nodefree.Of(ni, name); req > free-h {
			short = append(short, string(name))
		}
	}
	if len(short) == 0 {
		return nil
	}
	if s.recorded.CompareAndSwap(false, true) {
		pl.refused.Add(pod)
	}
	sort.Strings(short)
	return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("node(s) had %s held by ResourceReservation %s", strings.Join(short, ", "), strings.Join(holders, ", ")))
}

// heldOn sums what the reservations rs hold on the node beyond the pods that
// consume them, leaving out those mine says the pod may use; holders describes them.
func heldOn(rs []*reservation, ni fwk.NodeInfo, now time.Time, mine func(*reservation) bool) (map[corev1.ResourceName]int64, []string) {
	held := map[corev1.ResourceName]int64{}
	var holders []string
	pods := podsOf(ni)
	for _, r := range rs {
		if mine(r) || !r.holds(now) {
			continue
		}
		left := r.slots - podsConsuming(r, pods)
		if left <= 0 {
			continue
		}
		for name, v := range r.slot {
			held[name] += nodefree.Times(v, left)
		}
		holders = append(holders, fmt.Sprintf("%s (%s %s, %d slot(s))", r.key, r.ownerKind, r.ownerName, left))
	}
	return held, holders
}

// Holds reports whether any reservation holds room on a node now (false on a nil
// Shared, and before the ResourceReservation plugin has started it): plugins that
// plan on free capacity skip Held for every node when it does not.
func (s *Shared) Holds() bool {
	return s != nil && len(s.index().byNode) > 0
}

// Held returns what reservations of other owners hold on the node against pod, for
// plugins that plan on free capacity (NetworkFabric, ResourceFragmentation); nil
// when nothing is held.
func (s *Shared) Held(pod *corev1.Pod, ni fwk.NodeInfo) map[corev1.ResourceName]int64 {
	if s == nil {
		return nil
	}
	rs := s.index().byNode[ni.Node().Name]
	if len(rs) == 0 {
		return nil
	}
	held, _ := heldOn(rs, ni, time.Now(), func(r *reservation) bool { return r.consumedBy(pod) })
	return held
}

func podsOf(ni fwk.NodeInfo) []*corev1.Pod {
	infos := ni.GetPods()
	out := make([]*corev1.Pod, 0, len(infos))
	for _, p := range infos {
		out = append(out, p.GetPod())
	}
	return out
}
