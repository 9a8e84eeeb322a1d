package resourcefragmentation

import (
	"context"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	resourcelisters "k8s.io/client-go/listers/resource/v1"
	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/hardware"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/devices"
)

// GPUs published through DRA. A node whose allocatable has none of the GPU
// resources but whose ResourceSlices publish devices of a GPU DeviceClass has those
// devices as its GPUs, grouped into cards (hardware.GPUs): a card nothing uses is a
// whole free GPU, one partly used (a shared device some allocations consume, a card
// some partitions draw on) a free share. A pod whose ResourceClaims ask for devices
// of a GPU class is placed by trying its requests on each node's cards as the DRA
// allocator would (the first devices with room, in the node's order), so its score
// counts the share it actually leaves. Its shape in the demand is its share of the
// first card it matches: a task that shares a GPU when that is under a whole card.
type draGPUs struct {
	index     *devices.Index
	claims    fwk.ResourceClaimTracker
	templates resourcelisters.ResourceClaimTemplateLister
	// named are the GPU classes by name (args); resources the GPU resources, whose
	// backing classes are GPU classes too.
	named     []string
	resources []corev1.ResourceName

	mu sync.Mutex
	// at is what the index published when gpu, classes and refs were computed.
	at devices.Published
	// classes are the selectors of each GPU class, by name.
	classes map[string][]string
	// gpu marks, per node, its devices that match a GPU class; nodes without any are
	// left out.
	gpu map[string][]bool
	// refs memoises each request's share of its reference card (requestKey).
	refs map[string]int64
	// matches memoises, per request's selectors and node, which of the node's
	// devices match them.
	matches map[string]map[string][]bool
	// cards keeps each node's cards across cycles (draCycle.cards).
	cards map[string]*cardsEntry
	// remote: slices that name no node publish GPU-class devices, which nodes may
	// reach beside their own (the cards model only a node's own).
	remote bool
}

// cardsEntry is a node's cards as a cycle built them, kept for the next cycles while
// the index's version and what the allocated state holds of the node's GPU devices
// (print) stay the same: a cycle rebuilds the cards of the nodes whose allocations
// changed (the node the last pod went to), not of every GPU node.
type cardsEntry struct {
	// ids are the IDs of the node's GPU devices.
	ids   []structured.DeviceID
	print uint64
	g     *hardware.GPUs
	// whole and partial are g's room (cardRoom).
	whole   int64
	partial []int64
}

func newDRAGPUs(index *devices.Index, h fwk.Handle, named []string, resources []corev1.ResourceName) *draGPUs {
	d := &draGPUs{index: index, named: named, resources: resources,
		templates: h.SharedInformerFactory().Resource().V1().ResourceClaimTemplates().Lister()}
	if dra := h.SharedDRAManager(); dra != nil {
		d.claims = dra.ResourceClaims()
	}
	return d
}

// current brings the GPU classes and the nodes' GPU devices up to the index's
// version and returns them (callers must not change them).
func (d *draGPUs) current() (devices.Published, map[string][]string, map[string][]bool) {
	p := d.index.Published()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.gpu != nil && d.at.Version == p.Version {
		return d.at, d.classes, d.gpu
	}
	classes := hardware.GPUClasses(p.Classes, d.named, d.resources)
	gpu := map[string][]bool{}
	if len(classes) > 0 {
		ctx := context.Background()
		for node, devs := range p.ByNode {
			if flags, any := hardware.GPUFlags(ctx, classes, devs); any {
				gpu[node] = flags
			}
		}
	}
	remote := false
	if len(classes) > 0 && len(p.NonLocal) > 0 {
		_, remote = hardware.GPUFlags(context.Background(), classes, p.NonLocal)
	}
	d.at, d.classes, d.gpu, d.refs, d.matches, d.cards, d.remote = p, classes, gpu, map[string]int64{}, map[string]map[string][]bool{}, map[string]*cardsEntry{}, remote
	return p, classes, gpu
}

