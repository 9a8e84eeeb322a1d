package placement

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Shape is one kind of gang member (a role): what one member requests, in
// milli-units, and how many members of it still need a node.
type Shape struct {
	Requests map[corev1.ResourceName]int64
	Count    int
	// MaxPerNode bounds the members of this shape one node takes (0: no bound),
	// e.g. 1 for members that keep one another off their node (required pod
	// anti-affinity on the hostname) or that ask for a host port.
	MaxPerNode int
}

// AnyDomain is the one domain of a level that holds every node: the level of a gang
// that requires no topology domain.
const AnyDomain = "cluster"

// PlanNode is a node as the gang planner sees it.
type PlanNode struct {
	Name string
	// Domains holds the node's domain at each topology level, lowest level first; a
	// node without the level's label is a domain of its own there.
	Domains []string
	// Free is allocatable less requested (and less other plans' claims), in
	// milli-units.
	Free map[corev1.ResourceName]int64
	// Eligible says, per shape, whether a member of that shape may run on the node
	// at all (node selector and affinity, taints, tenant tier).
	Eligible []bool
	// Preference is how much the gang's tenant prefers the node (its tier score);
	// domains whose claimed nodes it prefers more win over a tighter fit.
	Preference int64
	// Anchor marks a node where a member of the gang is already placed: the gang's
	// plan must keep to the domains of its anchors.
	Anchor bool
	// Placed is how many members of the gang are already placed on the node (a
	// sliced plan puts the members missing from their slices back beside them).
	Placed int
	// Last marks a node the gang takes only once the other nodes of its domain are
	// full (a CPU-only gang on an accelerator node).
	Last bool
	// KeepDomain is the node's domain at the level kept whole ("": none), and
	// KeepWhole says that no pod runs in that domain yet: a plan that claims room in
	// a whole domain strands what it leaves there for gangs that need the domain.
	KeepDomain string
	KeepWhole  bool
}

// Plan is where a gang goes: the topology level and, in order of preference, the
// domains of that level, with the members of each shape assigned to nodes.
type Plan struct {
	// Level is the index of the level whose domains hold the gang.
	Level int
	// Domains are the chosen domains, most preferred first. One when a single
	// domain holds the whole gang.
	Domains []string
	// Fits is true when every member found a node; Placed counts those that did.
	Fits   bool
	Placed int
	// Claims are the resources the plan sets aside per node for the members not
	// placed yet, in milli-units.
	Claims map[string]map[corev1.ResourceName]int64
	// Stranded is the free capacity of the gang's dominant resource the plan leaves
	// in the domains kept whole that it breaks (whole before, not after).
	Stranded int64
	// Ranked are, for a sliced plan made with no member placed, the domains of the
	// innermost slice level it claimed slices in, in the order it claimed them:
	// nested, so that members taken in that order fill the slices of one outer slice
	// before the next. Members in rank order fill them one after another, and
	// neighbouring ranks share their slices (nil for other plans).
	Ranked []RankedDomain
}

// RankedDomain is one domain of a sliced plan's innermost level: its nodes (by name)
// and how many members the plan claimed room for there.
type RankedDomain struct {
	Nodes   []string
	Members int
}

// Shortage says why no domain of a level holds the gang.
type Shortage struct {
	Level int
	// Need is the number of members; BestFits how many the best domain holds and
	// BestDomain which it is.
	Need, BestFits int
	BestDomain     string
	// Anchored names the domain the gang's placed members run in, when the plan was
	// held to it; Spread says they run in more than one domain of the level.
	Anchored string
	Spread   bool
}

