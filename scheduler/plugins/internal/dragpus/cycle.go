package dragpus

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/kube-nexus/kubenexus/api/hardware"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/devices"
)

// slot holds a GPU node's flags (which of its devices are GPUs) and latest Entry.
type slot struct {
	flags []bool
	e     atomic.Pointer[Entry]
}

// Entry is a node's cards as a cycle built them, kept for the next cycles while
// the index's version and what the allocated state holds of the node's GPU devices
// (print) stay the same: a cycle rebuilds the cards of the nodes whose allocations
// changed (the node the last pod went to), not of every GPU node. What is computed
// from the cards alone for a pod's requests (whether they fit, the room they
// leave) is kept with them, by the requests' key: the pods of a workload ask alike.
type Entry struct {
	// ids are the IDs of the node's GPU devices.
	ids   []structured.DeviceID
	print uint64
	// G are the node's cards.
	G *hardware.GPUs
	// Whole and Partial are G's room: its whole free cards and the free shares of
	// its partly used ones (never nil; callers must not change it).
	Whole   int64
	Partial []int64
	// checked is the last cycle that compared print with its allocated state.
	checked atomic.Pointer[Cycle]

	mu sync.Mutex
	// holds and takes memoise CanHold and PlaceOn, by the requests' Key.
	holds map[*Key]bool
	takes map[*Key]taken
}

// taken is the room the node's cards keep after a pod's requests are placed on
// them (ok false: they cannot be).
type taken struct {
	whole   int64
	partial []int64
	ok      bool
}

// cycle is the DRA GPUs as one scheduling cycle sees them; nil when no node
// publishes any.
func (d *View) Cycle() (*Cycle, error) {
	p, _, gpu := d.current()
	if len(gpu) == 0 {
		return nil, nil
	}
	d.mu.Lock()
	remote := d.remote || d.at.Version != p.Version
	slots := d.slots
	if d.at.Version != p.Version {
		slots = nil // built for another version: entries are rebuilt each time
	}
	d.mu.Unlock()
	c := &Cycle{published: p, gpu: gpu, slots: slots, d: d, Remote: remote}
	if d.claims != nil {
		st, err := d.claims.GatherAllocatedState()
		if err != nil {
			return nil, err
		}
		c.alloc = allocation{st}
	}
	return c, nil
}

// Cycle reads each node's cards at most once per cycle (Score runs nodes in
// parallel; each node is read by one goroutine at a time).
type Cycle struct {
	d         *View
	published devices.Published
	gpu       map[string][]bool
	slots     map[string]*slot
	alloc     hardware.Allocation
	// Remote: GPU-class devices are published for nodes beside their own (the
	// cards model only a node's own).
	Remote bool
}

// cards returns the node's GPUs (nil: it publishes none).
func (c *Cycle) Cards(node string) *hardware.GPUs {
	if e := c.Entry(node); e != nil {
		return e.G
	}
	return nil
}

// Entry is the node's cards with the cycle's allocated state (nil: it publishes no
// GPUs): the kept entry when this cycle has checked it already or its print is
// unchanged, else a new one.
func (c *Cycle) Entry(node string) *Entry {
	if c == nil {
		return nil
	}
	if c.slots != nil {
		slot := c.slots[node]
		if slot == nil {
			return nil // the slots hold every GPU node of the version
		}
		return c.entryIn(node, slot, slot.flags)
	}
	flags := c.gpu[node]
	if flags == nil {
		return nil
	}
	return c.entryIn(node, nil, flags)
}

// Ref is where a node's cards are kept for one version of the published devices,
// so that a caller that keeps it reads them (EntryAt) without a lookup by name.
type Ref struct {
	s       *slot
	version int64
	ok      bool
}

// Ref returns the node's Ref for this cycle's version.
func (c *Cycle) Ref(node string) Ref {
	if c == nil || c.slots == nil {
		return Ref{}
	}
	return Ref{s: c.slots[node], version: c.published.Version, ok: true}
}

// Fresh reports whether r is the node's Ref for this cycle's version (Ref
// otherwise).
func (c *Cycle) Fresh(r Ref) bool {
	return c != nil && c.slots != nil && r.ok && r.version == c.published.Version
}

// EntryAt is Entry through the node's Ref (Entry when r is not Fresh).
func (c *Cycle) EntryAt(node string, r Ref) *Entry {
	if !c.Fresh(r) {
		return c.Entry(node)
	}
	if r.s == nil {
		return nil
	}
	return c.entryIn(node, r.s, r.s.flags)
}

// entryIn is Entry for a node whose devices flags marks as GPUs, kept in slot (nil:
// kept nowhere, the slots are for another version).
func (c *Cycle) entryIn(node string, slot *slot, flags []bool) *Entry {
	var e *Entry
	if slot != nil {
		if e = slot.e.Load(); e != nil && e.checked.Load() == c {
			return e
		}
	}
	devs := c.published.ByNode[node]
	var ids []structured.DeviceID
	if e != nil {
		ids = e.ids
	} else {
		for i := range devs {
			if i < len(flags) && flags[i] {
				ids = append(ids, devices.IDOf(&devs[i]))
			}
		}
	}
	var print uint64
	if a, ok := c.alloc.(allocation); ok {
		print = a.print(ids)
	}
	if e == nil || e.print != print {
		e = &Entry{ids: ids, print: print, G: hardware.NewGPUs(devs, flags, c.published.Counters, c.alloc)}
		e.Whole, e.Partial = cardRoom(e.G)
		if slot != nil {
			slot.e.Store(e)
		}
	}
	e.checked.Store(c)
	return e
}

