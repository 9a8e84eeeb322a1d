package feasibility

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/kube-nexus/kubenexus/scheduler/placement"
)

// ConsolidationSettings are GangPreemption's consolidation settings in the
// KubeNexusConfig (spec.plugins.gangPreemption.consolidation), defaulted.
type ConsolidationSettings struct {
	Enabled, CheckpointedPods bool
	MaxEvictionsPerGang       int32
}

// DefaultConsolidation is what the scheduler does with no settings.
var DefaultConsolidation = ConsolidationSettings{Enabled: true, MaxEvictionsPerGang: 4}

// Consolidation is a dry run of GangPreemption's consolidation for a workload: the
// pods it would move, where the workload would then go, and the GPU time lost.
type Consolidation struct {
	Moved []*corev1.Pod
	// Domains are the domains of the workload's required level its pods would run
	// in (Level is Anywhere without one).
	Level    string
	Domains  []string
	GPUHours float64
}

// Consolidate plans, as GangPreemption would (placement.Consolidate), the fewest
// movers (pods that may move; cost: the GPU-seconds each would lose) to move for
// every pod of the workload to fit in one piece, within one domain of the level it
// requires; nil when no such plan exists. PodDisruptionBudgets are not read.
func Consolidate(c *Cluster, w *Workload, movers []*corev1.Pod, cost func(*corev1.Pod) float64) *Consolidation {
	levels, maxLevel, levelName := c.levelsFor(w)
	shapes, pods := c.shapesOf(w)
	vram := vramOf(pods)
	placedOn := map[string]bool{}
	for _, n := range w.PlacedOn {
		placedOn[n] = true
	}
	tiers := c.tierSet()
	nodes := make([]placement.PlanNode, len(c.Nodes))
	bins := make([]placement.Bin, len(c.Nodes))
	byName := map[string]int{}
	for i := range c.Nodes {
		nodes[i], _ = c.planNode(&c.Nodes[i], w, pods, vram, levels, tiers, placedOn)
		bins[i] = placement.Bin{Name: c.Nodes[i].Name, Free: nodes[i].Free}
		byName[c.Nodes[i].Name] = i
	}
	var wants []placement.Want
	for j, sh := range shapes {
		eligible := map[int]bool{}
		for i := range nodes {
			if nodes[i].Eligible[j] {
				eligible[i] = true
			}
		}
		for range sh.Count {
			wants = append(wants, placement.Want{Req: sh.Requests, Eligible: eligible})
		}
	}
	var ms []placement.Movable
	var movedPods []*corev1.Pod
	for _, p := range movers {
		b, ok := byName[p.Spec.NodeName]
		if !ok {
			continue
		}
		req := map[corev1.ResourceName]int64{corev1.ResourcePods: 1000}
		for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
			req[name] = q.MilliValue()
		}
		homes := map[int]bool{}
		for i := range c.Nodes {
			if !c.Nodes[i].Spec.Unschedulable && placement.Eligible(p, &c.Nodes[i]) {
				homes[i] = true
			}
		}
		ms = append(ms, placement.Movable{Bin: b, Req: req, Homes: homes, Cost: cost(p)})
		movedPods = append(movedPods, p)
	}
	plan := placement.Consolidate(bins, wants, ms, scopesOf(nodes, maxLevel, levelName, anchoredDomain(nodes, maxLevel, levelName)), nil)
	if plan == nil {
		return nil
	}
	out := &Consolidation{Level: levelName, GPUHours: plan.Cost / 3600}
	for _, i := range plan.Moved {
		out.Moved = append(out.Moved, movedPods[i])
	}
	seen := map[string]bool{}
	for _, b := range plan.At {
		if d := nodes[b].Domain(maxLevel); !seen[d] && levelName != Anywhere {
			seen[d] = true
			out.Domains = append(out.Domains, d)
		}
	}
	sort.Strings(out.Domains)
	return out
}

// scopesOf are the node sets, one per domain of level, a workload that requires
// that level is placed within (only anchored, when its placed members are in one);
// nil without a required level.
func scopesOf(nodes []placement.PlanNode, level int, levelName, anchored string) []map[int]bool {
	if levelName == Anywhere {
		return nil
	}
	byDomain := map[string]map[int]bool{}
	var names []string
	for i := range nodes {
		d := nodes[i].Domain(level)
		if d == "" || anchored != "" && d != anchored {
			continue
		}
		if byDomain[d] == nil {
			byDomain[d] = map[int]bool{}
			names = append(names, d)
		}
		byDomain[d][i] = true
	}
	sort.Strings(names)
	out := make([]map[int]bool, 0, len(names))
	for _, d := range names {
		out = append(out, byDomain[d])
	}
	return out
}
