// Package resourcereservation makes ResourceReservations hold capacity: pods that
// are not the owner's cannot use what a reservation holds on its node, the owner's
// pods are drawn to it and consume it slot by slot, and reservations that name no
// node are placed by the scheduler. The manager's controller ends reservations (TTL,
// owner gone); the scheduler frees their capacity at the expiry instant itself.
package resourcereservation

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/apis/config"
	"github.com/kube-nexus/kubenexus/scheduler/crdcache"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/cyclestate"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/gangs"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/nodefree"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/refused"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/names"
)

// Name is the plugin's registered name.
const Name = names.ResourceReservation

const stateKey fwk.StateKey = "PreFilter" + Name

// Plugin is the ResourceReservation plugin of one scheduler profile.
type Plugin struct {
	handle fwk.Handle
	shared *Shared
	// gangs gives the members a gang has placed and those still pending, for
	// accumulating reservations (nil in unit tests).
	gangs *gangs.Service
	// refused are the pending pods Filter refused a node to; they are activated when
	// reservations stop holding (an expiry is no API event, and the scheduler's own
	// reservation event may reach the queue before this plugin's cache has the
	// change).
	refused *refused.Pods
}

var (
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.FilterPlugin      = &Plugin{}
	_ fwk.PreScorePlugin    = &Plugin{}
	_ fwk.ScorePlugin       = &Plugin{}
	_ fwk.ReservePlugin     = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
	_ fwk.SignPlugin        = &Plugin{}
)

// New builds the plugin on the process's Shared reservation state, starting it on
// first use.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, crds *crdcache.Provider, shared *Shared, members *gangs.Service, devices nodeDevices) (*Plugin, error) {
	args, err := config.DecodeResourceReservationArgs(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	c, err := crds.Get(ctx, h.KubeConfig())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	if err := shared.start(ctx, h, c, time.Duration(*args.PlacementRetrySeconds)*time.Second, args.GPUResources, devices); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	refusedPods, err := refused.New(h)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	pl := &Plugin{handle: h, shared: shared, gangs: members, refused: refusedPods}
	shared.whenReleased(func() { pl.refused.Activate(klog.FromContext(ctx), "Reserved capacity was released") })
	return pl, nil
}

// Name returns the plugin's name.
func (pl *Plugin) Name() string { return Name }

type stateData struct {
	idx *index
	now time.Time
	// mine are the held reservations the pod may consume.
	mine []*reservation
	// requests are the pod's requests in milli-units.
	requests map[corev1.ResourceName]int64
	// borrower: a preemptible pod Backfill lends reserved capacity to.
	borrower bool
	// accumulated is the room accumulating reservations of other owners hold on
	// each node this cycle, and accumulators names them per node.
	accumulated  nodefree.Tally[string]
	accumulators map[string][]string
	// lent are the accumulating reservations whose room this bounded pod may use,
	// with the slots each holds per node.
	lent     map[types.NamespacedName]map[string]int
	recorded atomic.Bool
}

func (s *stateData) Clone() fwk.StateData { return s }

func readState(cs fwk.CycleState) *stateData { return cyclestate.Read[*stateData](cs, stateKey) }

// isMine reports whether r is one the pod may consume.
func (s *stateData) isMine(r *reservation) bool {
	for _, m := range s.mine {
		if m == r {
			return true
		}
	}
	return false
}

