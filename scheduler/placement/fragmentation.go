package placement

import (
	"slices"
	"sort"

	"github.com/kube-nexus/kubenexus/api/topology"
)

// Demand is the GPU work expected to arrive, as task shapes: GPUs, the CPU and memory
// asked for beside them, and how much weight the shape has (queued pods count one
// each, recent arrivals a decaying share).
type Demand []Need

// Need is one task shape: whole GPUs or a share of one, CPU (milli) and memory
// (bytes) per task, its weight, and the GPU models it may run on.
type Need struct {
	GPUs int64
	// Share is the part of one GPU a task that shares a GPU asks for, in thousandths
	// (GPUs is then 0); 0 for a task of whole GPUs.
	Share            int64
	MilliCPU, Memory int64
	Weight           float64
	// Models are the GPU models (nvidia.com/gpu.product) the task may use; nil: any.
	// A node is measured only against the demand that may use it: a task that
	// requires another model neither fits nor strands its GPUs.
	Models []string
}

// Room is what a node has free: whole GPUs, the free shares of the GPUs that are
// partly used, milli-CPU and memory bytes, and the model of its GPUs ("" when
// unknown).
type Room struct {
	GPUs int64
	// Partial are the free shares of the node's partly used GPUs, in thousandths
	// (0 < share < 1000): GPUs shared through DRA.
	Partial          []int64
	MilliCPU, Memory int64
	Model            string
}

// FreeGPUs is the room's free GPU capacity in GPUs: its whole GPUs and the free
// shares of its partly used ones.
func (r Room) FreeGPUs() float64 {
	f := float64(r.GPUs)
	for _, p := range r.Partial {
		f += float64(p) / 1000
	}
	return f
}

// Fragmentation is the expected GPU capacity of a node, in GPUs, that a task drawn
// from demand could not use (the measure of Weng et al., "Beware of Fragmentation",
// ATC'23): all of it when the task does not fit (more GPUs, or a larger share, than
// the node has free, or more CPU or memory than is left beside them); else the free
// shares of the partly used GPUs that cannot hold the task (all of them for a task
// of whole GPUs, those smaller than its share for a task that shares a GPU). Only
// the demand that may use the node's GPU model is drawn from. Zero when that demand
// is empty.
func Fragmentation(free Room, d Demand) float64 {
	capacity := free.FreeGPUs()
	if capacity <= 0 {
		return 0
	}
	var total, stranded float64
	for _, n := range d {
		if n.Weight <= 0 || !n.admits(free.Model) {
			continue
		}
		total += n.Weight
		if !n.fits(free) {
			stranded += n.Weight * capacity
			continue
		}
		stranded += n.Weight * n.unusable(free)
	}
	if total == 0 {
		return 0
	}
	return stranded / total
}

// unusable is the free GPU capacity, in GPUs, of the room's partly used GPUs that a
// task of shape n cannot use.
func (n Need) unusable(free Room) float64 {
	var out float64
	for _, p := range free.Partial {
		if n.Share == 0 || p < n.Share {
			out += float64(p) / 1000
		}
	}
	return out
}

// Units is the GPUs a task of shape n takes: its whole GPUs, or its share of one.
func (n Need) Units() float64 {
	if n.Share > 0 {
		return float64(n.Share) / 1000
	}
	return float64(n.GPUs)
}

// usable is the free GPU capacity, in GPUs, that tasks of shape n can use in room r:
// its whole GPUs, and for a task that shares a GPU also the free shares that hold it.
func (n Need) usable(r Room) float64 {
	u := float64(r.GPUs)
	if n.Share > 0 {
		for _, p := range r.Partial {
			if p >= n.Share {
				u += float64(p) / 1000
			}
		}
	}
	return u
}

// FragmentationDelta is how much placing a task that takes req from a node with free
// room raises the node's fragmentation; placements that fragment least are best.
func FragmentationDelta(free, req Room, d Demand) float64 {
	return Fragmentation(free.Less(req), d) - Fragmentation(free, d)
}

// Less is the room left once req is taken from it: req's whole GPUs, CPU and memory;
// req's Partial, when set, are the node's partly used GPUs after the placement (a
// placement that shares a GPU says which shares it leaves).
func (r Room) Less(req Room) Room {
	out := Room{GPUs: r.GPUs - req.GPUs, MilliCPU: r.MilliCPU - req.MilliCPU, Memory: r.Memory - req.Memory, Model: r.Model, Partial: r.Partial}
	if req.Partial != nil {
		out.Partial = req.Partial
	}
	return out
}

// fits reports whether a task of shape n fits in free room.
func (n Need) fits(free Room) bool {
	if n.MilliCPU > free.MilliCPU || n.Memory > free.Memory || !n.admits(free.Model) {
		return false
	}
	if n.Share > 0 {
		if free.GPUs > 0 {
			return true
		}
		for _, p := range free.Partial {
			if p >= n.Share {
				return true
			}
		}
		return false
	}
	return n.GPUs <= free.GPUs
}

// admits reports whether the task may use GPUs of model.
func (n Need) admits(model string) bool {
	return n.Models == nil || slices.Contains(n.Models, model)
}