// nodesWithGPUs returns the test for a node that publishes GPU-class devices, nil
// while none does (gangview.DRAGPUs).
func (d *draGPUs) nodesWithGPUs() func(node string) bool {
	_, _, gpu := d.current()
	if len(gpu) == 0 {
		return nil
	}
	return func(node string) bool {
		_, ok := gpu[node]
		return ok
	}
}

// asksForGPUs reports whether the pod's ResourceClaims ask for GPU-class devices
// (gangview.DRAGPUs).
func (d *draGPUs) asksForGPUs(pod *corev1.Pod) bool {
	reqs, _ := d.requests(pod, true)
	return len(reqs) > 0
}

// asks is what the pod's claims ask of GPU devices, allocated or not: whole GPUs,
// or a share of one (gangview.DRAGPUs).
func (d *draGPUs) asks(pod *corev1.Pod) (gpus, share int64) {
	reqs, _ := d.requests(pod, true)
	if len(reqs) == 0 {
		return 0, 0
	}
	return d.shape(reqs)
}

// freeCards reads the allocated state once and returns each GPU node's whole free
// cards and the free capacity of its cards, in thousandths (gangview.DRAGPUs).
func (d *draGPUs) freeCards() (func(node string) (whole, milli int64, ok bool), error) {
	c, err := d.cycle()
	if err != nil {
		return nil, err
	}
	return func(node string) (whole, milli int64, ok bool) {
		g := c.cards(node)
		if g == nil {
			return 0, 0, false
		}
		for i := range g.Cards {
			milli += g.Cards[i].Free()
		}
		return g.FreeCards(), milli, true
	}, nil
}

// requests returns the requests of the pod's ResourceClaims for GPU devices (nil:
// none), read from each claim, or from its template while the claim is not made
// yet; found is false when a claim is neither in the scheduler's cache nor made
// from a template it has (yet). A claim already allocated is left out unless
// allocated is set: its devices are chosen. A request that asks for all devices of
// a class, and the alternatives of a request after the first (prioritized lists),
// are not modelled.
func (d *draGPUs) requests(pod *corev1.Pod, allocated bool) (out []hardware.GPURequest, found bool) {
	out, found, _ = d.claimRequests(pod, allocated)
	return out, found
}

// claimRequests is requests, and whether they are all the pod's claims ask of GPU
// classes, exactly (exact): false when one asks for all devices of a class, has
// alternatives (a prioritized list), asks for administrative access (which
// allocated devices do not refuse) or was not found.
func (d *draGPUs) claimRequests(pod *corev1.Pod, allocated bool) (out []hardware.GPURequest, found, exact bool) {
	if len(pod.Spec.ResourceClaims) == 0 {
		return nil, true, true
	}
	_, classes, _ := d.current()
	if len(classes) == 0 {
		return nil, true, true
	}
	found, exact = true, true
	for _, pc := range pod.Spec.ResourceClaims {
		spec, ok := d.claimSpec(pod, pc, allocated)
		found = found && ok
		if spec == nil {
			continue
		}
		for _, r := range spec.Requests {
			var req *resourceapi.ExactDeviceRequest
			switch {
			case r.Exactly != nil:
				req = r.Exactly
			case len(r.FirstAvailable) > 0:
				s := r.FirstAvailable[0]
				req = &resourceapi.ExactDeviceRequest{DeviceClassName: s.DeviceClassName, Selectors: s.Selectors,
					AllocationMode: s.AllocationMode, Count: s.Count, Capacity: s.Capacity}
				for _, alt := range r.FirstAvailable {
					if _, gpu := classes[alt.DeviceClassName]; gpu {
						exact = exact && len(r.FirstAvailable) == 1
					}
				}
			}
			if req == nil {
				continue
			}
			sel, ok := classes[req.DeviceClassName]
			if !ok {
				continue
			}
			if req.AllocationMode == resourceapi.DeviceAllocationModeAll || req.AdminAccess != nil && *req.AdminAccess {
				exact = false
				continue
			}
			gr := hardware.GPURequest{Selectors: append([]string(nil), sel...), Count: max(req.Count, 1)}
			for _, s := range req.Selectors {
				if s.CEL != nil {
					gr.Selectors = append(gr.Selectors, s.CEL.Expression)
				}
			}
			if req.Capacity != nil {
				gr.Capacity = req.Capacity.Requests
			}
			out = append(out, gr)
		}
	}
	return out, found, exact && found
}

