package placement

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// Consolidation: a gang (or a pod) that fits the free room of a domain in total but
// not in the pieces that room is in gets a whole place by moving running pods that
// may be moved — each evicted and recreated by its controller on another node, where
// the plan has checked its replacement fits. GangPreemption moves by these plans, and
// kubectl kubenexus explain prints the same plan as a dry run.

// Bin is a node as a consolidation plan sees it: its name and free room (in the
// units of the requests).
type Bin struct {
	Name string
	Free map[corev1.ResourceName]int64
}

// Want is a pod that needs a node: its requests and the bins it may run on.
type Want struct {
	Req      map[corev1.ResourceName]int64
	Eligible map[int]bool
}

// Movable is a running pod that may be evicted to be recreated elsewhere: the bin
// it runs on, its requests, the bins its replacement may run on, and what moving it
// throws away (Cost: GPU-seconds since its last checkpoint). Homes, when nil, is
// asked of HomesOf, only for the pods a plan moves (nil both: any bin).
type Movable struct {
	Bin     int
	Req     map[corev1.ResourceName]int64
	Homes   map[int]bool
	HomesOf func() map[int]bool
	Cost    float64
}

// homes are the bins m's replacement may run on.
func (m Movable) homes(bins []Bin) map[int]bool {
	switch {
	case m.Homes != nil:
		return m.Homes
	case m.HomesOf != nil:
		return m.HomesOf()
	}
	out := make(map[int]bool, len(bins))
	for b := range bins {
		out[b] = true
	}
	return out
}

// Move is a consolidation plan: the movables moved (indexes), the bin each one's
// replacement fits on, the bin of each want, and the cost of the moved.
type Move struct {
	Moved []int
	To    []int
	At    []int
	Cost  float64
}

// rehomeRounds bounds how often a plan is searched again without the movables
// whose replacements found no bin.
const rehomeRounds = 3

// tally is room per bin.
type tally map[int]map[corev1.ResourceName]int64

func (t tally) add(bin int, req map[corev1.ResourceName]int64, sign int64) {
	m := t[bin]
	if m == nil {
		m = map[corev1.ResourceName]int64{}
		t[bin] = m
	}
	for name, v := range req {
		m[name] += sign * v
	}
}

// Consolidate returns the plan that moves the fewest movables (then the cheapest)
// for every want to fit within one scope (nil scopes: the whole fleet), or nil.
// allow (nil: everything) says whether a set of movables may go together (their
// PodDisruptionBudgets). A scope whose free room in total is short of the wants is
// not searched: moving pods around cannot make room that is not there.
func Consolidate(bins []Bin, wants []Want, movables []Movable, scopes []map[int]bool, allow func([]int) bool) *Move {
	if len(wants) == 0 || len(movables) == 0 {
		return nil
	}
	if scopes == nil {
		scopes = []map[int]bool{nil}
	}
	var best *Move
	for _, scope := range scopes {
		m := consolidateIn(bins, wants, movables, scope, allow)
		if m != nil && (best == nil || len(m.Moved) < len(best.Moved) || len(m.Moved) == len(best.Moved) && m.Cost < best.Cost) {
			best = m
		}
	}
	return best
}

// consolidateIn plans within the bins of only (nil: all). Candidates are the
// movables on bins where evicting some of them makes room for the largest want,
// the bins that need the fewest first; they are added until the wants fit, then
// every one not needed is dropped; the moved must each fit elsewhere, or the
// search runs again without those that do not.
func consolidateIn(bins []Bin, wants []Want, movables []Movable, only map[int]bool, allow func([]int) bool) *Move {
	if !enoughInTotal(bins, wants, movables, only) {
		return nil
	}
	excluded := map[int]bool{}
	for range rehomeRounds {
		order := candidates(bins, wants, movables, only, excluded)
		picked, at := grow(bins, wants, movables, order, only, allow)
		if at == nil {
			return nil
		}
		to, homeless := rehome(bins, wants, movables, picked, at)
		if len(homeless) == 0 {
			m := &Move{Moved: picked, To: to, At: at}
			for _, i := range picked {
				m.Cost += movables[i].Cost
			}
			return m
		}
		for _, i := range homeless {
			excluded[i] = true
		}
	}
	return nil
}

