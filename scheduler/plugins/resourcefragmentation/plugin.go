// Package resourcefragmentation places GPU pods where they fragment GPU capacity
// least, relative to the demand that is coming: the GPU pods queued for this
// scheduler and a decaying memory of recent arrivals. A node's fragmentation is the
// expected number of its free GPUs that a task of that demand could not use, for want
// of GPUs or of the CPU and memory left beside them (Weng et al., ATC'23); a pod goes
// where placing it raises that least, so small pods fill nodes that are already
// broken and whole nodes stay whole. Each placement is also charged the GPUs of
// expected demand it leaves without a host (placement.Scarcity), so that a node that
// alone can host a rare large shape is not spent on tasks that fit elsewhere — FGD's
// count cannot tell it from a node that cannot. While queued pods need
// whole nodes (or any size that only a few nodes still host), a placement that would
// take the last such nodes from them scores lowest, and so does a placement that
// breaks a wholly free multi-node NVLink domain (nvidia.com/gpu.clique) while tasks
// that take whole nodes are in the demand; with keepHostsForQueued the first of
// these is refused by a Filter instead (filter.go). Pods that ask for no GPU go where
// their CPU and memory leave fewest free GPUs without the CPU and memory the demand
// asks for beside each GPU (placement.Unbacked); they are skipped at PreScore when no
// GPU pod is expected or none of their nodes has a GPU free.
//
// The plugin also serves kubenexus_largest_placeable_gang: per GPU model,
// HardwareTier, member size (1, 2, 4, 8 GPUs) and topology level, the largest gang
// that fits now in one domain (computed on scrape by placement.LargestGangs, the code
// the manager uses for HardwareTier status).
package resourcefragmentation

import (
	"context"
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	resourcehelper "k8s.io/component-helpers/resource"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/hardware"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/apis/config"
	"github.com/kube-nexus/kubenexus/scheduler/crdcache"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/devices"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/gangview"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/nodefree"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/names"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/resourcereservation"

	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/cyclestate"
)

// Name is the plugin's registered name.
const Name = names.ResourceFragmentation

const stateKey fwk.StateKey = "PreScore" + Name

// breakPenalty ranks a placement that takes the last hosts of a queued size below
// every other: fragmentation deltas are at most a node's GPUs × 1000.
const breakPenalty = 1 << 40

// Plugin is the ResourceFragmentation plugin.
type Plugin struct {
	// nodes lists every node of the cycle's snapshot (nil in unit tests: the
	// feasible nodes stand in).
	nodes  fwk.NodeInfoLister
	gpus   []corev1.ResourceName
	demand *tracker
	// reservations gives what ResourceReservations hold (nil in unit tests).
	reservations *resourcereservation.Shared
	// dra reads GPUs published as DRA devices and pods' claims for them (nil in
	// unit tests).
	dra *draGPUs
}

var (
	_ fwk.PreScorePlugin    = &Plugin{}
	_ fwk.ScorePlugin       = &Plugin{}
	_ fwk.ScoreExtensions   = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
	_ fwk.SignPlugin        = &Plugin{}
)

// New builds the plugin; it follows the profile's pods through the scheduler's
// shared informer to know the queued GPU demand.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, crds *crdcache.Provider, reservations *resourcereservation.Shared, views *gangview.Registry, index *devices.Index) (fwk.Plugin, error) {
	args, err := config.DecodeResourceFragmentationArgs(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	t := newTracker(h.ProfileName(), args.GPUResources, *args.ArrivalHalfLifeSeconds)
	t.dra = newDRAGPUs(index, h, args.GPUDeviceClasses, args.GPUResources)
	if views != nil {
		// WorkloadAware tells GPU nodes and GPU pods by them too.
		// NetworkFabric plans gangs whose members ask for them by their cards.
		views.SetDRAGPUs(gangview.DRAGPUs{Nodes: t.dra.nodesWithGPUs, Pod: t.dra.asksForGPUs, Asks: t.dra.asks, Cards: t.dra.freeCards})
	}
	informers := h.SharedInformerFactory().Core().V1()
	if _, err := informers.Pods().Informer().AddEventHandler(t.handler()); err != nil {
		return nil, fmt.Errorf("%s: watching pods: %w", Name, err)
	}
	cache, err := crds.Get(ctx, h.KubeConfig())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	levels := config.Levels(args.Levels)
	// The gauges are the scheduler's, not a profile's: the plugin built last serves
	// them.
	serve(&gangCollector{nodes: informers.Nodes().Lister(), pods: informers.Pods().Lister(),
		tiers: cache.HardwareTiers, levels: levels, gpus: args.GPUResources, dra: t.dra})
	pl := &Plugin{nodes: h.SnapshotSharedLister().NodeInfos(), gpus: args.GPUResources, demand: t, reservations: reservations, dra: t.dra}
	if *args.KeepHostsForQueued {
		return &keeping{pl}, nil
	}
	return pl, nil
}

