package feasibility

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-nexus/kubenexus/api/hardware"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
)

// Ahead is a workload queued ahead of another: its pods as a Workload and how long
// it runs once started (0: no runtime bound is known).
type Ahead struct {
	Name     string
	Workload *Workload
	Runtime  time.Duration
	// Priority is its place in the scheduler's queue; Quota, for a Kueue Workload
	// waiting for quota, what it asks of Kueue (the gang joins the queue once the
	// forecast's Quotas admit it, planned on the flavors they assign).
	Priority int32
	Quota    *QuotaWorkload
}

// Forecast says when w would start if it waits behind ahead (in the scheduler's
// queue order) from now: running pods end at their runtime bounds and reservations of
// others at their expiry; each gang ahead starts when it fits and holds its room for
// its runtime (placement.StartInQueue). Every workload is planned as Decide plans it
// in the one domain of its required level; slices and sub-groups are not forecast
// (their gang's domain is).
func (c *Cluster) Forecast(w *Workload, ahead []Ahead, now time.Time) placement.Forecast {
	tiers := c.tierSet()
	target := c.queued("", w, 0, tiers)
	free := make([]map[corev1.ResourceName]int64, len(target.Nodes))
	for i := range target.Nodes {
		free[i] = target.Nodes[i].Free
	}
	ends, expiries := c.releases(target.Nodes, w)
	queue := make([]placement.Queued, 0, len(ahead))
	for _, a := range ahead {
		queue = append(queue, c.queued(a.Name, a.Workload, a.Runtime, tiers))
	}
	return placement.StartInQueue(free, append(ends, expiries...), queue, target, nil, now)
}

// ForecastQueue forecasts when each workload of queue (in the scheduler's queue
// order) starts from now, in one pass (placement.ForecastQueue), each planned as
// Forecast plans it. The room reservations hold counts as held for every workload
// until the reservation expires, its own gang's too (Forecast gives a gang its own).
//
// quotas (nil: none) plays Kueue's quota beside it: the queue's held workloads
// (Quota set) start only once admitted.
func (c *Cluster) ForecastQueue(queue []Ahead, quotas *Quotas, now time.Time) []placement.Start {
	tiers := c.tierSet()
	neutral := &Workload{}
	nodes := make([]placement.PlanNode, len(c.Nodes))
	free := make([]map[corev1.ResourceName]int64, len(c.Nodes))
	for i := range c.Nodes {
		free[i] = c.freeFor(&c.Nodes[i], neutral)
		nodes[i].Name = c.Nodes[i].Name
	}
	ends, expiries := c.releases(nodes, neutral)
	gangs := make([]placement.Queued, 0, len(queue))
	for _, a := range queue {
		if a.Quota != nil && quotas != nil {
			// Held until Kueue admits it: planned then, on the flavors assigned.
			gangs = append(gangs, placement.Queued{Name: a.Name, Nodes: nodes, Held: true, Priority: a.Priority})
			continue
		}
		q := c.queued(a.Name, a.Workload, a.Runtime, tiers)
		q.Priority = a.Priority
		gangs = append(gangs, q)
	}
	var adm placement.Admission
	if quotas != nil {
		index := make(map[string]int, len(nodes))
		for i := range nodes {
			index[nodes[i].Name] = i
		}
		adm = quotas.Admission(func(i int, w *QuotaWorkload) placement.Queued {
			a := queue[i]
			planned := a.Workload
			if len(w.Flavors) > 0 {
				planned = planned.onFlavors(w.Flavors)
			}
			q := c.queued(a.Name, planned, a.Runtime, tiers)
			q.Priority = a.Priority
			return q
		}, func(name string) (int, bool) {
			i, ok := index[name]
			return i, ok
		})
	}
	return placement.ForecastQueue(free, append(ends, expiries...), gangs, adm, now)
}

// queued is w as the forecast plans it: the nodes as it sees them (its free room
// included), its shapes and the level that holds it.
func (c *Cluster) queued(name string, w *Workload, runtime time.Duration, tiers *hardware.TierSet) placement.Queued {
	levels, maxLevel, _ := c.levelsFor(w)
	shapes, nodes, _, _ := c.view(w, levels, tiers)
	q := placement.Queued{Name: name, Nodes: nodes, Shapes: shapes, MaxLevel: maxLevel, Runtime: runtime}
	if w.Gang != nil {
		q.Accumulates = c.Accumulating[*w.Gang]
	}
	return q
}

// onFlavors is w with every pod set on the ResourceFlavors given.
func (w *Workload) onFlavors(flavors []string) *Workload {
	out := *w
	out.PodSets = append([]PodSet(nil), w.PodSets...)
	for i := range out.PodSets {
		out.PodSets[i].Flavors = flavors
	}
	return &out
}
