package resourcefragmentation

import (
	"context"
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/hardware"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/scheduler/placement"

	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/cyclestate"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/dragpus"
)

const stateKey fwk.StateKey = "PreScore" + Name

// breakPenalty ranks a placement that takes the last hosts of a queued size below
// every other: fragmentation deltas are at most a node's GPUs × 1000.
const breakPenalty = 1 << 40

type stateData struct {
	req placement.Room
	// cpuOnly: the pod asks for no GPU (it is scored by the GPUs its CPU and memory
	// leave unbacked).
	cpuOnly bool
	// claims are the pod's ResourceClaim requests for GPU devices, tried on each
	// node's cards (nil: its GPUs, if any, are extended resources); dra is the
	// cycle's view of the GPUs published through DRA (nil: none are).
	claims []hardware.GPURequest
	// claimsKey is claims' Key.
	claimsKey *dragpus.Key
	dra       *dragpus.Cycle
	// fleet is the nodes' rooms as PreScore left them (nil: rooms depend on the
	// pod, held is set).
	fleet  *fleetView
	demand placement.Demand
	queued map[int64]int
	hosts  map[int64]int
	// scarcity prices the hosts of the demand's shapes by how few there are.
	scarcity placement.Scarcity
	// freeCliques are the multi-node NVLink domains (nvidia.com/gpu.clique) whose
	// nodes, as far as the pod's feasible nodes show, have every GPU free.
	freeCliques map[string]bool
	// wholeNode is the largest GPU count in the demand: a node with no more GPUs is
	// one a task may need whole.
	wholeNode int64
	// held is what reservations of other owners hold on a node against the pod (nil:
	// none): room the pod cannot use is not free to it.
	held func(fwk.NodeInfo) map[corev1.ResourceName]int64
	// backCPU and backMemory are the CPU and memory the demand asks for per GPU.
	backCPU, backMemory float64
}

func (s *stateData) Clone() fwk.StateData { return s }

// PreScore takes the demand as it is now (the pod itself left out) and counts, for
// each queued size, the nodes that host it among the nodes that passed the pod's
// filters, and for each shape of the demand its hosts over the fleet: O(nodes ×
// shapes), once per GPU pod (and per CPU pod while GPU pods are expected).
func (pl *Plugin) PreScore(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) *fwk.Status {
	sh := pl.demand.shape(pod)
	held := pl.heldFor(pod)
	if !sh.isGPU() && pl.demand.empty() {
		return fwk.NewStatus(fwk.Skip)
	}
	var dc *dragpus.Cycle
	if f := cyclestate.Read[*draFilterState](cs, draStateKey); f != nil {
		dc = f.dc // read at PreFilter, this cycle
	} else if pl.dra != nil {
		var err error
		if dc, err = pl.dra.Cycle(); err != nil {
			return fwk.AsStatus(fmt.Errorf("%s: reading allocated devices: %w", Name, err))
		}
	}
	s := &stateData{dra: dc, held: held, cpuOnly: !sh.isGPU()}
	if s.cpuOnly {
		// A pod that asks for no GPU still takes CPU and memory that GPU tasks need
		// beside their GPUs: it is scored while GPU pods are expected and one of its
		// nodes has GPUs free, and skipped otherwise.
		if !s.anyFreeGPUs(pl, nodes) {
			return fwk.NewStatus(fwk.Skip)
		}
		sh = cpuShapeOf(pod)
	} else if pl.dra != nil && shapeOf(pod, pl.gpus).gpus == 0 {
		s.claims, _ = pl.dra.Requests(pod, false)
		s.claimsKey = pl.dra.Key(s.claims)
	}
	// The fleet's rooms, kept across cycles, once the pod is known to be scored
	// (a CPU pod none of whose nodes has a GPU free was skipped above, reading only
	// its feasible nodes).
	var rooms []placement.Room
	if held == nil {
		s.fleet, rooms = pl.fleet.refresh(pl, pl.list(nodes), dc)
	}
	s.req = placement.Room{GPUs: sh.gpus, MilliCPU: sh.milliCPU, Memory: sh.memory}
	demand, queued := pl.demand.snapshot(pod.UID)
	hosts := map[int64]int{}
	cliqueNodes, cliqueBusy := map[string]int{}, map[string]bool{}
	for _, ni := range nodes {
		room, capacity, clique := s.node(pl, ni)
		free := room.GPUs
		for k := range queued {
			if free >= k {
				hosts[k]++
			}
		}
		if clique != "" {
			cliqueNodes[clique]++
			if free < capacity {
				cliqueBusy[clique] = true
			}
		}
	}
	s.demand, s.queued, s.hosts, s.freeCliques = demand, queued, hosts, map[string]bool{}
	if s.fleet == nil {
		rooms = pl.rooms(nodes, held, dc)
	}
	s.scarcity = placement.NewScarcity(rooms, demand)
	for c, n := range cliqueNodes {
		if n > 1 && !cliqueBusy[c] {
			s.freeCliques[c] = true
		}
	}
	for _, n := range demand {
		s.wholeNode = max(s.wholeNode, n.GPUs)
	}
	s.backCPU, s.backMemory = demand.Backing()
	cs.Write(stateKey, s)
	return nil
}