// Scarcity prices the hosts of each task shape by how few there are for the demand
// of that shape still to come. FGD's measure is blind to it: an 8-GPU task takes a
// whole node either way, so a large-memory node that alone hosts the largest tasks
// and a smaller one that does not look alike, and so do a pristine node that could
// host a rare shape and one that could not.
type Scarcity struct {
	demand Demand
	// hosts[i] counts the nodes whose free room hosts demand[i].
	hosts []int
	// expected[i] is how many tasks of demand[i] are expected before the free GPUs run
	// out, if tasks keep arriving in the demand's mix.
	expected []float64
	// pressure is, per GPU model, the share of its free GPUs that the expected tasks
	// bound to some models only (Need.Models) will ask for, at most 1.
	pressure map[string]float64
	// slack is, per GPU model, its free GPUs less those the expected bound tasks will
	// ask for (negative: more than it has).
	slack map[string]float64
}

// NewScarcity counts the hosts of every shape of the demand among rooms (every node's
// free room; a host must have a model the shape may use) and how many tasks of each
// shape the free GPUs it may use would take: O(nodes × shapes).
func NewScarcity(rooms []Room, d Demand) Scarcity {
	s := Scarcity{demand: d, hosts: make([]int, len(d)), expected: make([]float64, len(d))}
	usable := make([]float64, len(d)) // free GPUs of the models each shape may use
	for _, r := range rooms {
		if r.GPUs <= 0 && len(r.Partial) == 0 {
			continue
		}
		for i, n := range d {
			if n.Weight <= 0 || !n.admits(r.Model) {
				continue
			}
			usable[i] += n.usable(r)
			if n.fits(r) {
				s.hosts[i]++
			}
		}
	}
	var weightedGPUs float64
	for _, n := range d {
		if n.Weight > 0 {
			weightedGPUs += n.Weight * n.Units()
		}
	}
	if weightedGPUs == 0 {
		return s
	}
	for i, n := range d {
		if n.Weight > 0 {
			s.expected[i] = n.Weight * usable[i] / weightedGPUs
		}
	}
	s.pressure, s.slack = modelPressure(rooms, d, weightedGPUs)
	return s
}

// modelPressure is, per GPU model, the share of the model's free GPUs that tasks
// bound to a set of models are expected to take before the cluster's free GPUs run
// out (their share of the demand's GPUs times the free GPUs, spread over their
// models by free GPUs), at most 1, and the model's slack: its free GPUs less those.
// A model that bound tasks will exhaust is one that tasks free to go anywhere should
// leave to them.
func modelPressure(rooms []Room, d Demand, weightedGPUs float64) (pressure, slack map[string]float64) {
	free := map[string]float64{}
	var total float64
	for _, r := range rooms {
		if g := r.FreeGPUs(); g > 0 {
			free[r.Model] += g
			total += g
		}
	}
	reserved := map[string]float64{}
	for _, n := range d {
		if n.Weight <= 0 || n.Models == nil {
			continue
		}
		var usable float64
		for _, m := range n.Models {
			usable += free[m]
		}
		if usable == 0 {
			continue
		}
		expectedGPUs := n.Weight * n.Units() * total / weightedGPUs
		for _, m := range n.Models {
			reserved[m] += expectedGPUs * free[m] / usable
		}
	}
	pressure, slack = make(map[string]float64, len(reserved)), make(map[string]float64, len(reserved))
	for m, r := range reserved {
		pressure[m], slack[m] = min(1, r/free[m]), free[m]-r
	}
	return pressure, slack
}

// shortfallCost is what one GPU that expected bound tasks will lack costs, in GPUs of
// fragmentation: a bound task that finds its models full fails outright, which is
// worse than a whole eight-GPU node left broken, so taking a model's last GPUs from
// its bound tasks ranks below placements that only fragment.
const shortfallCost = 8

// Claimed is what placing req on a node with free room takes from model-bound demand:
// req's GPUs times the pressure on the node's model, and, for the GPUs that eat into
// what the model's expected bound tasks need (beyond its slack), shortfallCost each.
// Among nodes a task may use, it is lowest on the models bound tasks need least, and
// a task free to go anywhere leaves a model to the tasks bound to it while another
// model has room to spare.
func (s Scarcity) Claimed(free, req Room) float64 {
	g := float64(req.GPUs)
	short := 0.0
	if slack, bound := s.slack[free.Model]; bound {
		short = min(g, max(0, g-slack))
	}
	return g*s.pressure[free.Model] + shortfallCost*short
}

// Lost is the GPUs of expected demand that placing req on a node with free room
// leaves without a host: for each shape the node hosts now and not after, the shape's
// GPUs times the share of its hosts the expected tasks of that shape need (at most
// all of them). Zero for a node that hosts no shape it would lose.
func (s Scarcity) Lost(free, req Room) float64 {
	after := free.Less(req)
	var lost float64
	for i, n := range s.demand {
		if n.Weight <= 0 || !n.fits(free) || n.fits(after) {
			continue
		}
		lost += n.Units() * min(1, s.expected[i]/float64(max(s.hosts[i], 1)))
	}
	return lost
}