// ShortInTotal reports whether the fleet's free room is short of every want's
// requests together: then no consolidation can place them.
func ShortInTotal(bins []Bin, wants []Want) bool {
	need, have := map[corev1.ResourceName]int64{}, map[corev1.ResourceName]int64{}
	for _, w := range wants {
		for name, v := range w.Req {
			need[name] += v
		}
	}
	for _, b := range bins {
		for name, v := range b.Free {
			have[name] += max(v, 0)
		}
	}
	for name, v := range need {
		if have[name] < v {
			return true
		}
	}
	return false
}

// enoughInTotal: the fleet's free room holds every want's requests together (the
// moved pods' replacements need room too: moving cannot make room that is not
// there), and so does the free room of the bins in only (nil: all) that some want
// may use, with what the movables there hold.
func enoughInTotal(bins []Bin, wants []Want, movables []Movable, only map[int]bool) bool {
	need := map[corev1.ResourceName]int64{}
	usable := map[int]bool{}
	for _, w := range wants {
		for name, v := range w.Req {
			need[name] += v
		}
		for b := range w.Eligible {
			if only == nil || only[b] {
				usable[b] = true
			}
		}
	}
	fleet, scope := map[corev1.ResourceName]int64{}, map[corev1.ResourceName]int64{}
	for b := range bins {
		for name, v := range bins[b].Free {
			if v <= 0 {
				continue
			}
			fleet[name] += v
			if usable[b] {
				scope[name] += v
			}
		}
	}
	for _, m := range movables {
		if usable[m.Bin] {
			for name, v := range m.Req {
				scope[name] += v
			}
		}
	}
	for name, v := range need {
		if fleet[name] < v || scope[name] < v {
			return false
		}
	}
	return true
}

// candidates orders the movables worth moving: those on bins in only where some
// want may run and where evicting them (largest first) makes room for the largest
// want, the bins that need the fewest evictions first, within a bin the largest
// first, then the cheapest.
func candidates(bins []Bin, wants []Want, movables []Movable, only map[int]bool, excluded map[int]bool) []int {
	largest := 0
	for i := range wants {
		if RequestSize(wants[i].Req) > RequestSize(wants[largest].Req) {
			largest = i
		}
	}
	big := wants[largest]
	onBin := map[int][]int{}
	for i, m := range movables {
		if excluded[i] || only != nil && !only[m.Bin] || !eligibleForAny(wants, m.Bin) {
			continue
		}
		onBin[m.Bin] = append(onBin[m.Bin], i)
	}
	need := map[int]int{}
	var order []int
	for b, ms := range onBin {
		if fitsIn(bins[b].Free, nil, nil, big.Req) {
			continue // its room is free already
		}
		sort.SliceStable(ms, func(x, y int) bool {
			a, c := movables[ms[x]], movables[ms[y]]
			if sa, sc := RequestSize(a.Req), RequestSize(c.Req); sa != sc {
				return sa > sc
			}
			return a.Cost < c.Cost
		})
		freed := map[corev1.ResourceName]int64{}
		for n, i := range ms {
			for name, v := range movables[i].Req {
				freed[name] += v
			}
			if fitsIn(bins[b].Free, freed, nil, big.Req) {
				need[b] = n + 1
				order = append(order, ms...)
				break
			}
		}
	}
	pos := map[int]int{}
	for p, i := range order {
		pos[i] = p
	}
	sort.SliceStable(order, func(x, y int) bool {
		bx, by := movables[order[x]].Bin, movables[order[y]].Bin
		if need[bx] != need[by] {
			return need[bx] < need[by]
		}
		if bins[bx].Name != bins[by].Name {
			return bins[bx].Name < bins[by].Name
		}
		return pos[order[x]] < pos[order[y]]
	})
	return order
}

func eligibleForAny(wants []Want, bin int) bool {
	for _, w := range wants {
		if w.Eligible[bin] {
			return true
		}
	}
	return false
}

