package resourcefragmentation

import (
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/dragpus"
)

// A GPU pod's PreScore reads the room of every node of the fleet (the hosts of each
// shape are counted over it), and its Score reads it again for each feasible node.
// Between two pods only the nodes the last placements changed have another room, so
// the plugin keeps each node's room across cycles, with what it was computed from:
// the snapshot's NodeInfo (the scheduler keeps one per node and updates it in
// place), its generation, its Node object and the node's DRA cards (dragpus.Entry,
// checked against the allocated state every cycle). A node whose NodeInfo, Node,
// generation and cards are the same as last time has the same room; any other is
// computed afresh. Rooms that depend on the pod (reservations of other owners hold
// part of a node against it) are not kept.

// fleet is the nodes' rooms kept across cycles. PreScore refreshes it (one pod at
// a time); Score and Filter only read it.
type fleet struct {
	mu sync.Mutex
	// nodes are in the order of the lister's list when last refreshed; at maps
	// each of their NodeInfos to its place.
	nodes []nodeMemo
	at    map[fwk.NodeInfo]int
	// rooms are the rooms of the schedulable nodes, reused for each refresh.
	rooms []placement.Room
	// last is the fleet as the last refresh left it, for the next cycle's Filter.
	last atomic.Pointer[fleetView]
}

// nodeMemo is one node's room and what it was computed from.
type nodeMemo struct {
	ni   fwk.NodeInfo
	node *corev1.Node
	gen  int64
	// version is the published devices' version ref and e were read for (-1: no
	// DRA cycle); e is the node's cards (nil: it has none, or its GPUs are
	// extended resources).
	version int64
	ref     dragpus.Ref
	e       *dragpus.Entry
	scalar  bool
	valid   bool

	room     placement.Room
	capacity int64
	clique   string
}

// fleetView is the fleet as one cycle's PreScore left it, for its Score.
type fleetView struct {
	nodes []nodeMemo
	at    map[fwk.NodeInfo]int
}

// of returns the node's memo (nil: the node is not the fleet's, e.g. a NodeInfo
// the framework cloned to add nominated pods).
func (v *fleetView) of(ni fwk.NodeInfo) *nodeMemo {
	if v == nil {
		return nil
	}
	if i, ok := v.at[ni]; ok && v.nodes[i].valid && v.nodes[i].ni == ni && v.nodes[i].node == ni.Node() && v.nodes[i].gen == ni.GetGeneration() {
		return &v.nodes[i]
	}
	return nil
}

// refresh brings every node's room up to date for the cycle dc (nil: no DRA GPUs)
// and returns the fleet as it is now and the rooms of its schedulable nodes
// (valid until the next refresh).
func (f *fleet) refresh(pl *Plugin, list []fwk.NodeInfo, dc *dragpus.Cycle) (*fleetView, []placement.Room) {
	f.mu.Lock()
	defer f.mu.Unlock()
	moved := len(f.nodes) != len(list)
	if moved {
		f.nodes = make([]nodeMemo, len(list))
	}
	version := dc.Version()
	f.rooms = f.rooms[:0]
	for i, ni := range list {
		m := &f.nodes[i]
		if m.ni != ni {
			*m = nodeMemo{ni: ni}
			moved = true
		}
		if ni.Node() == nil {
			m.valid = false // a node deleted with pods left: no room, and not scheduled to
			continue
		}
		pl.refreshNode(m, dc, version)
		if !m.node.Spec.Unschedulable {
			f.rooms = append(f.rooms, m.room)
		}
	}
	if moved {
		f.at = make(map[fwk.NodeInfo]int, len(list))
		for i := range f.nodes {
			f.at[f.nodes[i].ni] = i
		}
	}
	v := &fleetView{nodes: f.nodes, at: f.at}
	f.last.Store(v)
	return v, f.rooms
}

// cards is the node's cards in the cycle dc through the Ref the last refresh kept
// (dc.Entry when it kept none for this version).
func (f *fleet) cards(ni fwk.NodeInfo, dc *dragpus.Cycle) *dragpus.Entry {
	if m := f.last.Load().of(ni); m != nil && m.version == dc.Version() {
		return dc.EntryAt(ni.Node().Name, m.ref)
	}
	return dc.Entry(ni.Node().Name)
}

// refreshNode brings m's room up to date for the cycle dc.
func (pl *Plugin) refreshNode(m *nodeMemo, dc *dragpus.Cycle, version int64) {
	ni := m.ni
	node, gen := ni.Node(), ni.GetGeneration()
	if m.node != node || m.gen != gen || m.version != version {
		m.valid = false
		m.node, m.gen, m.version = node, gen, version
		m.scalar = pl.scalarGPUs(ni)
		m.clique = node.Labels[v1alpha1.LabelGPUClique]
		m.ref = dragpus.Ref{}
	}
	var e *dragpus.Entry
	if dc != nil && !m.scalar {
		if !dc.Fresh(m.ref) {
			m.ref = dc.Ref(node.Name)
		}
		e = dc.EntryAt(node.Name, m.ref)
	}
	if m.valid && m.e == e {
		return
	}
	m.e, m.valid = e, true
	m.room = pl.roomWith(ni, nil, dc, e)
	m.capacity = pl.capacityWith(ni, e)
}