// PreFilter takes the reservation index for the cycle. With no reservation holding
// capacity on any node the plugin skips the pod: it costs pods nothing then.
func (pl *Plugin) PreFilter(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	idx := pl.shared.index()
	if len(idx.byNode) == 0 && len(idx.accumulating) == 0 {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	now := time.Now()
	s := &stateData{idx: idx, now: now, mine: idx.mine(pod, now), requests: nodefree.Requests(pod), borrower: pl.shared.Lends(pod)}
	if !s.borrower {
		var bound time.Duration
		if pl.shared.lendsBounded() {
			if b, ok := workload.RuntimeBound(pod); ok {
				bound = b
			}
		}
		s.accumulated, s.accumulators, s.lent = pl.accumulated(idx, nodes, now, s.isMine, bound)
	}
	cs.Write(stateKey, s)
	return nil, nil
}

// accumulated assigns the room accumulating reservations hold in this cycle: for
// each (not the pod's own), its missing members — slots less the members its gang
// has placed — go to the nodes, in snapshot order, whose free room takes a slot and
// that a pending member may run on. Cost O(nodes) per accumulating reservation; none
// when there are none.
//
// A pod whose runtime is bounded (bound > 0, with Backfill on) borrows that room
// when it ends, with the safety margin, before the gang can start: when the room
// held now is short of the gang's need and the pods that free the rest end later
// (EASY backfill's rule: never delay the waiting gang's earliest start).
func (pl *Plugin) accumulated(idx *index, nodes []fwk.NodeInfo, now time.Time, mine func(*reservation) bool, bound time.Duration) (nodefree.Tally[string], map[string][]string, map[types.NamespacedName]map[string]int) {
	if len(idx.accumulating) == 0 {
		return nil, nil, nil
	}
	held := nodefree.Tally[string]{}
	names := map[string][]string{}
	lent := map[types.NamespacedName]map[string]int{}
	// Room lent to bounded pods still counts toward the slot it was lent from.
	borrowed := pl.shared.borrowed()
	for _, r := range idx.accumulating {
		if mine(r) || !r.holds(now) {
			continue
		}
		key := gang.Key{Namespace: r.key.Namespace, Name: r.ownerName}
		missing := r.slots
		var member *corev1.Pod
		if pl.gangs != nil {
			missing -= len(pl.gangs.PlacedNodes(key))
			if ps := pl.gangs.Pending(key); len(ps) > 0 {
				member = ps[0]
			}
		}
		slots := map[string]int{}
		// The room accumulates only on nodes the gang's tenant may hold capacity on
		// (a PodGroup's reserveCapacity is the tenant's to write).
		tiers := pl.shared.tiers.Load()
		tenant := v1alpha1.TenantTier("")
		if tiers != nil {
			tenant = pl.shared.gate.tenantOf(r.key.Namespace)
		}
		for _, ni := range nodes {
			if missing <= 0 {
				break
			}
			if member != nil && !placement.Eligible(member, ni.Node()) || tiers != nil && pl.shared.gate.refusesTenant(tiers, tenant, ni.Node()) != "" {
				continue
			}
			name := ni.Node().Name
			k := missing
			for res, v := range r.slot {
				free := nodefree.Of(ni, res) - held[name][res] + borrowed[r.key][name][res]
				if n := int(free / v); n < k {
					k = n
				}
			}
			if k > 0 {
				slots[name] = k
				missing -= k
			}
		}
		note := ""
		if bound > 0 && missing > 0 {
			start := shadow(r, missing, nodes, held, slots, member, pl.shared.borrows)
			if !now.Add(bound + pl.shared.margin()).After(start) {
				lent[r.key] = slots // the pod ends before the gang can start: it may borrow
				continue
			}
			note = fmt.Sprintf("; this pod may run %s, the gang may start ", bound)
			if start.Equal(never) {
				note += "once pods with no runtime bound end"
			} else {
				note += "in " + start.Sub(now).Round(time.Second).String()
			}
		}
		for name, k := range slots {
			held.Add(name, r.slot, k)
			names[name] = append(names[name], fmt.Sprintf("%s (PodGroup %s, %d slot(s) accumulating%s)", r.key, r.ownerName, k, note))
		}
	}
	return held, names, lent
}

// never is the start of a gang that waits for pods whose runtime is not bounded.
var never = time.Unix(1<<62, 0)

// shadow is the earliest time an accumulating reservation's gang can start: when the
// bound pods that end soonest (activeDeadlineSeconds, Kueue's max execution time)
// have freed room for the missing slots it does not hold yet, beside what this cycle
// holds (held, and slots: what r itself holds per node; pods borrowing held room are
// counted in it). never when the pods that would free it have no bound. It is the
// shadow time the placement engine gives (placement.EarliestStart, which kubectl
// kubenexus and the placement-feasibility check use too): the missing slots as one
// shape over the nodes a member may run on, in no domain.
func shadow(r *reservation, missing int, nodes []fwk.NodeInfo, held nodefree.Tally[string], slots map[string]int, member *corev1.Pod, borrowing func(types.UID) bool) time.Time {
	var plan []placement.PlanNode
	var releases []placement.Release
	for _, ni := range nodes {
		if member != nil && !placement.Eligible(member, ni.Node()) {
			continue
		}
		name := ni.Node().Name
		free := make(map[corev1.ResourceName]int64, len(r.slot))
		for res, v := range r.slot {
			free[res] = nodefree.Of(ni, res) - held[name][res] - nodefree.Times(v, slots[name])
		}
		i := len(plan)
		plan = append(plan, placement.PlanNode{Name: name, Domains: []string{placement.AnyDomain}, Free: free, Eligible: []bool{true}})
		for _, pi := range ni.GetPods() {
			p := pi.GetPod()
			if borrowing(p.UID) {
				continue // its room is in the hold already
			}
			if b, ok := workload.RuntimeBound(p); ok {
				releases = append(releases, placement.Release{At: workload.Ends(p, b), Node: i, Frees: nodefree.Requests(p)})
			}
		}
	}
	at, _, ok := placement.EarliestStart(plan, []placement.Shape{{Requests: r.slot, Count: missing}}, 0, releases)
	if !ok {
		return never
	}
	return at
}

// PreFilterExtensions is nil: what other pods hold is read from the node's pods.
func (pl *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

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

// PreScore skips pods that own no reservation with a node.
func (pl *Plugin) PreScore(_ context.Context, cs fwk.CycleState, _ *corev1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	s := readState(cs)
	if s == nil {
		return fwk.NewStatus(fwk.Skip)
	}
	for _, r := range s.mine {
		if r.node != "" {
			return nil
		}
	}
	return fwk.NewStatus(fwk.Skip)
}

// Score is 100 on a node where one of the pod's reservations has a slot left, else
// 0: the owner's pods take their reserved capacity first.
func (pl *Plugin) Score(_ context.Context, cs fwk.CycleState, _ *corev1.Pod, ni fwk.NodeInfo) (int64, *fwk.Status) {
	s := readState(cs)
	if s == nil {
		return 0, nil
	}
	name := ni.Node().Name
	var pods []*corev1.Pod
	for _, r := range s.mine {
		if r.node != name {
			continue
		}
		if pods == nil {
			pods = podsOf(ni)
		}
		if podsConsuming(r, pods) < r.slots {
			return fwk.MaxScore, nil
		}
	}
	return 0, nil
}

// ScoreExtensions is nil: scores are already on the 0–100 scale.
func (pl *Plugin) ScoreExtensions() fwk.ScoreExtensions { return nil }

// Reserve notes where the pod goes, so that a reservation placed meanwhile counts
// it before it is bound, and has the status of the reservations it consumes on
// that node rewritten.
func (pl *Plugin) Reserve(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, nodeName string) *fwk.Status {
	pl.shared.assume(pod, nodeName)
	if s := readState(cs); s != nil {
		for key, slots := range s.lent {
			if slots[nodeName] > 0 {
				pl.shared.borrow(pod, key, nodeName, s.requests)
			}
		}
		for _, r := range s.mine {
			if r.node == nodeName || r.accumulate {
				pl.shared.enqueue(r.key)
			}
		}
	}
	return nil
}

// Unreserve forgets the assumption and rewrites the consumed reservations' status.
func (pl *Plugin) Unreserve(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, nodeName string) {
	pl.shared.forget(pod)
	pl.shared.unborrow(pod)
	if s := readState(cs); s != nil {
		for _, r := range s.mine {
			if r.node == nodeName || r.accumulate {
				pl.shared.enqueue(r.key)
			}
		}
	}
}

// EventsToRegister: a pod refused for held capacity can fit once a pod leaves the
// node, or once a reservation stops holding (changed, expired or deleted): that
// retries the refused pods from the plugin's own cache (whenReleased), not from an
// event of the scheduler's, which would make kube-scheduler run a dynamic informer
// of ResourceReservations (its watch of an idle resource held start-up about a
// second).
func (pl *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Delete}, QueueingHintFn: isSchedulableAfterPodDelete},
	}, nil
}

// isSchedulableAfterPodDelete queues when an assigned pod goes: its node has room
// again.
func isSchedulableAfterPodDelete(_ klog.Logger, _ *corev1.Pod, oldObj, _ any) (fwk.QueueingHint, error) {
	if p, ok := oldObj.(*corev1.Pod); ok && p.Spec.NodeName == "" {
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
}

// SignPod: the verdict depends on the owners the pod may consume reservations of;
// pods that own none (nearly all) add nothing.
func (pl *Plugin) SignPod(_ context.Context, pod *corev1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	idx := pl.shared.index()
	if len(idx.byOwner) == 0 {
		return nil, nil
	}
	var keys []string
	if pl.shared.Lends(pod) {
		keys = append(keys, "borrower")
	}
	for _, o := range ownersOf(pod) {
		if len(idx.byOwner[o]) > 0 {
			keys = append(keys, string(o))
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	return []fwk.SignFragment{{Key: "kubenexus.io/reservation-owners", Value: keys}}, nil
}
