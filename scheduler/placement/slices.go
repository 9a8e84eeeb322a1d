package placement

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-nexus/kubenexus/api/topology"
)

// Slices: below the domain that holds it whole, a gang may ask for slices — groups
// of Size members, each group in one domain of a lower level, nested outer to inner
// (Kueue's podset-slice-required-topology and its multi-layer constraints, a
// PodGroup's spec.networkTopology.slices): 96 members in one zone, in slices of 48
// each in one block, made of slices of 16 each in one NVLink domain. A slice layer is
// always required. Members are alike (one shape): slices are a property of a pod
// template.

// Slice is one layer of slices: Size members in one domain of Level.
type Slice = topology.Slice

// SliceShortage says why no domain holds the gang in its slices: in the best domain
// of Level (the level meant to hold it whole; -1: the whole cluster), the layer
// Layer (an index into the slices) holds Best of the Need slices it needs.
type SliceShortage struct {
	Level      int
	Layer      int
	Need, Best int
	BestDomain string
}

// Describe says what a shortage means, with the levels' names.
func (s *SliceShortage) Describe(levels []topology.Level, slices []Slice, shape Shape) string {
	name := func(l int) string {
		if l >= 0 && l < len(levels) {
			return levels[l].Name
		}
		return "cluster"
	}
	l := slices[s.Layer]
	where := "the cluster"
	if s.Level >= 0 {
		where = "one " + name(s.Level)
	}
	best := "no " + name(s.Level)
	if s.BestDomain != "" {
		best = s.BestDomain
	}
	return fmt.Sprintf("needs %d members (%s) in %s, in %s; %s holds %d of the %d slices of %d in one %s",
		shape.Count, DescribeShapes([]Shape{shape}), where, topology.DescribeSlices(slices, levels), best, s.Best, s.Need, l.Size, name(l.Level))
}

// ComputeSliced plans count members of shape (shape.Count) in slices: in one domain
// of the lowest level from the outermost slice's up to level that holds them all
// (required: level only, the policy's), or — not required — over the whole cluster
// when no domain does. Of the domains that hold it, the one whose claimed nodes the
// tenant prefers most, then the one left with the fewest outermost slices (the
// tightest), then by name. Nodes with members of the gang already placed (Placed)
// keep the plan in their domain, and the members missing from their innermost slices
// go back there first. Cost: O(domains × nodes × layers).
func ComputeSliced(nodes []PlanNode, shape Shape, level int, required bool, slices []Slice) (Plan, *SliceShortage) {
	lowest := level
	if !required && len(slices) > 0 {
		lowest = min(slices[0].Level, level)
	}
	var short *SliceShortage
	for l := lowest; l <= level; l++ {
		plan, s := slicedAt(nodes, shape, l, slices)
		if s == nil {
			return plan, nil
		}
		short = s
	}
	if required {
		return Plan{}, short
	}
	plan, s := slicedAt(nodes, shape, -1, slices)
	if s != nil {
		return Plan{}, short
	}
	return plan, nil
}

// slicedAt plans the gang in one domain of level (-1: the cluster as one domain).
func slicedAt(nodes []PlanNode, shape Shape, level int, slices []Slice) (Plan, *SliceShortage) {
	var domains []domain
	if level < 0 {
		d := domain{name: AnyDomain}
		for i := range nodes {
			d.nodes = append(d.nodes, &nodes[i])
		}
		domains = []domain{d}
	} else {
		domains = group(nodes, level)
	}
	anchored := map[string]bool{}
	for _, d := range domains {
		for _, n := range d.nodes {
			if n.Placed > 0 || n.Anchor {
				anchored[d.name] = true
			}
		}
	}
	short := &SliceShortage{Level: level, Layer: len(slices) - 1, Need: shape.Count / slices[len(slices)-1].Size}
	if len(anchored) > 1 {
		return Plan{}, short
	}
	var (
		best       *Plan
		bestPref   int64
		bestSpare  int
		bestDomain string
	)
	for _, d := range domains {
		if len(anchored) == 1 && !anchored[d.name] {
			continue
		}
		claims, ranked, spare, layer, need, got := sliceInto(d.nodes, shape, slices)
		if claims == nil {
			if layer < short.Layer || (layer == short.Layer && got > short.Best) || short.BestDomain == "" {
				short.Layer, short.Need, short.Best, short.BestDomain = layer, need, got, d.name
			}
			continue
		}
		pref := preference(d.nodes, claims)
		if best == nil || pref > bestPref || (pref == bestPref && (spare < bestSpare || (spare == bestSpare && d.name < bestDomain))) {
			best = &Plan{Level: max(level, 0), Domains: []string{d.name}, Fits: true, Placed: shape.Count, Claims: claims, Ranked: ranked}
			bestPref, bestSpare, bestDomain = pref, spare, d.name
		}
	}
	if best == nil {
		return Plan{}, short
	}
	if level < 0 && len(nodes) > 0 {
		best.Level = len(nodes[0].Domains) // past the last level: the cluster
	}
	return *best, nil
}