// claimSpec is the spec of one of the pod's claims: the claim's, or its template's
// while the claim is not made; nil when the claim is allocated (unless allocated is
// set) or neither is found (found false).
func (d *draGPUs) claimSpec(pod *corev1.Pod, pc corev1.PodResourceClaim, allocated bool) (spec *resourceapi.DeviceClaim, found bool) {
	name := ""
	if pc.ResourceClaimName != nil {
		name = *pc.ResourceClaimName
	}
	for _, st := range pod.Status.ResourceClaimStatuses {
		if st.Name == pc.Name && st.ResourceClaimName != nil {
			name = *st.ResourceClaimName
		}
	}
	if name != "" && d.claims != nil {
		if c, err := d.claims.Get(pod.Namespace, name); err == nil {
			if c.Status.Allocation != nil && !allocated {
				return nil, true
			}
			return &c.Spec.Devices, true
		}
	}
	if pc.ResourceClaimTemplateName != nil {
		if t, err := d.templates.ResourceClaimTemplates(pod.Namespace).Get(*pc.ResourceClaimTemplateName); err == nil {
			return &t.Spec.Spec.Devices, true
		}
	}
	return nil, false
}

// shape is the GPUs the requests take: a share of one GPU (thousandths) when they
// ask for one device that is under a whole card on the first node whose devices
// match (nodes by name), else whole GPUs, one per device.
func (d *draGPUs) shape(reqs []hardware.GPURequest) (gpus, share int64) {
	for _, r := range reqs {
		gpus += r.Count
	}
	if len(reqs) != 1 || reqs[0].Count != 1 {
		return gpus, 0
	}
	if s := d.reference(reqs[0]); s > 0 && s < 1000 {
		return 0, s
	}
	return gpus, 0
}

