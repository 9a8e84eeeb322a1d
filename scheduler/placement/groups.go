package placement

import (
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-nexus/kubenexus/api/topology"
)

// Sub-groups: a gang may keep the members of each of some roles in one domain of a
// level of their own, within its domain of the gang's level — a disaggregated
// inference group's prefill members in one NVLink domain and its decode members in
// another, both in one rack (KAI's hierarchical PodGroups). Several roles may also be
// kept together in one domain of a level between theirs and the gang's (a set: a
// KAI sub-group over several leaves, a CompositePodGroup nested in another) — decode's
// leader and workers in one block, its workers in one NVLink domain of it. The
// members of a role are alike (one shape); roles without a sub-group or set go
// anywhere in the gang's domain.

// NoLevel is the Level of a GroupShape whose role has no domain of its own, only its
// set's.
const NoLevel = -1

// GroupShape is the members of one role: their shape (the index of its Eligible
// entry on the nodes) and the level whose one domain must hold them (NoLevel: none
// of their own) — or, Preferred, should: a gang no plan holds with it is planned
// with the role's members anywhere in its domain (or their set's). Set, when not
// "", names the roles' set: every role naming it is kept in one domain of SetLevel
// together.
type GroupShape struct {
	Role      string
	Shape     int
	Level     int
	Preferred bool
	Set       string
	SetLevel  int
}

// GroupShortage says why no domain of Level (the gang's, or a set's) holds the gang:
// in the best one, BestDomain, the members of Role (a role, or a set of roles) fit
// at most Best of Need in one domain of RoleLevel.
type GroupShortage struct {
	Level      int
	Role       string
	RoleLevel  int
	Need, Best int
	BestDomain string
	// Shapes are Role's members' shapes.
	Shapes []Shape
}

// Describe says what a shortage means, with the levels' names.
func (s *GroupShortage) Describe(levels []topology.Level) string {
	name := func(l int) string {
		if l >= 0 && l < len(levels) {
			return levels[l].Name
		}
		return "cluster"
	}
	best := "no " + name(s.Level)
	if s.BestDomain != "" {
		best = s.BestDomain
	}
	return fmt.Sprintf("needs its %s members (%s) in one %s within one %s; %s holds %d of the %d in one %s",
		s.Role, DescribeShapes(s.Shapes), name(s.RoleLevel), name(s.Level), best, s.Best, s.Need, name(s.RoleLevel))
}

// ComputeGroups plans a gang whose roles have sub-groups or sets: in one domain of
// the lowest level, from the highest sub-group or set level up to level, that holds
// it (required: level only), each set's roles together in one domain of its level and
// each sub-group's members in one domain of its level within that — the largest first,
// each into the domain it fills most tightly — and the other shapes anywhere in it.
// Of the domains that hold the gang, the one whose claimed nodes the tenant prefers
// most, then the one left with the least free room of the dominant resource, then by
// name. RoleNodes in the plan name, per role, the nodes claimed for its members. When
// no plan holds the gang with its preferred sub-groups, it is planned without them
// (their members anywhere in its domain, or in their set's); the shortage returned is
// the one with them. Cost: O(levels × nodes × shapes × resources) per set level, twice
// with preferred sub-groups that do not fit.
func ComputeGroups(nodes []PlanNode, shapes []Shape, groups []GroupShape, level int, required bool) (Plan, map[string][]string, *GroupShortage) {
	plan, roles, short := computeGroups(nodes, shapes, groups, level, required)
	if short == nil {
		return plan, roles, nil
	}
	strict := make([]GroupShape, 0, len(groups))
	for _, g := range groups {
		if g.Preferred {
			if g.Set == "" {
				continue
			}
			g.Level, g.Preferred = NoLevel, false // still in its set's domain
		}
		strict = append(strict, g)
	}
	if slices.Equal(strict, groups) {
		return plan, roles, short
	}
	if plan, roles, s := computeGroups(nodes, shapes, strict, level, required); s == nil {
		return plan, roles, nil
	}
	return Plan{}, nil, short
}

func computeGroups(nodes []PlanNode, shapes []Shape, groups []GroupShape, level int, required bool) (Plan, map[string][]string, *GroupShortage) {
	lowest := level
	if !required {
		lowest = 0
		for _, g := range groups {
			lowest = max(lowest, g.Level)
			if g.Set != "" {
				lowest = max(lowest, min(g.SetLevel, level))
			}
		}
	}
	dominant := dominantResource(shapes)
	var short *GroupShortage
	for l := lowest; l <= level; l++ {
		plan, roles, s := groupsIn(group(nodes, l), l, shapes, groups, dominant)
		if s == nil {
			return plan, roles, nil
		}
		short = s
	}
	if !required && len(nodes) > 0 {
		all := domain{name: AnyDomain}
		for i := range nodes {
			all.nodes = append(all.nodes, &nodes[i])
		}
		if plan, roles, s := groupsIn([]domain{all}, len(nodes[0].Domains), shapes, groups, dominant); s == nil {
			return plan, roles, nil
		}
	}
	return Plan{}, nil, short
}

