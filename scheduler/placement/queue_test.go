package placement

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestStartInQueue(t *testing.T) {
	const zone = 2
	t0 := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	nodes, free, releases := twoFullNodes(t0)
	gang := func(name string, members int, runtime time.Duration) Queued {
		return Queued{Name: name, Nodes: nodes, Shapes: []Shape{gpuMembers(members, 8)}, MaxLevel: zone, Runtime: runtime}
	}
	target := gang("target", 1, time.Hour)
	for _, tc := range []struct {
		name          string
		ahead         []Queued
		ok            bool
		start         time.Duration
		started, held []string
	}{
		{"nothing ahead: the first room that frees", nil, true, 10 * time.Minute, nil, nil},
		{"one gang ahead takes the first room for 30 minutes: the second room", []Queued{gang("a", 1, 30*time.Minute)}, true, 20 * time.Minute, []string{"a"}, nil},
		{"two gangs ahead take both rooms: when the first of them ends",
			[]Queued{gang("a", 1, 30*time.Minute), gang("b", 1, time.Hour)}, true, 40 * time.Minute, []string{"a", "b"}, nil},
		{"a gang ahead that fits nowhere does not hold the queue back", []Queued{gang("huge", 3, time.Hour)}, true, 10 * time.Minute, nil, nil},
		{"gangs ahead with no runtime bound hold the room for good: no start",
			[]Queued{gang("a", 1, 0), gang("b", 1, 0)}, false, 0, []string{"a", "b"}, []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := StartInQueue(free, releases, tc.ahead, target, nil, t0)
			if f.OK != tc.ok || (tc.ok && !f.Start.Equal(t0.Add(tc.start))) {
				t.Fatalf("forecast %v at %v, want %v at +%v", f.OK, f.Start.Sub(t0), tc.ok, tc.start)
			}
			if !slices.Equal(f.Started, tc.started) || !slices.Equal(f.Unbounded, tc.held) {
				t.Errorf("started %v (%d), unbounded %v; want %v, %v", f.Started, len(f.Started), f.Unbounded, tc.started, tc.held)
			}
			if free[0][gpu] != 0 || free[1][gpu] != 0 {
				t.Errorf("the forecast changed the free room it was given: %v", free)
			}
		})
	}
}

func TestForecastQueue(t *testing.T) {
	const zone = 2
	t0 := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	nodes, free, releases := twoFullNodes(t0)
	gang := func(name string, members int, runtime time.Duration) Queued {
		return Queued{Name: name, Nodes: nodes, Shapes: []Shape{gpuMembers(members, 8)}, MaxLevel: zone, Runtime: runtime}
	}
	queue := []Queued{gang("a", 1, 30*time.Minute), gang("b", 1, time.Hour), gang("huge", 3, time.Hour), gang("d", 1, 0), gang("e", 1, time.Hour)}
	got := ForecastQueue(free, releases, queue, nil, t0)
	want := []struct {
		ok     bool
		at     time.Duration
		before int
	}{
		{true, 10 * time.Minute, 0},
		{true, 20 * time.Minute, 1},
		{false, 0, 0},
		{true, 40 * time.Minute, 2}, // when a ends; huge, ahead, never starts
		{true, 80 * time.Minute, 3}, // d holds a's room for good: when b ends
	}
	for i, w := range want {
		g := got[i]
		if g.OK != w.ok || (w.ok && (!g.At.Equal(t0.Add(w.at)) || g.Before != w.before)) {
			t.Errorf("%s: %v at +%v after %d ahead; want %v at +%v after %d", queue[i].Name, g.OK, g.At.Sub(t0), g.Before, w.ok, w.at, w.before)
		}
	}
	if !slices.Equal(got[2].Unbounded, []string{"d"}) {
		t.Errorf("huge never starts, held back by %v; want [d]", got[2].Unbounded)
	}
	// Each gang's start is the one StartInQueue gives it behind the gangs ahead.
	for i := range queue {
		f := StartInQueue(free, releases, queue[:i], queue[i], nil, t0)
		if f.OK != got[i].OK || !f.Start.Equal(got[i].At) {
			t.Errorf("%s: StartInQueue says %v at +%v, ForecastQueue %v at +%v", queue[i].Name, f.OK, f.Start.Sub(t0), got[i].OK, got[i].At.Sub(t0))
		}
	}
}

// twoFullNodes is two 8-GPU nodes in two racks, both full: rack 0's pod ends 10
// minutes after t0, rack 1's 20 minutes after; and their free room.
func twoFullNodes(t0 time.Time) ([]PlanNode, []map[corev1.ResourceName]int64, []Release) {
	nodes := fleet(2, 1, map[string]int64{"r0-n0": 8, "r1-n0": 8})
	free := make([]map[corev1.ResourceName]int64, len(nodes))
	for i := range nodes {
		free[i] = nodes[i].Free
	}
	frees := map[corev1.ResourceName]int64{gpu: 8000, corev1.ResourceCPU: 8000, corev1.ResourcePods: 1000}
	return nodes, free, []Release{{At: t0.Add(10 * time.Minute), Node: 0, Frees: frees}, {At: t0.Add(20 * time.Minute), Node: 1, Frees: frees}}
}