// grow adds movables in order until the wants fit, then drops, last added first,
// every one the fit does not need.
func grow(bins []Bin, wants []Want, movables []Movable, order []int, only map[int]bool, allow func([]int) bool) ([]int, []int) {
	var picked, at []int
	for _, i := range order {
		next := append(append([]int(nil), picked...), i)
		if allow != nil && !allow(next) {
			continue
		}
		picked = next
		if at = fitWants(bins, wants, freedBy(movables, picked), only); at != nil {
			break
		}
	}
	if at == nil {
		return nil, nil
	}
	for i := len(picked) - 1; i >= 0 && len(picked) > 1; i-- {
		without := append(append([]int(nil), picked[:i]...), picked[i+1:]...)
		if a := fitWants(bins, wants, freedBy(movables, without), only); a != nil {
			picked, at = without, a
		}
	}
	return picked, at
}

func freedBy(movables []Movable, picked []int) tally {
	t := tally{}
	for _, i := range picked {
		t.add(movables[i].Bin, movables[i].Req, 1)
	}
	return t
}

// fitWants places every want, largest first, on the eligible bin in only that it
// leaves with the least room of its largest request (free plus freed less what
// wants placed before took); nil when one does not fit.
func fitWants(bins []Bin, wants []Want, freed tally, only map[int]bool) []int {
	order := make([]int, len(wants))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return RequestSize(wants[order[a]].Req) > RequestSize(wants[order[b]].Req) })
	used := tally{}
	out := make([]int, len(wants))
	for _, wi := range order {
		w := wants[wi]
		b := bestFit(bins, w.Req, w.Eligible, only, freed, used)
		if b < 0 {
			return nil
		}
		used.add(b, w.Req, 1)
		out[wi] = b
	}
	return out
}

// rehome finds a bin for each moved pod's replacement, largest first, in the room
// left once the wants are placed: it returns the bin of each and the movables that
// found none.
func rehome(bins []Bin, wants []Want, movables []Movable, picked, at []int) ([]int, []int) {
	freed := freedBy(movables, picked)
	used := tally{}
	for wi, b := range at {
		used.add(b, wants[wi].Req, 1)
	}
	order := append([]int(nil), picked...)
	sort.SliceStable(order, func(a, b int) bool { return RequestSize(movables[order[a]].Req) > RequestSize(movables[order[b]].Req) })
	to := map[int]int{}
	var homeless []int
	for _, i := range order {
		m := movables[i]
		b := bestFit(bins, m.Req, m.homes(bins), nil, freed, used)
		if b < 0 {
			homeless = append(homeless, i)
			continue
		}
		used.add(b, m.Req, 1)
		to[i] = b
	}
	out := make([]int, len(picked))
	for k, i := range picked {
		out[k] = to[i]
	}
	return out, homeless
}

// bestFit is the bin among eligible (and only, when set) where req fits the free
// room plus freed less used and leaves the least of its largest request; ties go
// to the first name. -1 when none.
func bestFit(bins []Bin, req map[corev1.ResourceName]int64, eligible, only map[int]bool, freed, used tally) int {
	best, bestLeft := -1, int64(0)
	var largest corev1.ResourceName
	for name, v := range req {
		if largest == "" || v > req[largest] || v == req[largest] && name < largest {
			largest = name
		}
	}
	for b := range eligible {
		if only != nil && !only[b] || !fitsIn(bins[b].Free, freed[b], used[b], req) {
			continue
		}
		left := bins[b].Free[largest] + freed[b][largest] - used[b][largest] - req[largest]
		if best < 0 || left < bestLeft || left == bestLeft && bins[b].Name < bins[best].Name {
			best, bestLeft = b, left
		}
	}
	return best
}

// fitsIn: req fits free plus freed less used.
func fitsIn(free, freed, used, req map[corev1.ResourceName]int64) bool {
	for name, v := range req {
		if free[name]+freed[name]-used[name] < v {
			return false
		}
	}
	return true
}

// RequestSize orders requests by size: the sum of their amounts (in their units,
// milli-units where the caller counts so).
func RequestSize(req map[corev1.ResourceName]int64) int64 {
	var n int64
	for _, v := range req {
		n += v
	}
	return n
}
