package placement

import (
	"slices"
	"sort"
	"strconv"
	"strings"
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
	// Held: the gang has no pods in the scheduler's queue yet — it waits for the
	// Admission of the forecast (Kueue's quota) and joins the queue when admitted,
	// behind every gang waiting there at its Priority or above.
	Held     bool
	Priority int32
	// Accumulates, when after the moment, is until when the gang's accumulating
	// ResourceReservation holds room for it as room frees (its TTL): at each
	// moment before then it is tried before every other gang and, when it does not
	// fit yet, keeps what free room its members could take, node by node, so that
	// the gangs tried after it do not take it.
	Accumulates time.Time
}

// Admission lets held gangs into the scheduler's queue as the forecast goes
// (Kueue's quota: feasibility.Quotas).
type Admission interface {
	// Admit is asked at each moment of the forecast, before the gangs waiting are
	// tried: the held gangs it admits at that moment, in the order admitted, each
	// planned as Gang says (its flavors are known once admitted).
	Admit(at time.Time) []Admitted
	// Evicts is what the preemptions of the last Admit evict: gangs of the queue
	// (started in the forecast or waiting) that are held again, and room running
	// pods give back at once.
	Evicts() Eviction
	// Started tells it gang i (held or not) started at that moment.
	Started(i int, at time.Time)
	// Next is the first moment after at when it frees room of its own (quota of
	// running workloads ending), false when none is known.
	Next(after time.Time) (time.Time, bool)
}

// Eviction is what an Admission's preemptions evict at one moment: Gangs go back to
// being held (the room of those started frees, their own releases are dropped);
// Frees is room of pods running now that frees at once, whose own releases (by
// Owner) are dropped.
type Eviction struct {
	Gangs []int
	Frees []Release
}

// Admitted is a held gang let into the queue: its index and how it is planned.
type Admitted struct {
	Index int
	Gang  Queued
}

// Forecast is when a gang would start behind the gangs queued ahead of it.
type Forecast struct {
	// OK: it starts at Start, in Plan, after the gangs ahead Started names have
	// started (in the order they start). Not OK: it never fits in the forecast —
	// room held with no known end stands in its way.
	OK      bool
	Start   time.Time
	Plan    Plan
	Started []string
	// Unbounded names the gangs ahead that started before it with no runtime
	// bound: they hold their room for the rest of the forecast.
	Unbounded []string
	// Admitted is when a held gang is admitted (zero: it was not held, or never is).
	Admitted time.Time
}

// maxForecastSteps bounds the events a forecast plays (releases and starts).
const maxForecastSteps = 10000

// StartInQueue forecasts when target starts if it waits behind ahead (in the
// scheduler's queue order) from now: pods running now end at their releases, and at
// each moment room frees, every gang still waiting is tried in queue order and the
// ones that fit start (a gang that does not fit does not hold back the ones behind
// it, as KubeNexus's queue does not), taking the room of their plan until their
// runtime ends. free is each node's free room now; every gang's Nodes list the same
// nodes in the same order. Cost: a gang is planned (Compute) only when one domain of
// its level has the room it asks for in total, which the forecast keeps per domain
// as room frees and is taken; otherwise each moment costs O(gangs × domains).
func StartInQueue(free []map[corev1.ResourceName]int64, releases []Release, ahead []Queued, target Queued, adm Admission, now time.Time) Forecast {
	queue := make([]Queued, 0, len(ahead)+1)
	queue = append(append(queue, ahead...), target)
	var f Forecast
	admitted := play(free, releases, queue, adm, now, func(i int, at time.Time, plan Plan, bounded bool) bool {
		if i == len(ahead) {
			f.OK, f.Start, f.Plan = true, at, plan
			return true
		}
		f.Started = append(f.Started, queue[i].Name)
		if !bounded {
			f.Unbounded = append(f.Unbounded, queue[i].Name)
		}
		return false
	})
	f.Admitted = admitted[len(ahead)]
	return f
}