// admitAt admits held gang i at the moment given for it.
type admitAt struct {
	queue   []Queued
	at      map[int]time.Time
	done    map[int]bool
	started []int
}

func (a *admitAt) Admit(t time.Time) []Admitted {
	var out []Admitted
	for i := range a.queue {
		if at, ok := a.at[i]; ok && !a.done[i] && !at.After(t) {
			a.done[i] = true
			out = append(out, Admitted{Index: i, Gang: a.gang(i)})
		}
	}
	return out
}

func (a *admitAt) Started(i int, _ time.Time) { a.started = append(a.started, i) }

func (a *admitAt) Evicts() Eviction { return Eviction{} }

func (a *admitAt) Next(after time.Time) (time.Time, bool) {
	next, ok := time.Time{}, false
	for i, at := range a.at {
		if !a.done[i] && at.After(after) && (!ok || at.Before(next)) {
			next, ok = at, true
		}
	}
	return next, ok
}

func (a *admitAt) gang(i int) Queued { q := a.queue[i]; q.Held = false; return q }

func TestForecastQueueHeldGangs(t *testing.T) {
	const zone = 2
	t0 := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	nodes, free, releases := twoFullNodes(t0)
	gang := func(name string, priority int32, held bool) Queued {
		return Queued{Name: name, Nodes: nodes, Shapes: []Shape{gpuMembers(1, 8)}, MaxLevel: zone, Runtime: time.Hour, Held: held, Priority: priority}
	}
	for _, tc := range []struct {
		name  string
		queue []Queued
		admit map[int]time.Duration
		want  []time.Duration // -1: never starts
	}{
		{"a held gang of higher priority admitted before room frees goes first",
			[]Queued{gang("a", 0, false), gang("h", 10, true), gang("b", 0, false)}, map[int]time.Duration{1: 5 * time.Minute},
			[]time.Duration{20 * time.Minute, 10 * time.Minute, 70 * time.Minute}},
		{"a held gang of the same priority joins behind the gangs waiting",
			[]Queued{gang("h", 0, true), gang("a", 0, false), gang("b", 0, false)}, map[int]time.Duration{0: 5 * time.Minute},
			[]time.Duration{70 * time.Minute, 10 * time.Minute, 20 * time.Minute}},
		{"a held gang admitted only after room frees waits for its admission",
			[]Queued{gang("h", 10, true), gang("a", 0, false)}, map[int]time.Duration{0: 15 * time.Minute},
			[]time.Duration{20 * time.Minute, 10 * time.Minute}},
		{"a held gang never admitted never starts",
			[]Queued{gang("h", 10, true), gang("a", 0, false)}, nil,
			[]time.Duration{-1, 10 * time.Minute}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			adm := &admitAt{queue: tc.queue, at: map[int]time.Time{}, done: map[int]bool{}}
			for i, d := range tc.admit {
				adm.at[i] = t0.Add(d)
			}
			got := ForecastQueue(free, releases, tc.queue, adm, t0)
			for i, w := range tc.want {
				if (w < 0) == got[i].OK || w >= 0 && !got[i].At.Equal(t0.Add(w)) {
					t.Errorf("%s starts %v at +%v; want +%v", tc.queue[i].Name, got[i].OK, got[i].At.Sub(t0), w)
				}
				if d, held := tc.admit[i]; held && !got[i].Admitted.Equal(t0.Add(d)) {
					t.Errorf("%s admitted at +%v, want +%v", tc.queue[i].Name, got[i].Admitted.Sub(t0), d)
				}
			}
			// StartInQueue gives the last gang the same start.
			last := len(tc.queue) - 1
			heldAdm := &admitAt{queue: tc.queue, at: adm.at, done: map[int]bool{}}
			if f := StartInQueue(free, releases, tc.queue[:last], tc.queue[last], heldAdm, t0); f.OK != got[last].OK || !f.Start.Equal(got[last].At) {
				t.Errorf("StartInQueue: %v at +%v; ForecastQueue %v at +%v", f.OK, f.Start.Sub(t0), got[last].OK, got[last].At.Sub(t0))
			}
		})
	}
}

// evictAt admits held gang 1 at at, evicting then what evict says.
type evictAt struct {
	queue  []Queued
	at     time.Time
	evict  Eviction
	done   bool
	last   Eviction
	starts []int
}

func (a *evictAt) Admit(t time.Time) []Admitted {
	a.last = Eviction{}
	if a.done || t.Before(a.at) {
		return nil
	}
	a.done, a.last = true, a.evict
	q := a.queue[1]
	q.Held = false
	return []Admitted{{Index: 1, Gang: q}}
}
func (a *evictAt) Evicts() Eviction           { return a.last }
func (a *evictAt) Started(i int, _ time.Time) { a.starts = append(a.starts, i) }
func (a *evictAt) Next(after time.Time) (time.Time, bool) {
	return a.at, !a.done && a.at.After(after)
}