// anyFreeGPUs reports whether one of the nodes has a GPU free.
func (s *stateData) anyFreeGPUs(pl *Plugin, nodes []fwk.NodeInfo) bool {
	for _, ni := range nodes {
		if room, capacity, _ := s.node(pl, ni); capacity > 0 && room.FreeGPUs() > 0 {
			return true
		}
	}
	return false
}

// node is the node's room for the pod, its GPU capacity and its NVLink domain
// (nvidia.com/gpu.clique): from the fleet when PreScore kept it there, computed
// otherwise.
func (s *stateData) node(pl *Plugin, ni fwk.NodeInfo) (room placement.Room, capacity int64, clique string) {
	if m := s.fleet.of(ni); m != nil {
		return m.room, m.capacity, m.clique
	}
	e := pl.cardsOf(ni, s.dra)
	return pl.roomWith(ni, s.held, s.dra, e), pl.capacityWith(ni, e), ni.Node().Labels[v1alpha1.LabelGPUClique]
}

// cards is the node's cards for the pod's claims (nil: it has none).
func (s *stateData) cards(ni fwk.NodeInfo) *dragpus.Entry {
	if m := s.fleet.of(ni); m != nil && !m.scalar {
		return m.e
	}
	return s.dra.Entry(ni.Node().Name)
}

// list is every node of the snapshot (the feasible nodes when the plugin has no
// lister).
func (pl *Plugin) list(feasible []fwk.NodeInfo) []fwk.NodeInfo {
	if pl.nodes != nil {
		if all, err := pl.nodes.List(); err == nil {
			return all
		}
	}
	return feasible
}

// heldFor returns what reservations of other owners hold on a node against the pod
// (nil: no reservations).
func (pl *Plugin) heldFor(pod *corev1.Pod) func(fwk.NodeInfo) map[corev1.ResourceName]int64 {
	if !pl.reservations.Holds() {
		return nil
	}
	return func(ni fwk.NodeInfo) map[corev1.ResourceName]int64 { return pl.reservations.Held(pod, ni) }
}

// rooms is the free room of every schedulable node of the snapshot (of the feasible
// nodes when the plugin has no lister): a shape's hosts are counted over the fleet,
// not over the nodes this pod may use.
func (pl *Plugin) rooms(feasible []fwk.NodeInfo, held func(fwk.NodeInfo) map[corev1.ResourceName]int64, dc *dragpus.Cycle) []placement.Room {
	nodes := pl.list(feasible)
	rooms := make([]placement.Room, 0, len(nodes))
	for _, ni := range nodes {
		if n := ni.Node(); n == nil || n.Spec.Unschedulable {
			continue
		}
		rooms = append(rooms, pl.room(ni, held, dc))
	}
	return rooms
}