// Start is when one gang of a queue starts in the forecast.
type Start struct {
	// OK: it starts At, in Plan, after Before of the gangs queued ahead of it have
	// started. Not OK: it never starts in the forecast; Unbounded names the gangs
	// that started with no runtime bound and hold their room for good.
	OK        bool
	At        time.Time
	Plan      Plan
	Before    int
	Unbounded []string
	// Admitted is when a held gang is admitted (zero: it was not held, or never is).
	Admitted time.Time
}

// ForecastQueue forecasts when every gang of queue (in the scheduler's queue order)
// starts, in one pass: StartInQueue for each gang at the cost of one.
func ForecastQueue(free []map[corev1.ResourceName]int64, releases []Release, queue []Queued, adm Admission, now time.Time) []Start {
	out := make([]Start, len(queue))
	started := make([]bool, len(queue))
	var unbounded []string
	admitted := play(free, releases, queue, adm, now, func(i int, at time.Time, plan Plan, bounded bool) bool {
		ahead := 0
		for j := 0; j < i; j++ {
			if started[j] {
				ahead++
			}
		}
		started[i] = true
		out[i] = Start{OK: true, At: at, Plan: plan, Before: ahead}
		if !bounded {
			unbounded = append(unbounded, queue[i].Name)
		}
		return false
	})
	for i := range out {
		out[i].Admitted = admitted[i]
		if !out[i].OK {
			out[i].Unbounded = unbounded
		}
	}
	return out
}

// play runs a forecast: from now, at each moment room frees, the held gangs adm
// admits join the queue (and the gangs and pods its preemptions evict give their
// room back), then every gang still waiting is tried in queue order; each that fits
// starts (started is told its index, the moment, its plan and whether it has a
// runtime bound — once per gang; it returns true to stop the forecast) and holds its
// plan's room until its runtime ends, for good with no bound. It returns when each
// held gang was first admitted (zero: never, or not held).
func play(free []map[corev1.ResourceName]int64, releases []Release, queue []Queued, adm Admission, now time.Time, started func(i int, at time.Time, plan Plan, bounded bool) bool) []time.Time {
	if len(queue) == 0 {
		return nil
	}
	p := &player{queue: queue, adm: adm, fc: newForecaster(free, queue[len(queue)-1].Nodes), admitted: make([]time.Time, len(queue)),
		isHeld: make([]bool, len(queue)), once: make([]bool, len(queue)), running: map[int]map[string]map[corev1.ResourceName]int64{},
		events: append([]Release(nil), releases...), holds: map[int]map[int]map[corev1.ResourceName]int64{}}
	for i := range queue {
		if queue[i].Accumulates.After(now) {
			// The moment its hold lapses is one to play: the room goes back.
			p.events = append(p.events, Release{At: queue[i].Accumulates, Node: -1})
			p.accumulates = true
		}
		if queue[i].Held && adm != nil {
			p.held++
			p.isHeld[i] = true
			continue
		}
		if !queue[i].Held {
			p.waiting = append(p.waiting, playEntry{i, p.fc.gang(&queue[i])})
		}
	}
	t := now
	for steps := 0; steps < maxForecastSteps && len(p.waiting)+p.held > 0; steps++ {
		// Apply every release due by t.
		sort.SliceStable(p.events, func(i, j int) bool { return p.events[i].At.Before(p.events[j].At) })
		k := 0
		for k < len(p.events) && !p.events[k].At.After(t) {
			p.fc.add(p.events[k].Node, p.events[k].Frees, 1)
			k++
		}
		p.events = p.events[k:]
		if p.held > 0 {
			admits := adm.Admit(t)
			p.evict(adm.Evicts())
			p.admit(admits, t)
		}
		if p.tryWaiting(t, started) {
			return p.admitted
		}
		next, ok := p.next(t)
		if !ok {
			return p.admitted // nothing more frees: the gangs left never fit
		}
		t = next
	}
	return p.admitted
}