// Compute plans a gang over nodes. It looks for the lowest level, up to maxLevel,
// with a domain that holds every member, and picks among those domains the one whose
// claimed nodes the gang's tenant prefers most (Preference: its tier score), then the
// one that strands least in the domains kept whole (Stranded: a plan in a domain
// already broken strands nothing, one that fills a whole domain neither), then the
// best fit: the one left with the least free capacity of the gang's dominant resource
// (ties by domain name). When none does and spill is set, it takes domains of
// maxLevel, largest first, until the gang fits (Plan.Fits false if even that does
// not suffice); without spill it returns the shortage at maxLevel. When some nodes
// are anchors (members already placed there), only the domains holding every
// anchor count, and a spill starts from the anchors' domains. Cost:
// O(levels × nodes × shapes × resources).
func Compute(nodes []PlanNode, shapes []Shape, maxLevel int, spill bool) (Plan, *Shortage) {
	need := 0
	for _, s := range shapes {
		need += s.Count
	}
	dominant := dominantResource(shapes)
	wholeFree := keptWholeFree(nodes, dominant)
	var short *Shortage
	for level := 0; level <= maxLevel; level++ {
		domains, anchored := group(nodes, level), anchorDomains(nodes, level)
		if len(anchored) > 1 {
			// The members already placed span several domains: none holds the gang.
			short = &Shortage{Level: level, Need: need, Spread: true}
			continue
		}
		best := -1
		var bestLeft, bestPref, bestStranded int64
		var bestClaims map[string]map[corev1.ResourceName]int64
		var bestName string
		shortage := &Shortage{Level: level, Need: need}
		for name := range anchored {
			shortage.Anchored = name
		}
		for _, d := range domains {
			if len(anchored) == 1 && !anchored[d.name] {
				continue
			}
			// Most domains (single nodes at the low levels) cannot hold the gang: a
			// bound computed without allocating rules them out before a real fit.
			if bound := upperBound(d.nodes, shapes); bound < need {
				if bound > shortage.BestFits {
					shortage.BestFits, shortage.BestDomain = bound, d.name
				}
				continue
			}
			placed, claims, left := fit(d.nodes, shapes, dominant)
			if placed > shortage.BestFits || (placed == shortage.BestFits && shortage.BestDomain == "") {
				shortage.BestFits, shortage.BestDomain = placed, d.name
			}
			if placed < need {
				continue
			}
			pref, strands := preference(d.nodes, claims), stranded(wholeFree, d.nodes, claims, dominant)
			if best < 0 || pref > bestPref || (pref == bestPref && (strands < bestStranded || (strands == bestStranded && (left < bestLeft || (left == bestLeft && d.name < bestName))))) {
				best, bestLeft, bestPref, bestStranded, bestClaims, bestName = 1, left, pref, strands, claims, d.name
			}
		}
		if best >= 0 {
			return Plan{Level: level, Domains: []string{bestName}, Fits: true, Placed: need, Claims: bestClaims, Stranded: bestStranded}, nil
		}
		short = shortage
	}
	if !spill {
		return Plan{}, short
	}
	// Spill over the fewest domains of maxLevel: the largest first.
	domains := group(nodes, maxLevel)
	type sized struct {
		d      domain
		placed int
	}
	var sizes []sized
	for _, d := range domains {
		placed, _, _ := fit(d.nodes, shapes, dominant)
		sizes = append(sizes, sized{d, placed})
	}
	anchored := anchorDomains(nodes, maxLevel)
	sort.SliceStable(sizes, func(i, j int) bool {
		if ai, aj := anchored[sizes[i].d.name], anchored[sizes[j].d.name]; ai != aj {
			return ai
		}
		if sizes[i].placed != sizes[j].placed {
			return sizes[i].placed > sizes[j].placed
		}
		return sizes[i].d.name < sizes[j].d.name
	})
	plan := Plan{Level: maxLevel, Claims: map[string]map[corev1.ResourceName]int64{}}
	remaining := cloneShapes(shapes)
	for _, s := range sizes {
		if countOf(remaining) == 0 {
			break
		}
		if s.placed == 0 {
			continue
		}
		placedBy := fitInto(s.d.nodes, remaining, plan.Claims)
		if placedBy > 0 {
			plan.Domains = append(plan.Domains, s.d.name)
		}
	}
	plan.Placed = need - countOf(remaining)
	plan.Fits = plan.Placed == need
	return plan, short
}

// Describe says what a shortage means to a user, with the level's name.
func (s *Shortage) Describe(levelName string, shapes []Shape) string {
	switch {
	case s.Spread:
		return fmt.Sprintf("needs %d more members (%s) in one %s, but its placed members already run in more than one %s", s.Need, DescribeShapes(shapes), levelName, levelName)
	case s.Anchored != "":
		return fmt.Sprintf("needs %d more members (%s) in %s, where its placed members run; it fits %d", s.Need, DescribeShapes(shapes), s.Anchored, s.BestFits)
	}
	return fmt.Sprintf("needs %d members (%s) in one %s; the largest %s fits %d", s.Need, DescribeShapes(shapes), levelName, levelName, s.BestFits)
}

// The resources a plan counts GPUs published through DRA in (milli-units, as the
// others; a whole card is 1000): whole free cards, and the free capacity of all
// cards. A member that asks for whole GPUs through its claims asks for both, one
// that asks for a share of a GPU for that much capacity.
const (
	DRAWholeGPUs   corev1.ResourceName = "whole DRA GPUs"
	DRAGPUCapacity corev1.ResourceName = "DRA GPU capacity"
)

// DescribeShapes says what a gang's members ask for, e.g. "16 × 8 nvidia.com/gpu".
func DescribeShapes(shapes []Shape) string {
	var parts []string
	for _, s := range shapes {
		var req []string
		for name, v := range s.Requests {
			switch name {
			case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage:
				continue
			case DRAGPUCapacity:
				if s.Requests[DRAWholeGPUs] == 0 {
					req = append(req, strconv.FormatFloat(float64(v)/1000, 'f', -1, 64)+" of a DRA GPU")
				}
				continue
			}
			req = append(req, fmt.Sprintf("%d %s", v/1000, name))
		}
		sort.Strings(req)
		if len(req) == 0 {
			if v, ok := s.Requests[corev1.ResourceCPU]; ok {
				req = append(req, fmt.Sprintf("%dm cpu", v))
			}
		}
		parts = append(parts, fmt.Sprintf("%d × %s", s.Count, strings.Join(req, ", ")))
	}
	return strings.Join(parts, " + ")
}

// dominantResource is the resource the gang's placement is judged by: GPUs (any
// extended resource) when the gang asks for them, else CPU.
func dominantResource(shapes []Shape) corev1.ResourceName {
	for _, s := range shapes {
		for name, v := range s.Requests {
			if v > 0 && name != corev1.ResourceCPU && name != corev1.ResourceMemory && name != corev1.ResourceEphemeralStorage && name != corev1.ResourcePods {
				return name
			}
		}
	}
	return corev1.ResourceCPU
}

// size orders shapes: extended resources first, then CPU.
func size(s Shape) int64 {
	var ext int64
	for name, v := range s.Requests {
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory && name != corev1.ResourceEphemeralStorage && name != corev1.ResourcePods {
			ext += v
		}
	}
	return ext*1_000_000 + s.Requests[corev1.ResourceCPU]
}

func cloneShapes(shapes []Shape) []Shape { return append([]Shape(nil), shapes...) }

func countOf(shapes []Shape) int {
	n := 0
	for _, s := range shapes {
		n += s.Count
	}
	return n
}