// A preemption's eviction gives its room back at once: a running pod's (its own
// release no longer comes), or a gang started in the forecast (held again).
func TestForecastQueueEvictions(t *testing.T) {
	const zone = 2
	t0 := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	nodes, free, releases := twoFullNodes(t0)
	for i := range releases {
		releases[i].Owner = fmt.Sprintf("pod-%d", i)
	}
	gang := func(name string, priority int32, held bool, runtime time.Duration) Queued {
		return Queued{Name: name, Nodes: nodes, Shapes: []Shape{gpuMembers(1, 8)}, MaxLevel: zone, Runtime: runtime, Held: held, Priority: priority}
	}
	// h is admitted at +5 minutes by evicting the pod on rack 0 (which would have
	// ended at +10): it starts then, on its room.
	queue := []Queued{gang("a", 0, false, time.Hour), gang("h", 10, true, time.Hour)}
	adm := &evictAt{queue: queue, at: t0.Add(5 * time.Minute), evict: Eviction{Frees: []Release{{At: t0.Add(5 * time.Minute), Node: 0, Frees: releases[0].Frees, Owner: "pod-0"}}}}
	got := ForecastQueue(free, releases, queue, adm, t0)
	if !got[1].OK || !got[1].At.Equal(t0.Add(5*time.Minute)) {
		t.Errorf("h starts %v at +%v, want +5m0s", got[1].OK, got[1].At.Sub(t0))
	}
	// a gets rack 1 when its pod ends at +20: rack 0's pod, evicted, gives nothing
	// back at +10.
	if !got[0].OK || !got[0].At.Equal(t0.Add(20*time.Minute)) {
		t.Errorf("a starts %v at +%v, want +20m0s", got[0].OK, got[0].At.Sub(t0))
	}
	// a, started at +10 on rack 0, is evicted at +15 for h, which starts then; a is
	// held again and never admitted again here.
	queue = []Queued{gang("a", 0, false, time.Hour), gang("h", 10, true, time.Hour)}
	adm = &evictAt{queue: queue, at: t0.Add(15 * time.Minute), evict: Eviction{Gangs: []int{0}}}
	got = ForecastQueue(free, releases, queue, adm, t0)
	if !got[0].OK || !got[0].At.Equal(t0.Add(10*time.Minute)) || !got[1].OK || !got[1].At.Equal(t0.Add(15*time.Minute)) {
		t.Errorf("a starts %v at +%v (want +10m0s), h %v at +%v (want +15m0s)", got[0].OK, got[0].At.Sub(t0), got[1].OK, got[1].At.Sub(t0))
	}
	if !slices.Equal(adm.starts, []int{0, 1}) {
		t.Errorf("started %v, want [0 1]: a, evicted, is not started again", adm.starts)
	}
}

// A gang whose reservation accumulates keeps the room its members could take as it
// frees, until its TTL: a gang ahead of it that fits that room no longer takes it.
func TestForecastQueueAccumulates(t *testing.T) {
	const zone = 2
	t0 := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	nodes, free, releases := twoFullNodes(t0)
	for _, tc := range []struct {
		name        string
		accumulates time.Duration // 0: no reservation
		small, big  time.Duration
	}{
		{"without a reservation the gang ahead takes the first node that frees", 0, 10 * time.Minute, 70 * time.Minute},
		{"its reservation keeps the first node for it: it starts when the second frees", time.Hour, 50 * time.Minute, 20 * time.Minute},
		{"its reservation lapses before the second node frees: the gang ahead takes the first then", 15 * time.Minute, 15 * time.Minute, 75 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			small := Queued{Name: "small", Nodes: nodes, Shapes: []Shape{gpuMembers(1, 4)}, MaxLevel: zone, Runtime: time.Hour}
			big := Queued{Name: "big", Nodes: nodes, Shapes: []Shape{gpuMembers(2, 8)}, MaxLevel: zone, Runtime: 30 * time.Minute}
			if tc.accumulates > 0 {
				big.Accumulates = t0.Add(tc.accumulates)
			}
			got := ForecastQueue(free, releases, []Queued{small, big}, nil, t0)
			if !got[0].OK || !got[0].At.Equal(t0.Add(tc.small)) || !got[1].OK || !got[1].At.Equal(t0.Add(tc.big)) {
				t.Errorf("small starts at +%v (%v), big at +%v (%v); want +%v and +%v", got[0].At.Sub(t0), got[0].OK, got[1].At.Sub(t0), got[1].OK, tc.small, tc.big)
			}
			// StartInQueue gives the last gang the same start.
			if f := StartInQueue(free, releases, []Queued{small}, big, nil, t0); !f.OK || !f.Start.Equal(got[1].At) {
				t.Errorf("StartInQueue: big at +%v (%v); ForecastQueue +%v", f.Start.Sub(t0), f.OK, got[1].At.Sub(t0))
			}
		})
	}
}