// player is the state of one forecast.
type player struct {
	queue []Queued
	adm   Admission
	fc    *forecaster
	// waiting are the gangs waiting in queue order; held counts the gangs the
	// Admission holds (isHeld); once marks the gangs started already (one evicted
	// that starts again is not reported again); admitted is when each held gang was
	// first admitted.
	waiting  []playEntry
	held     int
	isHeld   []bool
	once     []bool
	admitted []time.Time
	// running are the claims of the gangs started in the forecast, by index (an
	// eviction gives them back); their own releases are owned by gangOwner.
	running map[int]map[string]map[corev1.ResourceName]int64
	events  []Release
	// holds are the room accumulating gangs keep (gang index → node → room);
	// accumulates says some gang of the queue has a reservation accumulating.
	holds       map[int]map[int]map[corev1.ResourceName]int64
	accumulates bool
}

type playEntry struct {
	i int
	g *queuedGang
}

// evict gives back the room of what a preemption evicted, drops the releases that
// no longer come, and holds the evicted gangs again.
func (p *player) evict(ev Eviction) {
	if len(ev.Gangs)+len(ev.Frees) == 0 {
		return
	}
	dropped := map[string]bool{}
	for _, r := range ev.Frees {
		p.fc.add(r.Node, r.Frees, 1)
		dropped[r.Owner] = true
	}
	for _, i := range ev.Gangs {
		if i < 0 || i >= len(p.queue) {
			continue
		}
		if claims, ok := p.running[i]; ok {
			for name, c := range claims {
				if n, ok := p.fc.index[name]; ok {
					p.fc.add(n, c, 1)
				}
			}
			delete(p.running, i)
			dropped[gangOwner(i)] = true
		} else if k := slices.IndexFunc(p.waiting, func(e playEntry) bool { return e.i == i }); k >= 0 {
			p.release(i)
			p.waiting = slices.Delete(p.waiting, k, k+1)
		} else {
			continue // held already
		}
		p.held++
		p.isHeld[i] = true
	}
	p.events = slices.DeleteFunc(p.events, func(r Release) bool { return r.Owner != "" && dropped[r.Owner] })
}

// admit puts the held gangs admitted at t in the queue, behind the gangs waiting at
// their priority or above (their pods are created now).
func (p *player) admit(admits []Admitted, t time.Time) {
	for _, a := range admits {
		if a.Index < 0 || a.Index >= len(p.queue) || !p.isHeld[a.Index] {
			continue
		}
		p.held--
		p.isHeld[a.Index] = false
		if p.admitted[a.Index].IsZero() {
			p.admitted[a.Index] = t
		}
		g := a.Gang
		at := len(p.waiting)
		for at > 0 && p.queue[p.waiting[at-1].i].Priority < p.queue[a.Index].Priority {
			at--
		}
		p.waiting = slices.Insert(p.waiting, at, playEntry{a.Index, p.fc.gang(&g)})
	}
}

// tryWaiting tries the waiting gangs at t — those whose reservation accumulates
// first, then the rest in queue order; true when started asks the forecast to stop.
func (p *player) tryWaiting(t time.Time, started func(i int, at time.Time, plan Plan, bounded bool) bool) bool {
	if !p.accumulates {
		left := p.waiting[:0]
		defer func() { p.waiting = left }()
		for _, e := range p.waiting {
			began, stop := p.try(e, t, started)
			if stop {
				return true
			}
			if !began {
				left = append(left, e)
			}
		}
		return false
	}
	order := make([]playEntry, 0, len(p.waiting))
	for _, first := range []bool{true, false} {
		for _, e := range p.waiting {
			if e.g.Accumulates.After(t) == first {
				order = append(order, e)
			}
		}
	}
	// The holds are made again in this pass: a gang whose reservation lapsed
	// gives its room back before any gang is tried.
	for i := range p.holds {
		p.release(i)
	}
	began := map[int]bool{}
	defer func() {
		p.waiting = slices.DeleteFunc(p.waiting, func(e playEntry) bool { return began[e.i] })
	}()
	for _, e := range order {
		ok, stop := p.try(e, t, started)
		if stop {
			return true
		}
		began[e.i] = ok
		if !ok && e.g.Accumulates.After(t) {
			p.hold(e)
		}
	}
	return false
}