// sliceInto places the gang's members in slices within one domain's nodes. It
// returns the claims, the innermost domains claimed, in the order claimed (none
// when members were placed before), how many outermost slices the domain holds
// beyond the gang's — or, when it cannot hold the gang (claims nil), the layer
// short (the innermost layer whose slices the domain holds too few of), how many
// slices of it the gang needs and how many the domain holds.
func sliceInto(nodes []*PlanNode, shape Shape, slices []Slice) (claims map[string]map[corev1.ResourceName]int64, ranked []RankedDomain, spare, layer, need, got int) {
	claims = map[string]map[corev1.ResourceName]int64{}
	count := shape.Count
	inner := slices[len(slices)-1]
	// Members placed before (repair, scale-up): those missing from their innermost
	// slices go back to its domain first.
	placed := false
	for _, n := range nodes {
		placed = placed || n.Placed > 0
	}
	if placed {
		for _, d := range groupOf(nodes, inner.Level) {
			if count == 0 {
				break
			}
			p := 0
			for _, n := range d.nodes {
				p += n.Placed
			}
			missing := min((inner.Size-p%inner.Size)%inner.Size, count)
			if missing == 0 {
				continue
			}
			s := shape
			s.Count = missing
			if fitInto(d.nodes, []Shape{s}, claims) < missing {
				return nil, nil, 0, len(slices) - 1, 1, 0
			}
			count -= missing
		}
		if count%inner.Size != 0 {
			// An elastic gang growing by less than a slice: the rest goes where it fits.
			s := shape
			s.Count = count
			if fitInto(nodes, []Shape{s}, claims) < count {
				return nil, nil, 0, len(slices) - 1, count, 0
			}
			return claims, nil, 0, 0, 0, 0
		}
		slices = []Slice{inner} // outer layers are not re-checked around placed members
	}
	for k := len(slices) - 1; k >= 0; k-- {
		n := count / slices[k].Size
		if c := sliceCount(nodes, shape, claims, slices, k); c < n {
			return nil, nil, 0, k, n, c
		}
	}
	n := count / slices[0].Size
	spare = sliceCount(nodes, shape, claims, slices, 0) - n
	if !placed {
		ranked = []RankedDomain{}
	}
	assignSlices(nodes, shape, claims, slices, 0, n, &ranked)
	return claims, ranked, spare, 0, 0, 0
}

// sliceCount is how many slices of layer k the nodes hold (beyond claims), each in
// one domain of its level and made of whole slices of the layer below.
func sliceCount(nodes []*PlanNode, shape Shape, claims map[string]map[corev1.ResourceName]int64, slices []Slice, k int) int {
	total := 0
	for _, g := range groupOf(nodes, slices[k].Level) {
		total += sliceCountIn(g.nodes, shape, claims, slices, k)
	}
	return total
}

// sliceCountIn is sliceCount for the nodes of one domain of layer k's level.
func sliceCountIn(nodes []*PlanNode, shape Shape, claims map[string]map[corev1.ResourceName]int64, slices []Slice, k int) int {
	if k == len(slices)-1 {
		members := 0
		for _, n := range nodes {
			if len(n.Eligible) > 0 && !n.Eligible[0] {
				continue
			}
			members += capacity(n, claims[n.Name], shape.Requests, perNode(shape, slices[k].Size*len(nodes)))
		}
		return members / slices[k].Size
	}
	return sliceCount(nodes, shape, claims, slices, k+1) / (slices[k].Size / slices[k+1].Size)
}

// assignSlices claims n slices of layer k on nodes: in the domains of its level that
// hold the most first, the last ones in the domain that holds them most tightly. It
// appends the innermost domains to ranked, in the order it claims them (unless
// *ranked is nil).
func assignSlices(nodes []*PlanNode, shape Shape, claims map[string]map[corev1.ResourceName]int64, slices []Slice, k, n int, ranked *[]RankedDomain) {
	type held struct {
		d domain
		c int
	}
	var gs []held
	for _, g := range groupOf(nodes, slices[k].Level) {
		if c := sliceCountIn(g.nodes, shape, claims, slices, k); c > 0 {
			gs = append(gs, held{g, c})
		}
	}
	sort.SliceStable(gs, func(a, b int) bool { return gs[a].c > gs[b].c })
	for n > 0 && len(gs) > 0 {
		pick := 0 // the largest, unless one holds all that is left: the tightest such
		for i, g := range gs {
			if g.c >= n && (gs[pick].c < n || g.c < gs[pick].c) {
				pick = i
			}
		}
		g := gs[pick]
		gs = append(gs[:pick], gs[pick+1:]...)
		take := min(g.c, n)
		n -= take
		if k == len(slices)-1 {
			s := shape
			s.Count = take * slices[k].Size
			fitInto(g.d.nodes, []Shape{s}, claims)
			if *ranked != nil {
				names := make([]string, len(g.d.nodes))
				for i, n := range g.d.nodes {
					names[i] = n.Name
				}
				*ranked = append(*ranked, RankedDomain{Nodes: names, Members: s.Count})
			}
			continue
		}
		assignSlices(g.d.nodes, shape, claims, slices, k+1, take*(slices[k].Size/slices[k+1].Size), ranked)
	}
}

// groupOf groups nodes (pointers into the caller's slice) by their domain at level,
// in name order.
func groupOf(nodes []*PlanNode, level int) []domain {
	idx := map[string]int{}
	var out []domain
	for _, n := range nodes {
		key := n.Domain(level)
		j, ok := idx[key]
		if !ok {
			j = len(out)
			idx[key] = j
			out = append(out, domain{name: key})
		}
		out[j].nodes = append(out[j].nodes, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}