// Breaks reports whether placing req GPUs on a node with free GPUs leaves a queued
// task size without enough nodes: for some size k queued, the node hosts k now and
// not after, and no more nodes than queued tasks of size k host it (hosts[k]).
func Breaks(free, req int64, queued map[int64]int, hosts map[int64]int) bool {
	return BrokenSize(free, req, queued, hosts) > 0
}

// BrokenSize is the largest queued size that Breaks finds, 0 for none.
func BrokenSize(free, req int64, queued map[int64]int, hosts map[int64]int) int64 {
	var broken int64
	for k, n := range queued {
		if n > 0 && k > 0 && k <= free && k > free-req && hosts[k] <= n {
			broken = max(broken, k)
		}
	}
	return broken
}

// GPUNode is a node as the largest-gang measure sees it.
type GPUNode struct {
	Name string
	// Free whole GPUs.
	Free int64
	// Domains at each topology level, lowest first ("" where the node has no label:
	// a domain of its own).
	Domains []string
}

// LargestGang is the largest gang of members of k GPUs each that fits in one domain
// of level (len(Domains) or more: anywhere), counting each node's free GPUs, and the
// domain that holds it (ties: the first by name). O(nodes).
func LargestGang(nodes []GPUNode, k int64, level int) (members int64, domain string) {
	if k <= 0 {
		return 0, ""
	}
	per := PerDomain(nodes, k, level)
	keys := make([]string, 0, len(per))
	for d := range per {
		keys = append(keys, d)
	}
	sort.Strings(keys)
	for _, d := range keys {
		if per[d] > members {
			members, domain = per[d], d
		}
	}
	return members, domain
}

// PerDomain is, per domain of the level (a node without the level's label is a
// domain of its own, named after it; level past the nodes' levels: one domain ""),
// how many members of k > 0 GPUs its nodes' free GPUs hold.
func PerDomain(nodes []GPUNode, k int64, level int) map[string]int64 {
	per := map[string]int64{}
	for _, n := range nodes {
		key := ""
		if level < len(n.Domains) {
			key = n.Domains[level]
			if key == "" {
				key = n.Name
			}
		}
		per[key] += n.Free / k
	}
	return per
}

// MemberSizes are the member sizes, in GPUs, the largest-gang measure reports.
var MemberSizes = []int64{1, 2, 4, 8}

// PlaceableGang is the largest gang of members of GPUsPerMember GPUs each that fits
// in one domain of Level (the level's name; "any" for anywhere), and where.
type PlaceableGang struct {
	GPUsPerMember int64
	Level         string
	Members       int64
	Domain        string
}

// LargestGangs measures, for each member size and each level (lowest first, then
// anywhere), the largest gang that fits in one domain of the level. The nodes'
// Domains follow levels (topology.DomainsOf).
func LargestGangs(nodes []GPUNode, levels []topology.Level) []PlaceableGang {
	var out []PlaceableGang
	for _, k := range MemberSizes {
		for l := 0; l <= len(levels); l++ {
			name := "any"
			if l < len(levels) {
				name = levels[l].Name
			}
			members, domain := LargestGang(nodes, k, l)
			if l == len(levels) {
				domain = ""
			}
			out = append(out, PlaceableGang{GPUsPerMember: k, Level: name, Members: members, Domain: domain})
		}
	}
	return out
}

// Backing is the CPU (milli) and memory (bytes) the demand asks for beside each GPU,
// averaged over its GPUs (zero for an empty demand).
func (d Demand) Backing() (milliCPU, memory float64) {
	var gpus float64
	for _, n := range d {
		if n.Weight > 0 && n.Units() > 0 {
			w := n.Weight
			gpus += w * n.Units()
			milliCPU += w * float64(n.MilliCPU)
			memory += w * float64(n.Memory)
		}
	}
	if gpus == 0 {
		return 0, 0
	}
	return milliCPU / gpus, memory / gpus
}

// Unbacked is how many of a node's free GPUs its free CPU and memory cannot back at
// milliCPU and memory per GPU: GPUs that tasks of the demand's mix could not use for
// want of the CPU or memory beside them. It grows smoothly as a task that asks for no
// GPU eats into a node's CPU or memory surplus, where FGD's per-shape count only moves
// when the last task of a shape stops fitting.
func Unbacked(free Room, milliCPU, memory float64) float64 {
	gpus := free.FreeGPUs()
	if gpus <= 0 {
		return 0
	}
	backed := gpus
	if milliCPU > 0 {
		backed = min(backed, max(0, float64(free.MilliCPU))/milliCPU)
	}
	if memory > 0 {
		backed = min(backed, max(0, float64(free.Memory))/memory)
	}
	return gpus - backed
}

// UnbackedDelta is how much taking req's CPU and memory (and GPUs) from a node with
// free room raises Unbacked.
func UnbackedDelta(free, req Room, milliCPU, memory float64) float64 {
	return Unbacked(free.Less(req), milliCPU, memory) - Unbacked(free, milliCPU, memory)
}
