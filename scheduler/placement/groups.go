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
// another, both in one rack (KAI's hierarchical PodGroups). The members of a role
// are alike (one shape); roles without a sub-group go anywhere in the gang's domain.

// GroupShape is the members of one role: their shape (the index of its Eligible
// entry on the nodes) and the level whose one domain must hold them — or,
// Preferred, should: a gang no plan holds with it is planned with the role's
// members anywhere in its domain.
type GroupShape struct {
	Role      string
	Shape     int
	Level     int
	Preferred bool
}

// GroupShortage says why no domain of Level (the gang's) holds the gang: in the best
// one, BestDomain, the role's members fit at most Best of Need in one domain of the
// role's level.
type GroupShortage struct {
	Level      int
	Role       string
	RoleLevel  int
	Need, Best int
	BestDomain string
	// Shape is the role's members' shape.
	Shape Shape
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
		s.Role, DescribeShapes([]Shape{s.Shape}), name(s.RoleLevel), name(s.Level), best, s.Best, s.Need, name(s.RoleLevel))
}

// ComputeGroups plans a gang whose roles have sub-groups: in one domain of the lowest
// level, from the highest sub-group level up to level, that holds it (required:
// level only), each sub-group's members in one domain of its level within it — the
// largest sub-group first, each into the domain it fills most tightly — and the other
// shapes anywhere in it. Of the domains that hold the gang, the one whose claimed
// nodes the tenant prefers most, then the one left with the least free room of the
// dominant resource, then by name. RoleNodes in the plan name, per role, the nodes
// claimed for its members. When no plan holds the gang with its preferred
// sub-groups, it is planned without them (their members anywhere in its domain);
// the shortage returned is the one with them. Cost: O(levels × nodes × shapes ×
// resources), twice with preferred sub-groups that do not fit.
func ComputeGroups(nodes []PlanNode, shapes []Shape, groups []GroupShape, level int, required bool) (Plan, map[string][]string, *GroupShortage) {
	plan, roles, short := computeGroups(nodes, shapes, groups, level, required)
	if short == nil {
		return plan, roles, nil
	}
	strict := slices.DeleteFunc(slices.Clone(groups), func(g GroupShape) bool { return g.Preferred })
	if len(strict) == len(groups) {
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
	for _, d := range domains {
		claims, roles, gs := fitGroups(d.nodes, shapes, groups, dominant)
		if claims == nil {
			if s.Role == "" || gs.Best > s.Best {
				s.Role, s.RoleLevel, s.Need, s.Best, s.BestDomain, s.Shape = gs.Role, gs.RoleLevel, gs.Need, gs.Best, d.name, gs.Shape
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

// fitGroups places the gang within one domain's nodes: each sub-group (largest
// first) in the one domain of its level it fills most tightly, then the other
// shapes anywhere. It returns the claims and the nodes of each role, or (claims
// nil) the sub-group that found no domain and the most of its members one held.
func fitGroups(nodes []*PlanNode, shapes []Shape, groups []GroupShape, dominant corev1.ResourceName) (map[string]map[corev1.ResourceName]int64, map[string][]string, GroupShortage) {
	order := append([]GroupShape(nil), groups...)
	sort.SliceStable(order, func(a, b int) bool {
		return size(shapes[order[a].Shape])*int64(shapes[order[a].Shape].Count) > size(shapes[order[b].Shape])*int64(shapes[order[b].Shape].Count)
	})
	claims, roles, short := fitGroupsInOrder(nodes, shapes, order, dominant)
	if claims == nil && len(order) > 1 {
		// The largest first took the one domain a smaller one needed: the other way.
		slices.Reverse(order)
		if c, r, _ := fitGroupsInOrder(nodes, shapes, order, dominant); c != nil {
			return c, r, GroupShortage{}
		}
	}
	return claims, roles, short
}

// fitGroupsInOrder is fitGroups with the sub-groups placed in the order given.
func fitGroupsInOrder(nodes []*PlanNode, shapes []Shape, order []GroupShape, dominant corev1.ResourceName) (map[string]map[corev1.ResourceName]int64, map[string][]string, GroupShortage) {
	claims := map[string]map[corev1.ResourceName]int64{}
	roles := map[string][]string{}
	grouped := map[int]bool{}
	for _, g := range order {
		grouped[g.Shape] = true
		one := make([]Shape, len(shapes))
		one[g.Shape] = shapes[g.Shape]
		need := shapes[g.Shape].Count
		var (
			bestClaims map[string]map[corev1.ResourceName]int64
			bestLeft   int64
			most       int
		)
		for _, d := range groupOf(nodes, g.Level) {
			trial := cloneClaims(claims)
			placed := fitInto(d.nodes, cloneShapes(one), trial)
			most = max(most, placed)
			if placed < need {
				continue
			}
			var left int64
			for _, n := range d.nodes {
				left += n.Free[dominant] - trial[n.Name][dominant]
			}
			if bestClaims == nil || left < bestLeft {
				bestClaims, bestLeft = trial, left
			}
		}
		if bestClaims == nil {
			return nil, nil, GroupShortage{Role: g.Role, RoleLevel: g.Level, Need: need, Best: most, Shape: shapes[g.Shape]}
		}
		for name, c := range bestClaims {
			if before := claims[name]; !sameClaim(before, c) {
				roles[g.Role] = append(roles[g.Role], name)
			}
		}
		claims = bestClaims
	}
	rest := make([]Shape, len(shapes))
	need := 0
	for i, s := range shapes {
		if !grouped[i] {
			rest[i] = s
			need += s.Count
		}
	}
	if need > 0 && fitInto(nodes, rest, claims) < need {
		return nil, nil, GroupShortage{Role: "other", RoleLevel: -1, Need: need, Shape: rest[0]}
	}
	return claims, roles, GroupShortage{}
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