// Score is minus the rise in the node's fragmentation plus the GPUs of expected
// demand the placement leaves without a host and the GPUs of demand bound to the
// node's model it takes (placement.Scarcity), in thousandths of a GPU, lowered by breakPenalty when the placement takes one of the last hosts of a size
// queued pods need. NormalizeScore maps it to 0–100.
func (pl *Plugin) Score(_ context.Context, cs fwk.CycleState, _ *corev1.Pod, ni fwk.NodeInfo) (int64, *fwk.Status) {
	s := cyclestate.Read[*stateData](cs, stateKey)
	if s == nil {
		return 0, fwk.AsStatus(cyclestate.ErrMissing)
	}
	const misfit = -breakPenalty - 1<<20 // does not fit (Filter has already said so): the bottom of the lower band
	free, capacity, clique := s.node(pl, ni)
	req := s.req
	if s.claims != nil {
		e := s.cards(ni)
		if e == nil {
			return misfit, nil
		}
		whole, partial, ok := s.dra.PlaceOn(ni.Node().Name, e, s.claims, s.claimsKey)
		if !ok {
			return misfit, nil
		}
		// What placing the claims takes from the node's room (placement.Room.Less):
		// the whole cards it breaks, the shares it leaves, CPU and memory.
		req = placement.Room{GPUs: free.GPUs - whole, Partial: partial, MilliCPU: s.req.MilliCPU, Memory: s.req.Memory}
	} else if free.GPUs < req.GPUs {
		return misfit, nil
	}
	cost := placement.FragmentationDelta(free, req, s.demand) + s.scarcity.Lost(free, req)
	if s.cpuOnly {
		// No GPU taken: what counts is the CPU and memory it takes from GPUs.
		cost += placement.UnbackedDelta(free, req, s.backCPU, s.backMemory)
		return -int64(math.Round(cost * 1000)), nil
	}
	score := -int64(math.Round((cost + s.scarcity.Claimed(free, req)) * 1000))
	if placement.Breaks(free.GPUs, req.GPUs, s.queued, s.hosts) || s.breaksClique(clique, req.GPUs, capacity) {
		score -= breakPenalty
	}
	return score, nil
}

// ScoreExtensions normalises the scores.
func (pl *Plugin) ScoreExtensions() fwk.ScoreExtensions { return pl }

// NormalizeScore maps the scores to 0–100 in two bands, so that one node that would
// take a queued size's last host does not flatten the ranking of the others: nodes
// without that penalty get 20–100 (least fragmenting highest), nodes with it 0–19.
// When all nodes of a band are alike they get the band's top (the plugin has no
// preference among them).
func (pl *Plugin) NormalizeScore(_ context.Context, _ fwk.CycleState, _ *corev1.Pod, scores fwk.NodeScoreList) *fwk.Status {
	const split = 20
	type band struct {
		lo, hi   int64
		seen     bool
		from, to int64
	}
	good, bad := band{from: split, to: fwk.MaxScore}, band{from: 0, to: split - 1}
	bandOf := func(s int64) (*band, int64) {
		if s <= -breakPenalty/2 {
			return &bad, s + breakPenalty
		}
		return &good, s
	}
	for _, ns := range scores {
		b, v := bandOf(ns.Score)
		if !b.seen {
			b.lo, b.hi, b.seen = v, v, true
		}
		b.lo, b.hi = min(b.lo, v), max(b.hi, v)
	}
	for i := range scores {
		b, v := bandOf(scores[i].Score)
		if b.hi == b.lo {
			scores[i].Score = b.to
			continue
		}
		scores[i].Score = b.from + int64(float64(v-b.lo)/float64(b.hi-b.lo)*float64(b.to-b.from))
	}
	return nil
}

// breaksClique reports whether placing req GPUs on the node would break a free
// multi-node NVLink domain while the demand has tasks that take whole nodes of this
// size (the members of gangs that span a domain): such domains are kept whole.
func (s *stateData) breaksClique(clique string, req, capacity int64) bool {
	return clique != "" && s.freeCliques[clique] && req < capacity && s.wholeNode >= capacity
}