// try starts gang e at t when it fits (began); stop when started asks the
// forecast to stop.
func (p *player) try(e playEntry, t time.Time, started func(i int, at time.Time, plan Plan, bounded bool) bool) (began, stop bool) {
	plan, fits := p.fc.tryStart(e.g)
	if !fits {
		return false, false
	}
	bounded := e.g.Runtime > 0
	if p.adm != nil {
		p.adm.Started(e.i, t)
	}
	if !p.once[e.i] {
		p.once[e.i] = true
		if started(e.i, t, plan, bounded) {
			return true, true
		}
	}
	p.running[e.i] = plan.Claims
	if !bounded {
		return true, false
	}
	for name, claims := range plan.Claims {
		if n, ok := p.fc.index[name]; ok {
			p.events = append(p.events, Release{At: t.Add(e.g.Runtime), Node: n, Frees: claims, Owner: gangOwner(e.i)})
		}
	}
	return true, false
}

// hold keeps, for an accumulating gang that does not fit yet, the free room its
// members could take: member by member, on the first node (in the gang's node
// order) that may run it and has the room, as the reservation's slots are assigned.
func (p *player) hold(e playEntry) {
	held := map[int]map[corev1.ResourceName]int64{}
	for s, sh := range e.g.Shapes {
		for range sh.Count {
			for n := range e.g.Nodes {
				node := &e.g.Nodes[n]
				if n >= len(p.fc.room) || s < len(node.Eligible) && !node.Eligible[s] || !covers(p.fc.room[n], sh.Requests) {
					continue
				}
				p.fc.add(n, sh.Requests, -1)
				if held[n] == nil {
					held[n] = map[corev1.ResourceName]int64{}
				}
				for name, v := range sh.Requests {
					held[n][name] += v
				}
				break
			}
		}
	}
	if len(held) > 0 {
		p.holds[e.i] = held
	}
}

// release gives back the room gang i holds.
func (p *player) release(i int) {
	for n, r := range p.holds[i] {
		p.fc.add(n, r, 1)
	}
	delete(p.holds, i)
}

// covers reports whether free holds every request.
func covers(free, req map[corev1.ResourceName]int64) bool {
	for name, v := range req {
		if free[name] < v {
			return false
		}
	}
	return true
}

// next is the first moment after t when room or quota frees.
func (p *player) next(t time.Time) (time.Time, bool) {
	next, ok := time.Time{}, false
	for _, e := range p.events {
		if !ok || e.At.Before(next) {
			next, ok = e.At, true
		}
	}
	if p.held > 0 {
		if at, quota := p.adm.Next(t); quota && (!ok || at.Before(next)) {
			next, ok = at, true
		}
	}
	return next, ok
}

// gangOwner owns the releases of gang i's room in a forecast.
func gangOwner(i int) string { return "\x00gang/" + strconv.Itoa(i) }

// forecaster is the room of a forecast: per node, and per domain of each layout of
// domains the gangs are planned at (domainTotals).
type forecaster struct {
	room    []map[corev1.ResourceName]int64
	index   map[string]int
	layouts map[string]*domainTotals
}

// domainTotals is the free room per domain of one level, for the gangs planned at it.
type domainTotals struct {
	of   []int // domain of each node (-1: none)
	free []map[corev1.ResourceName]int64
}

// queuedGang is a gang of the forecast with what it asks for in total and the
// domains its level divides the nodes into.
type queuedGang struct {
	*Queued
	need    map[corev1.ResourceName]int64
	domains *domainTotals
}