// groupsIn plans the gang in the best of domains (of level l), or says why none
// holds it.
func groupsIn(domains []domain, l int, shapes []Shape, groups []GroupShape, dominant corev1.ResourceName) (Plan, map[string][]string, *GroupShortage) {
	var (
		best      *Plan
		bestRoles map[string][]string
		bestPref  int64
		bestLeft  int64
	)
	s := &GroupShortage{Level: l}
	units, loose := unitsOf(shapes, groups)
	for _, d := range domains {
		claims, roles, gs := fitUnits(d.nodes, shapes, units, loose, nil, dominant, false)
		if claims == nil {
			if s.Role == "" || gs.Best > s.Best {
				*s = gs
				if s.BestDomain == "" {
					s.Level, s.BestDomain = l, d.name
				}
			}
			continue
		}
		var left int64
		for _, n := range d.nodes {
			left += n.Free[dominant] - claims[n.Name][dominant]
		}
		pref := preference(d.nodes, claims)
		if best == nil || pref > bestPref || (pref == bestPref && (left < bestLeft || (left == bestLeft && d.name < best.Domains[0]))) {
			best = &Plan{Level: l, Domains: []string{d.name}, Fits: true, Placed: countOf(shapes), Claims: claims}
			bestRoles, bestPref, bestLeft = roles, pref, left
		}
	}
	if best == nil {
		return Plan{}, nil, s
	}
	return *best, bestRoles, nil
}

// unit is what the planner puts in one domain: a role's members (one GroupShape) in
// one domain of its level, or a set's roles together in one domain of the set's.
type unit struct {
	name  string
	level int
	set   bool
	roles []GroupShape
}

// unitsOf sorts groups into units, and lists the shapes of no unit (loose: they go
// anywhere in the domain the units are planned in). A set's roles keep their own
// level, with Set cleared: inside the set's domain they are units, or loose.
func unitsOf(shapes []Shape, groups []GroupShape) (units []unit, loose []GroupShape) {
	sets := map[string]int{}
	inUnit := make([]bool, len(shapes))
	for _, g := range groups {
		if g.Set == "" {
			if g.Level != NoLevel {
				units = append(units, unit{name: g.Role, level: g.Level, roles: []GroupShape{g}})
				inUnit[g.Shape] = true
			}
			continue
		}
		i, ok := sets[g.Set]
		if !ok {
			i = len(units)
			sets[g.Set] = i
			units = append(units, unit{name: g.Set, level: g.SetLevel, set: true})
		}
		g.Set = ""
		units[i].roles = append(units[i].roles, g)
		inUnit[g.Shape] = true
	}
	byShape := map[int]GroupShape{}
	for _, g := range groups {
		byShape[g.Shape] = g
	}
	for i := range shapes {
		if !inUnit[i] {
			g, ok := byShape[i]
			if !ok {
				g = GroupShape{Shape: i, Level: NoLevel}
			}
			loose = append(loose, g)
		}
	}
	return units, loose
}

// shapesOf returns the shapes of roles, each at its index (the others empty), and
// how many members they are.
func shapesOf(shapes []Shape, roles []GroupShape) ([]Shape, int) {
	out := make([]Shape, len(shapes))
	n := 0
	for _, g := range roles {
		out[g.Shape] = shapes[g.Shape]
		n += shapes[g.Shape].Count
	}
	return out, n
}

func unitSize(shapes []Shape, u unit) int64 {
	var n int64
	for _, g := range u.roles {
		n += size(shapes[g.Shape]) * int64(shapes[g.Shape].Count)
	}
	return n
}

// fitUnits places units (the largest first) and then the loose shapes within nodes,
// on top of claims (not changed): each unit in the one domain of its level it fills
// most tightly — a set's units and loose roles again inside its domain. It returns
// the claims and the nodes of each role (a loose role's only when track: the loose
// members of a set), or (claims nil) the unit that found no domain and the most of
// its members one held.
func fitUnits(nodes []*PlanNode, shapes []Shape, units []unit, loose []GroupShape, claims map[string]map[corev1.ResourceName]int64, dominant corev1.ResourceName, track bool) (map[string]map[corev1.ResourceName]int64, map[string][]string, GroupShortage) {
	order := slices.Clone(units)
	sort.SliceStable(order, func(a, b int) bool { return unitSize(shapes, order[a]) > unitSize(shapes, order[b]) })
	c, roles, short := fitUnitsInOrder(nodes, shapes, order, loose, claims, dominant, track)
	if c == nil && len(order) > 1 {
		// The largest first took the one domain a smaller one needed: the other way.
		slices.Reverse(order)
		if c, r, _ := fitUnitsInOrder(nodes, shapes, order, loose, claims, dominant, track); c != nil {
			return c, r, GroupShortage{}
		}
	}
	return c, roles, short
}

