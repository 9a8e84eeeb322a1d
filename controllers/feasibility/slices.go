package feasibility

import (
	"fmt"
	"strings"

	"github.com/kube-nexus/kubenexus/api/topology"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
)

// SliceLayer is one layer of a pod set's slices: Size pods in one domain of the
// node label Label (Kueue's podSetSliceRequiredTopology and podSetSliceSize, or
// one entry of its multi-layer constraints), outermost first.
type SliceLayer struct {
	Label string
	Size  int
}

// slicedLevels returns, for a workload whose one pod set asks for slices, the
// levels to plan it over — the slices' node labels, innermost first, then its
// required label unless a slice names it — the index of the level that holds it
// whole (-1: none required), and its slices over those levels. ok is false when no
// pod set asks for slices.
func (c *Cluster) slicedLevels(w *Workload) (levels []topology.Level, outer int, slices []topology.Slice, ok bool) {
	var ps *PodSet
	for i := range w.PodSets {
		if len(w.PodSets[i].Slices) > 0 {
			ps = &w.PodSets[i]
			break
		}
	}
	if ps == nil {
		return nil, 0, nil, false
	}
	index := map[string]int{}
	add := func(label string) int {
		if i, ok := index[label]; ok {
			return i
		}
		name := label
		if i := c.levelIndex(label); i < len(c.Levels) {
			name = c.Levels[i].Name
		}
		index[label] = len(levels)
		levels = append(levels, topology.Level{Name: name, NodeLabel: label})
		return index[label]
	}
	for i := len(ps.Slices) - 1; i >= 0; i-- {
		add(ps.Slices[i].Label)
	}
	outer = -1
	if ps.RequiredTopology != "" {
		outer = add(ps.RequiredTopology)
	}
	for _, s := range ps.Slices {
		slices = append(slices, topology.Slice{Level: index[s.Label], Size: s.Size})
	}
	return levels, outer, slices, true
}

// decideSliced finishes d for a workload in slices: planned with the scheduler's
// placement.ComputeSliced over nodes (made over levels), the whole in one domain of
// level outer (-1: anywhere).
func decideSliced(d Decision, nodes []placement.PlanNode, shapes []placement.Shape, levels []topology.Level, outer int, slices []topology.Slice) Decision {
	what := topology.DescribeSlices(slices, levels)
	d.Slices = what
	if len(shapes) != 1 {
		d.SliceWhy = fmt.Sprintf("slices are checked for workloads of one pod set, this one has %d", len(shapes))
		d.Message = fmt.Sprintf("%s in %s: %s", d.Shapes, what, d.SliceWhy)
		return d
	}
	if err := topology.ValidateSlices(slices, max(outer, len(levels)-1), shapes[0].Count, levels); err != nil {
		d.SliceWhy = err.Error()
		d.Message = fmt.Sprintf("%s: %s", d.Shapes, err)
		return d
	}
	level, required := outer, outer >= 0
	if !required {
		level = slices[0].Level
	}
	plan, short := placement.ComputeSliced(nodes, shapes[0], level, required, slices)
	if short == nil {
		d.Fits, d.Domains = true, plan.Domains
		d.Message = fmt.Sprintf("%s fit in %s, in %s, now", d.Shapes, what, strings.Join(plan.Domains, ", "))
		return d
	}
	d.SliceShort, d.SliceWhy = short, short.Describe(levels, slices, shapes[0])
	d.Message = d.SliceWhy + d.freeNote()
	return d
}

// SliceLayers are a policy's slices as node labels (for a PodSet's Slices).
func SliceLayers(p topology.Policy, levels []topology.Level) []SliceLayer {
	var out []SliceLayer
	for _, s := range p.SliceLayers() {
		if s.Level < len(levels) {
			out = append(out, SliceLayer{Label: levels[s.Level].NodeLabel, Size: s.Size})
		}
	}
	return out
}