func newForecaster(free []map[corev1.ResourceName]int64, nodes []PlanNode) *forecaster {
	fc := &forecaster{room: make([]map[corev1.ResourceName]int64, len(free)), index: make(map[string]int, len(nodes)), layouts: map[string]*domainTotals{}}
	for i, f := range free {
		fc.room[i] = make(map[corev1.ResourceName]int64, len(f))
		for k, v := range f {
			fc.room[i][k] = v
		}
	}
	for i := range nodes {
		fc.index[nodes[i].Name] = i
	}
	return fc
}

// gang prepares q: its total ask and the totals of its level's domains (shared with
// every gang whose level divides the nodes alike).
func (fc *forecaster) gang(q *Queued) *queuedGang {
	g := &queuedGang{Queued: q, need: map[corev1.ResourceName]int64{}}
	for _, sh := range q.Shapes {
		for name, v := range sh.Requests {
			g.need[name] += v * int64(sh.Count)
		}
	}
	// Each node's domain of the gang's level; where a node has none (or the level
	// is past the last), the whole cluster is the one domain checked: its room is
	// what any plan of the gang can use.
	names := make([]string, len(q.Nodes))
	for i := range q.Nodes {
		d := q.Nodes[i].Domains
		if q.MaxLevel >= len(d) || d[q.MaxLevel] == "" {
			names = nil
			break
		}
		names[i] = d[q.MaxLevel]
	}
	if names == nil {
		names = make([]string, len(q.Nodes))
		for i := range names {
			names[i] = AnyDomain
		}
	}
	key := strings.Join(names, "\x00")
	if dt, ok := fc.layouts[key]; ok {
		g.domains = dt
		return g
	}
	dt := &domainTotals{of: make([]int, len(names))}
	ids := map[string]int{}
	for i, name := range names {
		if i >= len(fc.room) {
			dt.of[i] = -1
			continue
		}
		id, ok := ids[name]
		if !ok {
			id = len(dt.free)
			ids[name] = id
			dt.free = append(dt.free, map[corev1.ResourceName]int64{})
		}
		dt.of[i] = id
		for k, v := range fc.room[i] {
			dt.free[id][k] += v
		}
	}
	fc.layouts[key] = dt
	g.domains = dt
	return g
}

// add changes node n's room by sign × frees, and its domains' totals.
func (fc *forecaster) add(n int, frees map[corev1.ResourceName]int64, sign int64) {
	if n < 0 || n >= len(fc.room) {
		return
	}
	for name, v := range frees {
		fc.room[n][name] += sign * v
	}
	for _, dt := range fc.layouts {
		if d := dt.of[n]; d >= 0 {
			for name, v := range frees {
				dt.free[d][name] += sign * v
			}
		}
	}
}

// roomy reports whether some domain of g's level has, in total, the room g asks for.
func (g *queuedGang) roomy() bool {
	for _, free := range g.domains.free {
		fits := true
		for name, v := range g.need {
			if v > free[name] {
				fits = false
				break
			}
		}
		if fits {
			return true
		}
	}
	return false
}

// tryStart plans g on the room free now and, when it fits, takes its claims.
func (fc *forecaster) tryStart(g *queuedGang) (Plan, bool) {
	if !g.roomy() {
		return Plan{}, false
	}
	nodes := make([]PlanNode, len(g.Nodes))
	copy(nodes, g.Nodes)
	for i := range nodes {
		nodes[i].Free = nil
		if i < len(fc.room) {
			nodes[i].Free = fc.room[i]
		}
	}
	plan, _ := Compute(nodes, g.Shapes, g.MaxLevel, false)
	if !plan.Fits {
		return plan, false
	}
	for name, claims := range plan.Claims {
		if i, ok := fc.index[name]; ok {
			fc.add(i, claims, -1)
		}
	}
	return plan, true
}
