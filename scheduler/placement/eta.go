package placement

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Release is room a running pod gives back at the latest when it ends: the pod's
// runtime bound (activeDeadlineSeconds, Kueue's max execution time) from its start.
type Release struct {
	At time.Time
	// Node indexes the nodes planned over.
	Node int
	// Frees is what the pod requests, in milli-units (the pods resource counting it).
	Frees map[corev1.ResourceName]int64
	// Owner names what gives the room back (a pod), for a forecast that may evict it
	// first ("": none).
	Owner string
}

// EarliestStart returns the earliest time a gang that does not fit now fits (Compute
// without spill, up to maxLevel) if the pods of releases end at their bounds and
// nothing else changes — EASY backfill's shadow time — and the plan it would have
// then. ok is false when the gang does not fit even once all of them have ended:
// room held by pods with no runtime bound stands in its way, and no time can be
// given. nodes are not changed. Cost: O(log releases) plans.
func EarliestStart(nodes []PlanNode, shapes []Shape, maxLevel int, releases []Release) (at time.Time, plan Plan, ok bool) {
	if len(releases) == 0 {
		return time.Time{}, Plan{}, false
	}
	sorted := append([]Release(nil), releases...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].At.Before(sorted[j].At) })
	after := func(k int) (Plan, bool) {
		freed := make([]PlanNode, len(nodes))
		copy(freed, nodes)
		cloned := map[int]bool{}
		for _, r := range sorted[:k] {
			if r.Node < 0 || r.Node >= len(freed) {
				continue
			}
			n := &freed[r.Node]
			if !cloned[r.Node] {
				free := make(map[corev1.ResourceName]int64, len(n.Free))
				for name, v := range n.Free {
					free[name] = v
				}
				n.Free, cloned[r.Node] = free, true
			}
			for name, v := range r.Frees {
				n.Free[name] += v
			}
		}
		p, _ := Compute(freed, shapes, maxLevel, false)
		return p, p.Fits
	}
	if _, fits := after(len(sorted)); !fits {
		return time.Time{}, Plan{}, false
	}
	// The smallest number of releases after which the gang fits; more room never
	// makes a fit fail, so the answer is a boundary a binary search finds.
	k := sort.Search(len(sorted), func(k int) bool {
		_, fits := after(k + 1)
		return fits
	})
	plan, _ = after(k + 1)
	return sorted[k].At, plan, true
}
