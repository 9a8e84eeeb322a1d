package networkfabric

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/api/topology"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
)

// planGrouped plans a gang whose roles have sub-groups (topology.Policy.Groups: a
// role's members in one domain of a level of their own, within the gang's) with
// placement.ComputeGroups over every node; each member is then held to the nodes the
// plan claims for its role (groupNodes). A role's pending members must be alike.
// Members already placed (a replacement after a repair, a late member) keep the plan
// where they run: the gang's pending members only in the placed ones' domain of the
// gang's level, and a role's only in its placed members' domain of its own level
// (anchorGroups). Callers hold pl.mu.
func (pl *Plugin) planGrouped(key gang.Key, policy topology.Policy, nodes []fwk.NodeInfo, roles []role, shapes []placement.Shape, anchors sets.Set[string], now time.Time) (*activePlan, *fwk.Status) {
	levels := pl.levelsNow()
	byRole := map[string]int{}
	for i, r := range roles {
		name := string(workload.RoleOf(r.pod))
		if j, twice := byRole[name]; twice {
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("%s: gang %s keeps role %q in one domain (%s), but its pending members of that role are not alike (%s, %s): a sub-group is planned for members of one shape",
				ErrReasonTopologyUnsatisfiable, key, name, policy.Source, placement.DescribeShapes(shapes[j:j+1]), placement.DescribeShapes(shapes[i:i+1])))
		}
		byRole[name] = i
	}
	var groups []placement.GroupShape
	for _, g := range policy.GroupLayers() {
		if i, ok := byRole[g.Role]; ok {
			groups = append(groups, placement.GroupShape{Role: g.Role, Shape: i, Level: g.Level, Preferred: g.Preferred, Set: g.Set, SetLevel: g.SetLevel})
		}
	}
	planNodes, _ := pl.planNodes(nodes, roles, shapes, anchors, true)
	if len(anchors) > 0 {
		pl.anchorGroups(key, planNodes, groups, setRoles(policy), policy.Level, policy.Required)
	}
	plan, roleNodes, short := placement.ComputeGroups(planNodes, shapes, groups, policy.Level, policy.Required)
	if short != nil {
		code, reason := fwk.Unschedulable, ErrReasonInsufficientCapacity
		if policy.Required {
			code, reason = fwk.UnschedulableAndUnresolvable, ErrReasonTopologyUnsatisfiable
		}
		return nil, fwk.NewStatus(code, fmt.Sprintf("%s: gang %s %s (%s)", reason, key, short.Describe(levels), policy.Source))
	}
	ap := pl.activate(plan, nodes, shapes, policy, now)
	ap.groupNodes = map[string]sets.Set[string]{}
	for role, ns := range roleNodes {
		ap.groupNodes[role] = sets.New(ns...)
	}
	pl.plans[key] = ap
	klog.V(4).InfoS("Planned gang in sub-groups", "gang", key, "domains", plan.Domains, "roles", roleNodes)
	return ap, nil
}

// setRoles lists each set's roles, those with no pending member too.
func setRoles(policy topology.Policy) map[string][]string {
	var out map[string][]string
	for _, g := range policy.GroupLayers() {
		if g.Set != "" {
			if out == nil {
				out = map[string][]string{}
			}
			out[g.Set] = append(out[g.Set], g.Role)
		}
	}
	return out
}

// anchorGroups narrows the nodes of a gang with placed members: for a required level,
// none outside the domain of level most of them run in (a preferred gang may spread
// when that domain is full), for each sub-group with members placed, none of its shape
// outside the domain of its level most of those run in, and for each set (setRoles:
// its roles), none of its pending shapes outside the domain of its level most of the
// placed members of any of its roles run in.
func (pl *Plugin) anchorGroups(key gang.Key, nodes []placement.PlanNode, groups []placement.GroupShape, setRoles map[string][]string, level int, required bool) {
	byName := make(map[string]*placement.PlanNode, len(nodes))
	for i := range nodes {
		byName[nodes[i].Name] = &nodes[i]
	}
	// domainOf is the domain of level l most of on run in ("" when none is known).
	domainOf := func(on []string, l int) string {
		count, best := map[string]int{}, ""
		for _, name := range on {
			if n := byName[name]; n != nil && l < len(n.Domains) && n.Domains[l] != "" {
				d := n.Domains[l]
				count[d]++
				if best == "" || count[d] > count[best] || count[d] == count[best] && d < best {
					best = d
				}
			}
		}
		return best
	}
	keep := func(l int, d string, shape int) {
		for i := range nodes {
			if l < len(nodes[i].Domains) && nodes[i].Domains[l] == d {
				continue
			}
			if shape < 0 {
				clear(nodes[i].Eligible)
			} else {
				nodes[i].Eligible[shape] = false
			}
		}
	}
	if pl.members == nil {
		return
	}
	if d := domainOf(pl.members.PlacedNodes(key), level); d != "" && required {
		keep(level, d, -1)
	}
	sets := map[string][]placement.GroupShape{}
	for _, g := range groups {
		if g.Set != "" {
			sets[g.Set] = append(sets[g.Set], g)
		}
		if g.Preferred || g.Level == placement.NoLevel {
			continue // a replacement may go where there is room
		}
		on := pl.members.PlacedNodesWhere(key, func(p *corev1.Pod) bool { return string(workload.RoleOf(p)) == g.Role })
		if d := domainOf(on, g.Level); d != "" {
			keep(g.Level, d, g.Shape)
		}
	}
	// A set's pending members go only to the domain of its level where its placed
	// members run, of whichever of its roles (a lost leader's replacement beside its
	// running workers).
	for name, set := range sets {
		on := pl.members.PlacedNodesWhere(key, func(p *corev1.Pod) bool {
			return slices.Contains(setRoles[name], string(workload.RoleOf(p)))
		})
		if d := domainOf(on, set[0].SetLevel); d != "" {
			for _, g := range set {
				keep(g.SetLevel, d, g.Shape)
			}
		}
	}
}

// groupedNodes is where a member of a grouped plan may go: the nodes still claimed
// for its role (any node still claimed, for a role without a sub-group).
func (pl *Plugin) groupedNodes(ap *activePlan, pod *corev1.Pod) sets.Set[string] {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	claimed := sets.KeySet(ap.claims)
	if own, ok := ap.groupNodes[string(workload.RoleOf(pod))]; ok {
		return claimed.Intersection(own)
	}
	return claimed
}
