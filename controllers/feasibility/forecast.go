package feasibility

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-nexus/kubenexus/scheduler/placement"
)

// Ahead is a workload queued ahead of another: its pods as a Workload and how long
// it runs once started (0: no runtime bound is known).
type Ahead struct {
	Name     string
	Workload *Workload
	Runtime  time.Duration
}

// Forecast says when w would start if it waits behind ahead (in the scheduler's
// queue order) from now: running pods end at their runtime bounds and reservations of
// others at their expiry; each gang ahead starts when it fits and holds its room for
// its runtime (placement.StartInQueue). Every workload is planned as Decide plans it
// in the one domain of its required level; slices and sub-groups are not forecast
// (their gang's domain is).
func (c *Cluster) Forecast(w *Workload, ahead []Ahead, now time.Time) placement.Forecast {
	target, free, releases := c.queued("", w, 0, true)
	queue := make([]placement.Queued, 0, len(ahead))
	for _, a := range ahead {
		q, _, _ := c.queued(a.Name, a.Workload, a.Runtime, false)
		queue = append(queue, q)
	}
	return placement.StartInQueue(free, releases, queue, target, now)
}

// queued is w as the forecast plans it: the nodes as it sees them, its shapes and
// the level that holds it; with room, also each node's free room for it and what
// frees room later (bounded pods ending, others' reservations expiring).
func (c *Cluster) queued(name string, w *Workload, runtime time.Duration, room bool) (q placement.Queued, free []map[corev1.ResourceName]int64, releases []placement.Release) {
	levels, maxLevel, _ := c.levelsFor(w)
	tiers := c.tierSet()
	shapes, pods := c.shapesOf(w)
	vram := vramOf(pods)
	placedOn := map[string]bool{}
	for _, n := range w.PlacedOn {
		placedOn[n] = true
	}
	nodes := make([]placement.PlanNode, len(c.Nodes))
	for i := range c.Nodes {
		nodes[i], _ = c.planNode(&c.Nodes[i], w, pods, vram, levels, tiers, placedOn)
	}
	q = placement.Queued{Name: name, Nodes: nodes, Shapes: shapes, MaxLevel: maxLevel, Runtime: runtime}
	if !room {
		return q, nil, nil
	}
	free = make([]map[corev1.ResourceName]int64, len(nodes))
	for i := range nodes {
		free[i] = nodes[i].Free
	}
	ends, expiries := c.releases(nodes, w)
	return q, free, append(ends, expiries...)
}
