package resourcereservation

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/gangs"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/nodefree"
)

// PreFilter takes the reservation index for the cycle. With no reservation holding
// capacity on any node the plugin skips the pod: it costs pods nothing then.
func (pl *Plugin) PreFilter(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	idx := pl.shared.index()
	lost := pl.gangs != nil && pl.gangs.HasLost()
	if len(idx.byNode) == 0 && len(idx.accumulating) == 0 && !lost {
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
		var repairs map[gang.Key]map[string]int
		s.accumulated, s.accumulators, s.lent, repairs = pl.accumulated(idx, nodes, now, s.isMine, bound)
		if lost {
			s.accumulated, s.accumulators = holdLost(pl.tenantMayHold(nodes), pl.gangs.LostRooms(now), pl.gangOf(pod), repairs, s.accumulated, s.accumulators)
		}
	}
	cs.Write(stateKey, s)
	return nil, nil
}

// tenantMayHold reports whether the tenant of a namespace may hold room on a node
// by name, by the HardwareTiers (always, without any): a lost member may have run
// where its tenant only borrowed room (a preemptible pod lent a higher tier's).
// Looks up the snapshot's nodes once per call of the function it returns.
func (pl *Plugin) tenantMayHold(nodes []fwk.NodeInfo) func(namespace, node string) bool {
	tiers := pl.shared.tiers.Load()
	if tiers == nil {
		return func(string, string) bool { return true }
	}
	var byName map[string]*corev1.Node
	return func(namespace, node string) bool {
		if byName == nil {
			byName = make(map[string]*corev1.Node, len(nodes))
			for _, ni := range nodes {
				byName[ni.Node().Name] = ni.Node()
			}
		}
		n := byName[node]
		return n == nil || pl.shared.gate.refusesTenant(tiers, pl.shared.gate.tenantOf(namespace), n) == ""
	}
}

// holdLost adds to held the rooms of whole gangs' lost members (gangs.LostRoom),
// but for the pod's own gang's and those the gang's repair reservation covers in
// this cycle (repairs: the slots it holds per node), on nodes whose HardwareTier
// lets the gang's tenant hold room. The manager's reservation lags the losses — it
// is created once the manager sees the first, and grows as it sees more — so it
// covers only as many rooms as it holds slots now: first those on the nodes it
// holds them on, then any; the rest stay held (a LeaderWorkerSet group whose
// controller deletes it whole after a worker failed loses the rest once the
// reservation exists, and a pending group took their room).
func holdLost(mayHold func(namespace, node string) bool, rooms []gangs.LostRoom, own gang.Key, repairs map[gang.Key]map[string]int, held nodefree.Tally[string], names map[string][]string) (nodefree.Tally[string], map[string][]string) {
	if len(rooms) == 0 {
		return held, names
	}
	own, _ = own.Whole()
	covered := coveredRooms(rooms, repairs)
	for i, l := range rooms {
		if l.Key == own || covered[i] || !mayHold(l.Key.Namespace, l.Node) {
			continue
		}
		if held == nil {
			held, names = nodefree.Tally[string]{}, map[string][]string{}
		}
		held.Add(l.Node, l.Requests, 1)
		names[l.Node] = append(names[l.Node], fmt.Sprintf("%s/%s-repair (PodGroup %s: a lost member's room, held for its replacement)", l.Key.Namespace, l.Key.Name, l.Key.Name))
	}
	return held, names
}

// coveredRooms marks the lost rooms their gang's repair reservation holds slots
// for in this cycle: one room per slot, those on a node the reservation holds a
// slot on first.
func coveredRooms(rooms []gangs.LostRoom, repairs map[gang.Key]map[string]int) []bool {
	covered := make([]bool, len(rooms))
	if len(repairs) == 0 {
		return covered
	}
	left := map[gang.Key]int{}
	onNode := map[gang.Key]map[string]int{}
	for key, slots := range repairs {
		onNode[key] = maps.Clone(slots)
		for _, n := range slots {
			left[key] += n
		}
	}
	for i, l := range rooms {
		if onNode[l.Key][l.Node] > 0 {
			onNode[l.Key][l.Node]--
			left[l.Key]--
			covered[i] = true
		}
	}
	for i, l := range rooms {
		if !covered[i] && left[l.Key] > 0 {
			left[l.Key]--
			covered[i] = true
		}
	}
	return covered
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
func (pl *Plugin) accumulated(idx *index, nodes []fwk.NodeInfo, now time.Time, mine func(*reservation) bool, bound time.Duration) (held nodefree.Tally[string], names map[string][]string, lent map[types.NamespacedName]map[string]int, repairs map[gang.Key]map[string]int) {
	if len(idx.accumulating) == 0 {
		return nil, nil, nil, nil
	}
	held, names, lent = nodefree.Tally[string]{}, map[string][]string{}, map[types.NamespacedName]map[string]int{}
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
			missing -= max(0, pl.gangs.PlacedLive(key)-pl.shared.base(r))
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
			if !r.selects(ni.Node()) || !mayHold(member, ni.Node()) || tiers != nil && pl.shared.gate.refusesTenant(tiers, tenant, ni.Node()) != "" {
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
		if r.repair && len(slots) > 0 {
			if repairs == nil {
				repairs = map[gang.Key]map[string]int{}
			}
			repairs[key] = slots // lent or held, the lost members' room is in it
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
	return held, names, lent, repairs
}

// mayHold reports whether room on node may be held for member: a node member may
// run on (placement.Eligible); with no member pending yet (a repairing gang
// whose replacements its controller has not created), a node that is schedulable
// and has no NoSchedule or NoExecute taint — not the NotReady or unreachable
// node the lost members ran on.
func mayHold(member *corev1.Pod, node *corev1.Node) bool {
	if member != nil {
		return placement.Eligible(member, node)
	}
	return schedulable(node)
}

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

// gangOf is the pod's gang as the gang Service files it (the zero Key for none).
func (pl *Plugin) gangOf(pod *corev1.Pod) gang.Key {
	if m, ok, err := pl.gangs.Of(pod); err == nil && ok {
		return m.Key
	}
	return gang.Key{}
}