// reference is the request's share of the first card it matches (nodes by name), 0
// when it matches none.
func (d *draGPUs) reference(r hardware.GPURequest) int64 {
	p, _, gpu := d.current()
	key := requestKey(r)
	d.mu.Lock()
	s, ok := d.refs[key]
	d.mu.Unlock()
	if ok {
		return s
	}
	nodes := make([]string, 0, len(gpu))
	for n := range gpu {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	for _, n := range nodes {
		g := hardware.NewGPUs(p.ByNode[n], gpu[n], p.Counters, nil)
		if v, ok := g.Reference(r, d.matcher(p.Version, n, g, r.Selectors)); ok {
			s = v
			break
		}
	}
	d.mu.Lock()
	if d.at.Version == p.Version {
		d.refs[key] = s
	}
	d.mu.Unlock()
	return s
}

// matcher returns which of node's devices (g's) match selectors, evaluated once
// per version of the index.
func (d *draGPUs) matcher(version int64, node string, g *hardware.GPUs, selectors []string) func(i int) bool {
	key := strings.Join(selectors, "\x00")
	d.mu.Lock()
	memo, ok := d.matches[key][node]
	d.mu.Unlock()
	if !ok {
		m := g.Matcher(context.Background(), selectors)
		memo = make([]bool, g.Len())
		for i := range memo {
			memo[i] = m(i)
		}
		d.mu.Lock()
		if d.at.Version == version {
			if d.matches[key] == nil {
				d.matches[key] = map[string][]bool{}
			}
			d.matches[key][node] = memo
		}
		d.mu.Unlock()
	}
	return func(i int) bool { return memo[i] }
}

// requestKey identifies a request's selectors and capacity.
func requestKey(r hardware.GPURequest) string {
	var b strings.Builder
	for _, s := range r.Selectors {
		b.WriteString(s)
		b.WriteByte(0)
	}
	names := make([]string, 0, len(r.Capacity))
	for n := range r.Capacity {
		names = append(names, string(n))
	}
	slices.Sort(names)
	for _, n := range names {
		q := r.Capacity[resourceapi.QualifiedName(n)]
		b.WriteString(n + "=" + q.String() + ";")
	}
	return b.String()
}

// cycle is the DRA GPUs as one scheduling cycle sees them; nil when no node
// publishes any.
func (d *draGPUs) cycle() (*draCycle, error) {
	p, _, gpu := d.current()
	if len(gpu) == 0 {
		return nil, nil
	}
	d.mu.Lock()
	remote := d.remote || d.at.Version != p.Version
	d.mu.Unlock()
	c := &draCycle{published: p, gpu: gpu, d: d, remote: remote}
	if d.claims != nil {
		st, err := d.claims.GatherAllocatedState()
		if err != nil {
			return nil, err
		}
		c.alloc = allocation{st}
	}
	return c, nil
}

// draCycle reads each node's cards once per cycle (Score runs nodes in parallel).
type draCycle struct {
	d         *draGPUs
	published devices.Published
	gpu       map[string][]bool
	alloc     hardware.Allocation
	byNode    sync.Map // node name → *cardsEntry
	// remote: GPU-class devices are published for nodes beside their own
	// (draGPUs.remote).
	remote bool
}

// cards returns the node's GPUs (nil: it publishes none).
func (c *draCycle) cards(node string) *hardware.GPUs {
	if e := c.entry(node); e != nil {
		return e.g
	}
	return nil
}

// room is the node's whole free cards and the free shares of its partly used ones
// (cardRoom; callers must not change partial), false when it publishes no GPUs.
func (c *draCycle) room(node string) (whole int64, partial []int64, ok bool) {
	if e := c.entry(node); e != nil {
		return e.whole, e.partial, true
	}
	return 0, nil, false
}

func (c *draCycle) entry(node string) *cardsEntry {
	if c == nil {
		return nil
	}
	flags, ok := c.gpu[node]
	if !ok {
		return nil
	}
	if e, ok := c.byNode.Load(node); ok {
		return e.(*cardsEntry)
	}
	e := c.d.cardsOf(c.published, node, flags, c.alloc)
	c.byNode.Store(node, e)
	return e
}

// cardsOf returns the node's cards in published with allocation alloc, from the
// cache when the node's GPU devices are allocated as when they were built.
func (d *draGPUs) cardsOf(p devices.Published, node string, flags []bool, alloc hardware.Allocation) *cardsEntry {
	devs := p.ByNode[node]
	d.mu.Lock()
	e, ok := d.cards[node]
	current := d.at.Version == p.Version
	d.mu.Unlock()
	if !ok {
		e = &cardsEntry{}
		for i := range devs {
			if i < len(flags) && flags[i] {
				e.ids = append(e.ids, devices.IDOf(&devs[i]))
			}
		}
	}
	var print uint64
	if a, ok := alloc.(allocation); ok {
		print = a.print(e.ids)
	}
	if e.g != nil && e.print == print {
		return e
	}
	e = &cardsEntry{ids: e.ids, print: print, g: hardware.NewGPUs(devs, flags, p.Counters, alloc)}
	e.whole, e.partial = cardRoom(e.g)
	if current {
		d.mu.Lock()
		if d.at.Version == p.Version {
			d.cards[node] = e
		}
		d.mu.Unlock()
	}
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

// placeOn is what placing the requests on node, with cards g, takes from room free
// (placement.Room.Less): the whole cards it breaks, the shares it leaves, CPU and
// memory; false when the node's devices cannot serve them.
func (c *draCycle) placeOn(node string, g *hardware.GPUs, reqs []hardware.GPURequest, free placement.Room, milliCPU, memory int64) (placement.Room, bool) {
	after := g.Clone()
	for _, r := range reqs {
		if !after.Take(r, c.d.matcher(c.published.Version, node, g, r.Selectors)) {
			return placement.Room{}, false
		}
	}
	whole, partial := cardRoom(after)
	return placement.Room{GPUs: free.GPUs - whole, Partial: partial, MilliCPU: milliCPU, Memory: memory}, true
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
