package feasibility

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/kube-nexus/kubenexus/api/topology"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
)

// groupedLevels returns, for a workload some of whose pod sets are sub-groups
// (PodSet.GroupTopology) or in sets (PodSet.SetTopology), the levels to plan it over —
// the KubeNexusConfig's, and its required label as one more when they do not declare
// it — the index of the level whose one domain holds it, whether that is required
// (else the planner also tries the whole cluster), and one GroupShape per such pod
// set whose labels are levels below it. ok is false when no pod set is either.
func (c *Cluster) groupedLevels(w *Workload) (levels []topology.Level, level int, required bool, groups []placement.GroupShape, ok bool) {
	levels = c.Levels
	if len(levels) == 0 {
		return nil, 0, false, nil, false
	}
	level = len(levels) - 1
	for _, ps := range w.PodSets {
		if ps.RequiredTopology == "" {
			continue
		}
		required = true
		if i := c.levelIndex(ps.RequiredTopology); i < len(c.Levels) {
			level = min(level, i)
		} else {
			levels = append(c.Levels[:len(c.Levels):len(c.Levels)], topology.Level{Name: ps.RequiredTopology, NodeLabel: ps.RequiredTopology})
			level = len(levels) - 1
		}
	}
	for i, ps := range w.PodSets {
		if ps.GroupTopology == "" && ps.Set == "" {
			continue
		}
		ok = true
		g := placement.GroupShape{Role: cmp.Or(ps.Role, ps.Name), Shape: i, Level: placement.NoLevel}
		if l := c.levelIndex(ps.GroupTopology); ps.GroupTopology != "" && l <= level && l < len(c.Levels) {
			g.Level = l
		}
		if l := c.levelIndex(ps.SetTopology); ps.Set != "" && l < len(c.Levels) {
			g.Set, g.SetLevel = ps.Set, l
		}
		if g.Level != placement.NoLevel || g.Set != "" {
			groups = append(groups, g)
		}
	}
	return levels, level, required, groups, ok
}

// describeGroups says what the sub-groups and sets ask ("prefill in one nvlink,
// decode-workers in one nvlink, decode (decode-leader, decode-workers) in one rack").
func describeGroups(groups []placement.GroupShape, levels []topology.Level) string {
	var parts []string
	sets := map[string][]string{}
	var setOrder []string
	for _, g := range groups {
		if g.Level != placement.NoLevel {
			parts = append(parts, fmt.Sprintf("%s in one %s", g.Role, levels[g.Level].Name))
		}
		if g.Set != "" {
			if _, seen := sets[g.Set]; !seen {
				setOrder = append(setOrder, g.Set)
			}
			sets[g.Set] = append(sets[g.Set], g.Role)
		}
	}
	for _, set := range setOrder {
		var level int
		for _, g := range groups {
			if g.Set == set {
				level = g.SetLevel
			}
		}
		parts = append(parts, fmt.Sprintf("%s (%s) in one %s", set, strings.Join(sets[set], ", "), levels[level].Name))
	}
	return strings.Join(parts, ", ")
}

// decideGrouped finishes d for a workload in sub-groups, planned with the
// scheduler's placement.ComputeGroups over nodes (made over levels): the whole in
// one domain of level, each sub-group in one domain of its own level within it.
func decideGrouped(d Decision, nodes []placement.PlanNode, shapes []placement.Shape, levels []topology.Level, level int, required bool, groups []placement.GroupShape) Decision {
	d.Groups = describeGroups(groups, levels)
	plan, roles, short := placement.ComputeGroups(nodes, shapes, groups, level, required)
	if short == nil {
		d.Fits, d.Domains = true, plan.Domains
		where := make([]string, 0, len(groups))
		for _, g := range groups {
			on := slices.Sorted(slices.Values(roles[g.Role])) // the plan lists them in map order
			where = append(where, fmt.Sprintf("%s on %s", g.Role, strings.Join(on, ", ")))
		}
		d.Message = fmt.Sprintf("%s fit in %s %s, %s (%s), now", d.Shapes, levelName(levels, plan.Level), strings.Join(plan.Domains, ", "), d.Groups, strings.Join(where, "; "))
		return d
	}
	d.GroupShort, d.GroupWhy = short, short.Describe(levels)
	d.Message = d.GroupWhy + d.freeNote()
	return d
}

// levelName is the name of levels[l], or the cluster's pseudo-level past the last.
func levelName(levels []topology.Level, l int) string {
	if l >= 0 && l < len(levels) {
		return levels[l].Name
	}
	return Anywhere
}