// Name returns the plugin's name.
func (pl *Plugin) Name() string { return Name }

// SignPod refuses the pods the plugin scores against the whole fleet: a GPU pod's
// score counts the hosts of each queued size, the free NVLink domains and the
// scarcity of each shape over every node, all of which the previous pod's placement
// changes, so opportunistic batching must not carry one GPU pod's ranking to the
// next. A pod that asks for no GPU is scored only while GPU pods are queued (it is
// refused then); otherwise it is skipped and adds nothing. The queue signs a pod
// when it is added or updated: a CPU pod signed before GPU demand arrived can still
// take a hint, from a ranking made moments before by an identical pod against the
// same demand, stale only in what that pod's own placement moved.
func (pl *Plugin) SignPod(_ context.Context, pod *corev1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	if pl.demand.shape(pod).isGPU() {
		return nil, fwk.NewStatus(fwk.Unschedulable, "pods that ask for GPUs are scored against the fleet's free GPUs and are not signable")
	}
	if !pl.demand.empty() {
		return nil, fwk.NewStatus(fwk.Unschedulable, "pods without GPUs are scored against queued GPU pods while there are any, and are not signable then")
	}
	return nil, nil
}

type stateData struct {
	req placement.Room
	// cpuOnly: the pod asks for no GPU (it is scored by the GPUs its CPU and memory
	// leave unbacked).
	cpuOnly bool
	// claims are the pod's ResourceClaim requests for GPU devices, tried on each
	// node's cards (nil: its GPUs, if any, are extended resources); dra is the
	// cycle's view of the GPUs published through DRA (nil: none are).
	claims []hardware.GPURequest
	dra    *draCycle
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
	var dc *draCycle
	if f := cyclestate.Read[*draFilterState](cs, draStateKey); f != nil {
		dc = f.dc // read at PreFilter, this cycle
	} else if pl.dra != nil {
		var err error
		if dc, err = pl.dra.cycle(); err != nil {
			return fwk.AsStatus(fmt.Errorf("%s: reading allocated devices: %w", Name, err))
		}
	}
	s := &stateData{dra: dc, held: held, cpuOnly: !sh.isGPU()}
	if s.cpuOnly {
		// A pod that asks for no GPU still takes CPU and memory that GPU tasks need
		// beside their GPUs: it is scored while GPU pods are expected and one of its
		// nodes has GPUs free, and skipped otherwise.
		if !pl.anyFreeGPUs(nodes, held, dc) {
			return fwk.NewStatus(fwk.Skip)
		}
		sh = cpuShapeOf(pod)
	} else if pl.dra != nil && shapeOf(pod, pl.gpus).gpus == 0 {
		s.claims, _ = pl.dra.requests(pod, false)
	}
	s.req = placement.Room{GPUs: sh.gpus, MilliCPU: sh.milliCPU, Memory: sh.memory}
	demand, queued := pl.demand.snapshot(pod.UID)
	hosts := map[int64]int{}
	cliqueNodes, cliqueBusy := map[string]int{}, map[string]bool{}
	for _, ni := range nodes {
		free := pl.room(ni, held, dc).GPUs
		for k := range queued {
			if free >= k {
				hosts[k]++
			}
		}
		if c := ni.Node().Labels[v1alpha1.LabelGPUClique]; c != "" {
			cliqueNodes[c]++
			if free < pl.capacity(ni, dc) {
				cliqueBusy[c] = true
			}
		}
	}
	s.demand, s.queued, s.hosts, s.freeCliques = demand, queued, hosts, map[string]bool{}
	s.scarcity = placement.NewScarcity(pl.rooms(nodes, held, dc), demand)
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
func (pl *Plugin) anyFreeGPUs(nodes []fwk.NodeInfo, held func(fwk.NodeInfo) map[corev1.ResourceName]int64, dc *draCycle) bool {
	for _, ni := range nodes {
		if pl.capacity(ni, dc) > 0 && pl.room(ni, held, dc).FreeGPUs() > 0 {
			return true
		}
	}
	return false
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
func (pl *Plugin) rooms(feasible []fwk.NodeInfo, held func(fwk.NodeInfo) map[corev1.ResourceName]int64, dc *draCycle) []placement.Room {
	nodes := feasible
	if pl.nodes != nil {
		if all, err := pl.nodes.List(); err == nil {
			nodes = all
		}
	}
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
	free := pl.room(ni, s.held, s.dra)
	req := s.req
	if s.claims != nil {
		g := s.dra.cards(ni.Node().Name)
		if g == nil {
			return misfit, nil
		}
		var ok bool
		if req, ok = s.dra.placeOn(ni.Node().Name, g, s.claims, free, s.req.MilliCPU, s.req.Memory); !ok {
			return misfit, nil
		}
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
	if placement.Breaks(free.GPUs, req.GPUs, s.queued, s.hosts) || s.breaksClique(ni, req.GPUs, pl.capacity(ni, s.dra)) {
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
func (s *stateData) breaksClique(ni fwk.NodeInfo, req, capacity int64) bool {
	c := ni.Node().Labels[v1alpha1.LabelGPUClique]
	return c != "" && s.freeCliques[c] && req < capacity && s.wholeNode >= capacity
}

// capacity is the node's allocatable GPUs (DRA devices that back a GPU resource
// included), its cards when its GPUs are DRA devices (cardsOf).
func (pl *Plugin) capacity(ni fwk.NodeInfo, dc *draCycle) int64 {
	if g := pl.cardsOf(ni, dc); g != nil {
		return int64(len(g.Cards))
	}
	var n int64
	for _, name := range pl.gpus {
		n += nodefree.Allocatable(ni, name)
	}
	return n
}

// room is the node's free whole GPUs (over every resource that counts as one), CPU
// and memory, less what held (nil: nothing) says reservations of other owners hold,
// and the model of its GPUs (GPU Feature Discovery's nvidia.com/gpu.product label).
func (pl *Plugin) room(ni fwk.NodeInfo, held func(fwk.NodeInfo) map[corev1.ResourceName]int64, dc *draCycle) placement.Room {
	var h map[corev1.ResourceName]int64
	if held != nil {
		h = held(ni)
	}
	r := placement.Room{MilliCPU: nodefree.Of(ni, corev1.ResourceCPU) - h[corev1.ResourceCPU], Memory: (nodefree.Of(ni, corev1.ResourceMemory) - h[corev1.ResourceMemory]) / 1000,
		Model: ni.Node().Labels[v1alpha1.LabelGPUProduct]}
	if pl.cardsOf(ni, dc) != nil {
		r.GPUs, r.Partial, _ = dc.room(ni.Node().Name)
		for _, name := range pl.gpus {
			r.GPUs -= h[name] / 1000
		}
		r.GPUs = max(r.GPUs, 0)
		return r
	}
	for _, name := range pl.gpus {
		if f := nodefree.Of(ni, name) - h[name]; f > 0 {
			r.GPUs += f / 1000
		}
	}
	return r
}

// cardsOf returns the node's GPUs when they are DRA devices of a GPU class and its
// allocatable has none of the GPU resources (device-plugin GPUs are read from the
// snapshot's requests); nil otherwise.
func (pl *Plugin) cardsOf(ni fwk.NodeInfo, dc *draCycle) *hardware.GPUs {
	if dc == nil {
		return nil
	}
	scalar := ni.GetAllocatable().GetScalarResources()
	for _, name := range pl.gpus {
		if scalar[name] > 0 {
			return nil
		}
	}
	return dc.cards(ni.Node().Name)
}

// shapeOf is what the pod asks for: GPUs (over every resource that counts as one),
// CPU and memory; the zero shape for a pod that names no GPU resource, which is told
// by a look at its containers' requests and limits, without summing them.
func shapeOf(pod *corev1.Pod, gpus []corev1.ResourceName) shape {
	if !workload.NamesAny(pod, gpus) {
		return shape{}
	}
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	sh := shape{milliCPU: reqs.Cpu().MilliValue(), memory: reqs.Memory().Value(), models: modelsKey(workload.RequiredGPUModels(pod))}
	for _, r := range gpus {
		if q, ok := reqs[r]; ok {
			sh.gpus += q.Value()
		}
	}
	return sh
}

// cpuShapeOf is the CPU and memory a pod that asks for no GPU requests.
func cpuShapeOf(pod *corev1.Pod) shape {
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	return shape{milliCPU: reqs.Cpu().MilliValue(), memory: reqs.Memory().Value()}
}
