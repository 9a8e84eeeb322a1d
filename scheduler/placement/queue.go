package placement

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Queued is a gang waiting in the scheduler's queue: the nodes as it sees them (its
// domains and the shapes each node may take; Free is ignored — the forecast keeps
// one free room for every gang), its shapes, the level whose one domain must hold it
// (Compute's maxLevel) and how long it runs once started (0: no bound is known — once
// started it holds its room for good).
type Queued struct {
	Name     string
	Nodes    []PlanNode
	Shapes   []Shape
	MaxLevel int
	Runtime  time.Duration
}

// Forecast is when a gang would start behind the gangs queued ahead of it.
type Forecast struct {
	// OK: it starts at Start, in Plan, after Ahead of the gangs ahead have started
	// (Started names them, in the order they start). Not OK: it never fits in the
	// forecast — room held with no known end stands in its way.
	OK      bool
	Start   time.Time
	Plan    Plan
	Ahead   int
	Started []string
	// Unbounded names the gangs ahead that started before it with no runtime
	// bound: they hold their room for the rest of the forecast.
	Unbounded []string
}

// maxForecastSteps bounds the events a forecast plays (releases and starts).
const maxForecastSteps = 10000

// StartInQueue forecasts when target starts if it waits behind ahead (in the
// scheduler's queue order) from now: pods running now end at their releases, and at
// each moment room frees, every gang still waiting is tried in queue order and the
// ones that fit start (a gang that does not fit does not hold back the ones behind
// it, as KubeNexus's queue does not), taking the room of their plan until their
// runtime ends. free is each node's free room now; every gang's Nodes list the same
// nodes in the same order. Cost: each event tries every waiting gang once —
// O(events × gangs × plan).
func StartInQueue(free []map[corev1.ResourceName]int64, releases []Release, ahead []Queued, target Queued, now time.Time) Forecast {
	room := make([]map[corev1.ResourceName]int64, len(free))
	for i, f := range free {
		room[i] = make(map[corev1.ResourceName]int64, len(f))
		for k, v := range f {
			room[i][k] = v
		}
	}
	index := make(map[string]int, len(target.Nodes))
	for i := range target.Nodes {
		index[target.Nodes[i].Name] = i
	}
	events := append([]Release(nil), releases...)
	waiting := make([]*Queued, 0, len(ahead)+1)
	for i := range ahead {
		waiting = append(waiting, &ahead[i])
	}
	waiting = append(waiting, &target)
	var f Forecast
	t := now
	for steps := 0; steps < maxForecastSteps; steps++ {
		// Apply every release due by t.
		sort.SliceStable(events, func(i, j int) bool { return events[i].At.Before(events[j].At) })
		k := 0
		for k < len(events) && !events[k].At.After(t) {
			if n := events[k].Node; n >= 0 && n < len(room) {
				for name, v := range events[k].Frees {
					room[n][name] += v
				}
			}
			k++
		}
		events = events[k:]
		// Try the waiting gangs in queue order.
		left := waiting[:0]
		for _, g := range waiting {
			plan, fits := tryStart(g, room, index)
			if !fits {
				left = append(left, g)
				continue
			}
			if g == &target {
				f.OK, f.Start, f.Plan = true, t, plan
				return f
			}
			f.Ahead++
			f.Started = append(f.Started, g.Name)
			if g.Runtime <= 0 {
				f.Unbounded = append(f.Unbounded, g.Name)
				continue
			}
			for name, claims := range plan.Claims {
				if i, ok := index[name]; ok {
					events = append(events, Release{At: t.Add(g.Runtime), Node: i, Frees: claims})
				}
			}
		}
		waiting = left
		if len(events) == 0 {
			return f // nothing more frees: the target never fits
		}
		t = events[0].At
		for _, e := range events {
			if e.At.Before(t) {
				t = e.At
			}
		}
	}
	return f
}

// tryStart plans g on the room free now and, when it fits, takes its claims.
func tryStart(g *Queued, room []map[corev1.ResourceName]int64, index map[string]int) (Plan, bool) {
	nodes := make([]PlanNode, len(g.Nodes))
	copy(nodes, g.Nodes)
	for i := range nodes {
		if i < len(room) {
			nodes[i].Free = room[i]
		} else {
			nodes[i].Free = nil
		}
	}
	plan, _ := Compute(nodes, g.Shapes, g.MaxLevel, false)
	if !plan.Fits {
		return plan, false
	}
	for name, claims := range plan.Claims {
		if i, ok := index[name]; ok && i < len(room) {
			for res, v := range claims {
				room[i][res] -= v
			}
		}
	}
	return plan, true
}