// cardRoom is the whole free cards and the free shares of the partly used ones
// (never nil, so that Room.Less replaces the node's shares with them).
func cardRoom(g *hardware.GPUs) (whole int64, partial []int64) {
	partial = []int64{}
	for i := range g.Cards {
		if f := g.Cards[i].Free(); f > 0 && f < 1000 {
			partial = append(partial, f)
		}
	}
	return g.FreeCards(), partial
}

// PlaceOn is what the node's cards e keep after the requests (key: View.Key) are
// placed on them: their whole free cards and the free shares of the partly used
// ones (callers must not change partial); false when the node's devices cannot
// serve them.
func (c *Cycle) PlaceOn(node string, e *Entry, reqs []hardware.GPURequest, key *Key) (whole int64, partial []int64, ok bool) {
	e.mu.Lock()
	t, known := e.takes[key]
	e.mu.Unlock()
	if !known {
		after := e.G.Clone()
		t.ok = true
		for _, r := range reqs {
			if !after.Take(r, c.d.matcher(c.published.Version, node, e.G, r.Selectors)) {
				t.ok = false
				break
			}
		}
		if t.ok {
			t.whole, t.partial = cardRoom(after)
		}
		e.mu.Lock()
		if e.takes == nil {
			e.takes = map[*Key]taken{}
		}
		e.takes[key] = t
		e.mu.Unlock()
	}
	return t.whole, t.partial, t.ok
}

// CanHold reports whether the node's cards e can hold the requests (key:
// View.Key), as hardware.GPUs.CanHold says of each.
func (c *Cycle) CanHold(node string, e *Entry, reqs []hardware.GPURequest, key *Key) bool {
	e.mu.Lock()
	ok, known := e.holds[key]
	e.mu.Unlock()
	if known {
		return ok
	}
	ok = true
	for _, r := range reqs {
		if !e.G.CanHold(r, c.d.matcher(c.published.Version, node, e.G, r.Selectors)) {
			ok = false
			break
		}
	}
	e.mu.Lock()
	if e.holds == nil {
		e.holds = map[*Key]bool{}
	}
	e.holds[key] = ok
	e.mu.Unlock()
	return ok
}

// Key identifies a list of requests: one Key per distinct list (View.Key), so that
// the memos each node's cards keep are looked up by a pointer.
type Key struct{ s string }

// maxKeys bounds the Keys a View keeps; past it they are made anew (a memo made
// with an old one is not found again, and goes with its node's cards).
const maxKeys = 4096

// Key returns the Key of the requests.
func (d *View) Key(reqs []hardware.GPURequest) *Key {
	s := requestsKey(reqs)
	d.mu.Lock()
	defer d.mu.Unlock()
	if k := d.keys[s]; k != nil {
		return k
	}
	if d.keys == nil || len(d.keys) >= maxKeys {
		d.keys = map[string]*Key{}
	}
	k := &Key{s: s}
	d.keys[s] = k
	return k
}

// requestsKey identifies a list of requests (requestKey of each, in order).
func requestsKey(reqs []hardware.GPURequest) string {
	var b strings.Builder
	for _, r := range reqs {
		b.WriteString(requestKey(r))
		fmt.Fprintf(&b, "#%d\x01", r.Count)
	}
	return b.String()
}

// allocation reads the scheduler's allocated state (assumed and in-flight
// allocations included).
type allocation struct{ s *structured.AllocatedState }

// print sums up what the state holds of the devices ids: which are allocated and
// how much of each capacity of each is consumed (FNV-1a over the devices in order,
// a capacity's name and amount mixed in independently of map order).
func (a allocation) print(ids []structured.DeviceID) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	for _, id := range ids {
		var v uint64
		if a.s.AllocatedDevices.Has(id) {
			v = 1
		}
		for n, q := range a.s.AggregatedCapacity[id] {
			if q != nil {
				v += fnv(string(n)) * uint64(q.MilliValue()+1)
			}
		}
		h = (h ^ v) * prime
	}
	return h
}

// fnv is FNV-1a of s.
func fnv(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * 1099511628211
	}
	return h
}

func (a allocation) Allocated(d *hardware.Device) bool {
	return a.s.AllocatedDevices.Has(devices.IDOf(d))
}

func (a allocation) Consumed(d *hardware.Device) map[string]int64 {
	c := a.s.AggregatedCapacity[devices.IDOf(d)]
	if len(c) == 0 {
		return nil
	}
	out := make(map[string]int64, len(c))
	for n, q := range c {
		if q != nil {
			out[hardware.Qualify(d.Driver, n)] += q.MilliValue()
		}
	}
	return out
}

// HasGPUs reports whether the node publishes GPU-class devices.
func (c *Cycle) HasGPUs(node string) bool {
	if c == nil {
		return false
	}
	_, ok := c.gpu[node]
	return ok
}

// Version is the version of the published devices the cycle reads (-1: nil cycle).
func (c *Cycle) Version() int64 {
	if c == nil {
		return -1
	}
	return c.published.Version
}