// fitUnitsInOrder is fitUnits with the units placed in the order given.
func fitUnitsInOrder(nodes []*PlanNode, shapes []Shape, order []unit, loose []GroupShape, start map[string]map[corev1.ResourceName]int64, dominant corev1.ResourceName, track bool) (map[string]map[corev1.ResourceName]int64, map[string][]string, GroupShortage) {
	claims := cloneClaims(start)
	roles := map[string][]string{}
	for _, u := range order {
		mine, need := shapesOf(shapes, u.roles)
		var (
			bestClaims map[string]map[corev1.ResourceName]int64
			bestRoles  map[string][]string
			bestLeft   int64
			most       int
			inner      *GroupShortage
		)
		// A set's own units and loose roles, the same in every domain tried.
		var (
			setUnits []unit
			setLoose []GroupShape
		)
		if u.set {
			var all []GroupShape
			setUnits, all = unitsOf(shapes, u.roles)
			for _, g := range all {
				if mine[g.Shape].Count > 0 {
					setLoose = append(setLoose, g)
				}
			}
		}
		for _, d := range groupOf(nodes, u.level) {
			var (
				trial map[string]map[corev1.ResourceName]int64
				tr    map[string][]string
			)
			if u.set {
				c, r, s := fitUnits(d.nodes, shapes, setUnits, setLoose, claims, dominant, true)
				if c == nil {
					// Its members fit the domain, but not each sub-group in one domain
					// of its own level: that is the shortage to tell.
					all := fitInto(d.nodes, cloneShapes(mine), cloneClaims(claims))
					most = max(most, all)
					if all == need && (inner == nil || s.Best > inner.Best) {
						s.Level, s.BestDomain = u.level, d.name
						inner = &s
					}
					continue
				}
				most = need
				trial, tr = c, r
			} else {
				trial = cloneClaims(claims)
				placed := fitInto(d.nodes, cloneShapes(mine), trial)
				most = max(most, placed)
				if placed < need {
					continue
				}
				tr = map[string][]string{u.name: changed(claims, trial)}
			}
			var left int64
			for _, n := range d.nodes {
				left += n.Free[dominant] - trial[n.Name][dominant]
			}
			if bestClaims == nil || left < bestLeft {
				bestClaims, bestRoles, bestLeft = trial, tr, left
			}
		}
		if bestClaims == nil {
			if inner != nil && most == need {
				return nil, nil, *inner
			}
			return nil, nil, GroupShortage{Role: u.name, RoleLevel: u.level, Need: need, Best: most, Shapes: nonEmpty(mine)}
		}
		for role, on := range bestRoles {
			roles[role] = append(roles[role], on...)
		}
		claims = bestClaims
	}
	if track {
		// A set's members of no sub-group: anywhere in its domain, each role's nodes
		// told.
		for _, g := range loose {
			before := cloneClaims(claims)
			one, need := shapesOf(shapes, []GroupShape{g})
			if fitInto(nodes, one, claims) < need {
				return nil, nil, GroupShortage{Role: g.Role, RoleLevel: NoLevel, Need: need, Shapes: nonEmpty(one)}
			}
			roles[g.Role] = append(roles[g.Role], changed(before, claims)...)
		}
		return claims, roles, GroupShortage{}
	}
	rest, need := shapesOf(shapes, loose)
	if need > 0 && fitInto(nodes, rest, claims) < need {
		return nil, nil, GroupShortage{Role: "other", RoleLevel: NoLevel, Need: need, Shapes: nonEmpty(rest)}
	}
	return claims, roles, GroupShortage{}
}

// changed names the nodes whose claims differ between before and after.
func changed(before, after map[string]map[corev1.ResourceName]int64) []string {
	var out []string
	for name, c := range after {
		if !sameClaim(before[name], c) {
			out = append(out, name)
		}
	}
	return out
}

func nonEmpty(shapes []Shape) []Shape {
	var out []Shape
	for _, s := range shapes {
		if s.Count > 0 {
			out = append(out, s)
		}
	}
	return out
}

func cloneClaims(c map[string]map[corev1.ResourceName]int64) map[string]map[corev1.ResourceName]int64 {
	out := make(map[string]map[corev1.ResourceName]int64, len(c))
	for n, r := range c {
		m := make(map[corev1.ResourceName]int64, len(r))
		for k, v := range r {
			m[k] = v
		}
		out[n] = m
	}
	return out
}

func sameClaim(a, b map[corev1.ResourceName]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
