package gangpreemption

import (
	"container/heap"
	"encoding/csv"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/nodefree"
)

// TestPreemptionReplay (make bench-preemption) replays a seeded stream of jobs on
// a fleet of 8-GPU nodes, in process, and chooses every preemption's victims with
// this package's own search (units, withShedding, choose), in these arms:
//
//   - before: victims weighed by their GPUs times their whole running time, gangs
//     evicted whole (GangPreemption before checkpoints and shrink-before-kill);
//   - now: victims weighed by the GPU time since their last checkpoint, elastic
//     gangs shrunk to their minimum first;
//   - checkpoint-only and shed-only: each of the two alone;
//   - stock: kube-scheduler's DefaultPreemption, member by member (preemptStock),
//     a gang that loses a member restarted whole by its controller;
//   - consolidate: now, and a job that fits the free GPUs only in total moves the
//     fewest best-effort pods of the trace (placement.Consolidate, at most 4 per
//     job and 32 an hour), which lose their run and wait again.
//
// The work a victim really loses is the same model in every arm: the time since
// its last checkpoint (every `interval` of its run), or its whole run without
// checkpoints; an evicted job waits again, in its place in the queue, and resumes
// from its last checkpoint; a member shed loses its own, and its gang runs on at
// its smaller size (slower in proportion) until the shed members, recreated, are
// placed again (queued at their gang's time, as the QueueSort orders them).
// Each stream is replayed at several offered loads (GPU-seconds offered over the
// fleet's, while jobs arrive): below 1 the queue drains between bursts, above 1 it
// grows until arrivals stop. It prints GPU-hours lost, per preempted GPU, the
// jobs' wait for their first start and their completion time at p50/p95, and the
// fleet's GPU allocation while jobs arrive, per seed and as median [min–max] over
// the seeds, and per load whether now loses at least 30% fewer GPU-hours than
// before with no median wait or completion time worse.
// Off unless KUBENEXUS_PREEMPTION_REPLAY names the trace's pod list
// (KUBENEXUS_PREEMPTION_SEEDS, default 40; KUBENEXUS_PREEMPTION_LOADS, default
// 0.8,0.95,1.1,1.3; KUBENEXUS_PREEMPTION_ARMS).
func TestPreemptionReplay(t *testing.T) {
	trace := os.Getenv("KUBENEXUS_PREEMPTION_REPLAY")
	if trace == "" {
		t.Skip("set KUBENEXUS_PREEMPTION_REPLAY to the Alibaba trace's pod list (make bench-preemption)")
	}
	shapes, err := readShapes(trace)
	if err != nil {
		t.Fatal(err)
	}
	seeds := 40
	if v := os.Getenv("KUBENEXUS_PREEMPTION_SEEDS"); v != "" {
		if seeds, err = strconv.Atoi(v); err != nil || seeds < 1 {
			t.Fatalf("KUBENEXUS_PREEMPTION_SEEDS=%q: want a positive integer", v)
		}
	}
	loads := []float64{0.8, 0.95, 1.1, 1.3}
	if v := os.Getenv("KUBENEXUS_PREEMPTION_LOADS"); v != "" {
		loads = nil
		for _, f := range strings.Split(v, ",") {
			l, err := strconv.ParseFloat(f, 64)
			if err != nil || l <= 0 {
				t.Fatalf("KUBENEXUS_PREEMPTION_LOADS=%q: want positive numbers separated by commas", v)
			}
			loads = append(loads, l)
		}
	}
	arms := []string{"stock", "before", "now", "checkpoint-only", "shed-only", "consolidate"}
	if v := os.Getenv("KUBENEXUS_PREEMPTION_ARMS"); v != "" {
		arms = strings.Split(v, ",")
	}
	var b strings.Builder
	for _, load := range loads {
		results := map[string][]replayResult{}
		for seed := 1; seed <= seeds; seed++ {
			jobs := generate(shapes, uint64(seed), load)
			for _, arm := range arms {
				r := replay(jobs, arm)
				results[arm] = append(results[arm], r)
				t.Logf("load %.2f seed %d %-6s %s", load, seed, arm, r)
			}
		}
		fmt.Fprintf(&b, "\nOffered load %.2f (%d seeds):\n\n", load, seeds)
		b.WriteString(replayTable(arms, results))
		b.WriteString(replayVerdict(results["before"], results["now"]))
	}
	t.Log(b.String())
}

// replayMetrics are the columns of the table, in order, each with its format.
var replayMetrics = []struct {
	name   string
	format string
	of     func(replayResult) float64
	wait   bool // a wait or completion time: now must be no worse than before
}{
	{"GPU-hours lost", "%.0f", func(r replayResult) float64 { return r.lostGPUHours }, false},
	{"per preempted GPU", "%.2f", replayResult.lostPerGPU, false},
	{"preempted GPUs", "%.0f", func(r replayResult) float64 { return float64(r.preemptedGPUs) }, false},
	{"wait p50", "%.1f min", func(r replayResult) float64 { return r.waitP50 / 60 }, true},
	{"wait p95", "%.1f min", func(r replayResult) float64 { return r.waitP95 / 60 }, true},
	{"gangs' wait p50", "%.1f min", func(r replayResult) float64 { return r.gangWaitP50 / 60 }, true},
	{"gangs' wait p95", "%.1f min", func(r replayResult) float64 { return r.gangWaitP95 / 60 }, true},
	{"high-priority wait p95", "%.1f min", func(r replayResult) float64 { return r.highWaitP95 / 60 }, true},
	{"completion p50", "%.1f min", func(r replayResult) float64 { return r.jctP50 / 60 }, true},
	{"completion p95", "%.0f min", func(r replayResult) float64 { return r.jctP95 / 60 }, true},
	{"GPU allocation", "%.1f%%", func(r replayResult) float64 { return 100 * r.allocation }, false},
}

func replayTable(arms []string, results map[string][]replayResult) string {
	var b strings.Builder
	b.WriteString("| arm |")
	for _, m := range replayMetrics {
		b.WriteString(" " + m.name + " |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(replayMetrics)) + "\n")
	for _, arm := range arms {
		b.WriteString("| " + arm + " |")
		for _, m := range replayMetrics {
			b.WriteString(" " + spread(results[arm], m.of, m.format) + " |")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// replayVerdict compares now with before over the same seeds: GPU-hours lost, per
// seed and in median, and every wait's median.
func replayVerdict(before, now []replayResult) string {
	if len(before) == 0 || len(before) != len(now) {
		return ""
	}
	ratios := make([]replayResult, len(now))
	for i := range now {
		ratios[i] = replayResult{lostGPUHours: now[i].lostGPUHours / max(before[i].lostGPUHours, 1e-9)}
	}
	lost := median(now, replayMetrics[0].of) / max(median(before, replayMetrics[0].of), 1e-9)
	var worse []string
	for _, m := range replayMetrics {
		if m.wait && median(now, m.of) > median(before, m.of) {
			longer, shorter := 0, 0
			for i := range now {
				switch a, b := m.of(now[i]), m.of(before[i]); {
				case a > b:
					longer++
				case a < b:
					shorter++
				}
			}
			worse = append(worse, fmt.Sprintf("%s "+m.format+" > "+m.format+" (longer in %d seeds, shorter in %d)",
				m.name, median(now, m.of), median(before, m.of), longer, shorter))
		}
	}
	verdict := "met"
	switch {
	case lost > 0.7:
		verdict = fmt.Sprintf("not met: GPU-hours lost only %.0f%% fewer", 100*(1-lost))
	case len(worse) > 0:
		verdict = "not met: " + strings.Join(worse, ", ")
	}
	return fmt.Sprintf("\nGPU-hours lost, now / before: median %.2f, per seed %s. At least 30%% fewer with no median wait worse: %s.\n",
		lost, spread(ratios, func(r replayResult) float64 { return r.lostGPUHours }, "%.2f"), verdict)
}

func median(rs []replayResult, of func(replayResult) float64) float64 {
	vs := make([]float64, len(rs))
	for i, r := range rs {
		vs[i] = of(r)
	}
	sort.Float64s(vs)
	return vs[len(vs)/2]
}

// shape is one GPU pod of the trace: its GPUs (a share counts as one), its run
// time when it ran to its end, and its QoS class.
type shape struct {
	gpus    int64
	runtime float64
	be      bool
}

func readShapes(path string) ([]shape, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, err
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	for _, need := range []string{"num_gpu", "qos", "pod_phase", "creation_time", "deletion_time"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("%s: no column %s", path, need)
		}
	}
	var out []shape
	for _, r := range rows[1:] {
		gpus, _ := strconv.ParseInt(r[col["num_gpu"]], 10, 64)
		phase := r[col["pod_phase"]]
		if gpus < 1 || phase != "Succeeded" && phase != "Failed" {
			continue
		}
		created, _ := strconv.ParseFloat(r[col["creation_time"]], 64)
		deleted, _ := strconv.ParseFloat(r[col["deletion_time"]], 64)
		out = append(out, shape{gpus: min(gpus, 8), runtime: max(deleted-created, 60), be: r[col["qos"]] == "BE"})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no finished GPU pod", path)
	}
	return out, nil
}

const (
	replayNodes  = 32
	gpusPerNode  = 8
	replayJobs   = 700
	highPriority = 100
	lowPriority  = 10
)

// job is one workload of the stream: a pod of the trace, or a training gang.
type job struct {
	id             int
	gpus           int64 // per member
	size, min      int
	prio           int32
	work           float64 // seconds of work at full size
	interval       float64 // checkpoint interval (0: none)
	arrival        float64
	firstStart     float64
	saved          float64 // work saved at its last checkpoint
	runStart       float64 // the current run's start: checkpoints are every interval from it
	t0, progress0  float64 // the current stretch at one size: its start, and the work done then
	ckptProgress   float64 // the work done at the last checkpoint before t0
	members        int     // running members (0: pending)
	nodes          []int   // of its running members
	completion     float64
	completionSeen int // completion events of an earlier run are stale
	// rejoin, for an entry of the queue that is members shed from a gang: the
	// gang they rejoin once placed (its controller recreates them).
	rejoin *job
}

func (j *job) running() bool { return j.members > 0 }

// rate is its progress per second: its share of its full size.
func (j *job) rate() float64 { return float64(j.members) / float64(j.size) }

// lastCheckpoint is the time of its last checkpoint in the current run (its start
// when it has none).
func (j *job) lastCheckpoint(now float64) float64 {
	if j.interval <= 0 {
		return j.runStart
	}
	return j.runStart + math.Floor((now-j.runStart)/j.interval)*j.interval
}

// savedAt is the work its last checkpoint before now holds.
func (j *job) savedAt(now float64) float64 {
	if ck := j.lastCheckpoint(now); ck >= j.t0 {
		return j.progress0 + (ck-j.t0)*j.rate()
	}
	return j.ckptProgress
}

// generate draws the stream: 1 job in 4 a training gang of 2–8 members of 4 or 8
// GPUs (runs of 30 min to 8 h, log-uniform; half elastic down to half their
// size; 7 in 10 checkpointing every 10, 30 or 60 minutes; 7 in 10 of low
// priority), the rest pods of the trace (its GPUs, run time and QoS: best-effort
// pods are of low priority, the others high). Arrivals are a Poisson stream that
// offers `load` times the fleet's GPUs while it lasts.
func generate(shapes []shape, seed uint64, load float64) []*job {
	rng := rand.New(rand.NewPCG(seed, 0x6b756265))
	jobs := make([]*job, 0, replayJobs)
	var gpuSeconds float64
	for i := range replayJobs {
		j := &job{id: i, size: 1, min: 1, firstStart: -1}
		if rng.Float64() < 0.25 {
			j.size = []int{2, 4, 8}[rng.IntN(3)]
			j.gpus = []int64{4, 8}[rng.IntN(2)]
			j.work = 1800 * math.Exp(rng.Float64()*math.Log(16))
			j.min = j.size
			if rng.Float64() < 0.5 {
				j.min = j.size / 2
			}
			if rng.Float64() < 0.7 {
				j.interval = []float64{600, 1800, 3600}[rng.IntN(3)]
			}
			j.prio = highPriority
			if rng.Float64() < 0.7 {
				j.prio = lowPriority
			}
		} else {
			s := shapes[rng.IntN(len(shapes))]
			j.gpus, j.work, j.prio = s.gpus, s.runtime, highPriority
			if s.be {
				j.prio = lowPriority
			}
		}
		gpuSeconds += float64(j.gpus) * float64(j.size) * j.work
		jobs = append(jobs, j)
	}
	meanGap := gpuSeconds / (load * float64(replayNodes*gpusPerNode) * float64(replayJobs))
	at := 0.0
	for _, j := range jobs {
		at += rng.ExpFloat64() * meanGap
		j.arrival = at
	}
	return jobs
}

type replayResult struct {
	lostGPUHours  float64
	preemptedGPUs int64
	waitP50       float64
	waitP95       float64
	highWaitP95   float64
	gangWaitP50   float64
	gangWaitP95   float64
	allocation    float64
	preemptions   int
	shed          int // members shed from elastic gangs
	moved         int // pods moved by consolidation
	jctP50        float64
	jctP95        float64
	// rejoined: shed members placed again; dropped: shed members whose gang
	// ended or was evicted whole before they were.
	rejoined, dropped int
}

func (r replayResult) lostPerGPU() float64 {
	if r.preemptedGPUs == 0 {
		return 0
	}
	return r.lostGPUHours / float64(r.preemptedGPUs)
}

func (r replayResult) String() string {
	return fmt.Sprintf("GPU-hours lost %.0f (%.2f per preempted GPU, %d GPUs, %d preemptions, %d members shed (%d back, %d dropped), %d pods moved), wait p50 %.1f min p95 %.1f min (gangs p95 %.1f min, high priority p95 %.1f min), allocation %.1f%%",
		r.lostGPUHours, r.lostPerGPU(), r.preemptedGPUs, r.preemptions, r.shed, r.rejoined, r.dropped, r.moved, r.waitP50/60, r.waitP95/60, r.gangWaitP95/60, r.highWaitP95/60, 100*r.allocation)
}

func spread(rs []replayResult, f func(replayResult) float64, format string) string {
	vs := make([]float64, len(rs))
	for i, r := range rs {
		vs[i] = f(r)
	}
	sort.Float64s(vs)
	med := vs[len(vs)/2]
	return fmt.Sprintf(format+" ["+format+"–"+format+"]", med, vs[0], vs[len(vs)-1])
}

// event is a job's completion.
type event struct {
	at  float64
	j   *job
	run int
}

type events []event

func (e events) Len() int           { return len(e) }
func (e events) Less(a, b int) bool { return e[a].at < e[b].at }
func (e events) Swap(a, b int)      { e[a], e[b] = e[b], e[a] }
func (e *events) Push(x any)        { *e = append(*e, x.(event)) }
func (e *events) Pop() any {
	old := *e
	x := old[len(old)-1]
	*e = old[:len(old)-1]
	return x
}

// sim is the state of one replay.
type sim struct {
	arm     string
	free    [replayNodes]int64
	now     float64
	queue   []*job
	done    events
	res     replayResult
	usedGPU float64 // GPU-seconds allocated
	epoch   time.Time
	// allocation is measured while jobs arrive: the drain after the last one
	// would dilute it by the length of the longest job.
	arrivalsEnd, usedAtArrivalsEnd float64
	jct                            []float64 // arrival to completion of every job that completed
	moves                          []float64 // when consolidation moved each pod
}

func replay(stream []*job, arm string) replayResult {
	s := &sim{arm: arm, epoch: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	for i := range s.free {
		s.free[i] = gpusPerNode
	}
	jobs := make([]*job, len(stream))
	for i, j := range stream {
		c := *j
		jobs[i] = &c
	}
	next := 0
	for next < len(jobs) || len(s.queue) > 0 || s.done.Len() > 0 {
		at := math.Inf(1)
		if next < len(jobs) {
			at = jobs[next].arrival
		}
		if s.done.Len() > 0 && s.done[0].at <= at {
			e := heap.Pop(&s.done).(event)
			s.advance(e.at)
			if e.j.completionSeen == e.run && e.j.running() {
				s.stop(e.j)
				s.jct = append(s.jct, s.now-e.j.arrival)
			}
		} else if next < len(jobs) {
			s.advance(at)
			s.queue = append(s.queue, jobs[next])
			next++
			if next == len(jobs) {
				s.arrivalsEnd, s.usedAtArrivalsEnd = s.now, s.usedGPU
			}
		} else {
			break // pending jobs nothing will ever free room for
		}
		s.schedule()
	}
	var waits, high, gangs []float64
	for _, j := range jobs {
		if j.firstStart < 0 {
			continue
		}
		waits = append(waits, j.firstStart-j.arrival)
		if j.prio == highPriority {
			high = append(high, j.firstStart-j.arrival)
		}
		if j.size > 1 {
			gangs = append(gangs, j.firstStart-j.arrival)
		}
	}
	s.res.waitP50, s.res.waitP95, s.res.highWaitP95 = quantile(waits, 0.5), quantile(waits, 0.95), quantile(high, 0.95)
	s.res.gangWaitP50, s.res.gangWaitP95 = quantile(gangs, 0.5), quantile(gangs, 0.95)
	s.res.jctP50, s.res.jctP95 = quantile(s.jct, 0.5), quantile(s.jct, 0.95)
	if s.arrivalsEnd > 0 {
		s.res.allocation = s.usedAtArrivalsEnd / (s.arrivalsEnd * replayNodes * gpusPerNode)
	}
	return s.res
}

func quantile(vs []float64, q float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	sort.Float64s(vs)
	return vs[min(int(q*float64(len(vs))), len(vs)-1)]
}

func (s *sim) advance(to float64) {
	var used int64
	for _, f := range s.free {
		used += gpusPerNode - f
	}
	s.usedGPU += float64(used) * (to - s.now)
	s.now = to
}

// schedule places pending jobs in queue order (priority, then arrival), each
// whole or not at all; a pending job of high priority that does not fit preempts.
func (s *sim) schedule() {
	sort.SliceStable(s.queue, func(a, b int) bool {
		if s.queue[a].prio != s.queue[b].prio {
			return s.queue[a].prio > s.queue[b].prio
		}
		return s.queue[a].arrival < s.queue[b].arrival
	})
	// Victims evicted or shed during this pass join s.queue (evict, shed): they
	// wait for the next pass.
	queue := s.queue
	s.queue = nil
	var left []*job
	for _, j := range queue {
		if j.rejoin != nil && (!j.rejoin.running() || j.rejoin.members+j.size > j.rejoin.size) {
			s.res.dropped++
			continue // the gang ended or was evicted whole: its new run starts whole
		}
		if at := s.fit(j); at != nil {
			s.start(j, at)
			continue
		}
		if j.prio == highPriority && (s.arm == "stock" && s.preemptStock(j) || s.arm != "stock" && s.preempt(j)) {
			if at := s.fit(j); at != nil {
				s.start(j, at)
				continue
			}
		}
		if s.arm == "consolidate" && j.rejoin == nil {
			if at := s.consolidate(j); at != nil {
				s.start(j, at)
				continue
			}
		}
		left = append(left, j)
	}
	s.queue = append(left, s.queue...)
}

// fit places the job's members best-fit (the node left with the fewest free
// GPUs), or returns nil.
func (s *sim) fit(j *job) []int {
	free := s.free
	var at []int
	for range j.size {
		best := -1
		for n, f := range free {
			if f >= j.gpus && (best < 0 || f < free[best]) {
				best = n
			}
		}
		if best < 0 {
			return nil
		}
		free[best] -= j.gpus
		at = append(at, best)
	}
	return at
}

func (s *sim) start(j *job, at []int) {
	for _, n := range at {
		s.free[n] -= j.gpus
	}
	if g := j.rejoin; g != nil {
		s.res.rejoined++
		// The shed members are back: the gang runs faster from now on.
		g.ckptProgress = g.savedAt(s.now)
		g.progress0 += (s.now - g.t0) * g.rate()
		g.t0 = s.now
		g.nodes = append(g.nodes, at...)
		g.members = len(g.nodes)
		s.reschedule(g)
		return
	}
	if j.firstStart < 0 {
		j.firstStart = s.now
	}
	j.nodes, j.members = at, len(at)
	j.runStart, j.t0, j.progress0, j.ckptProgress = s.now, s.now, j.saved, j.saved
	s.reschedule(j)
}

func (s *sim) reschedule(j *job) {
	j.completionSeen++
	j.completion = s.now + (j.work-j.progress0)/j.rate()
	heap.Push(&s.done, event{at: j.completion, j: j, run: j.completionSeen})
}

func (s *sim) stop(j *job) {
	for _, n := range j.nodes {
		s.free[n] += j.gpus
	}
	j.nodes, j.members = nil, 0
}

// evict stops the whole job: it keeps the work of its last checkpoint and waits
// again.
func (s *sim) evict(j *job) {
	ckpt := j.lastCheckpoint(s.now)
	s.res.lostGPUHours += float64(j.gpus) * float64(j.members) * (s.now - ckpt) / 3600
	s.res.preemptedGPUs += j.gpus * int64(j.members)
	j.saved = j.savedAt(s.now)
	s.stop(j)
	s.queue = append(s.queue, j)
}

// shed stops the members of j on the nodes given: they lose their work since
// the last checkpoint, the gang runs on, slower, at its smaller size.
func (s *sim) shed(j *job, nodes []int) {
	ckpt := j.lastCheckpoint(s.now)
	s.res.lostGPUHours += float64(j.gpus) * float64(len(nodes)) * (s.now - ckpt) / 3600
	s.res.preemptedGPUs += j.gpus * int64(len(nodes))
	s.res.shed += len(nodes)
	j.ckptProgress = j.savedAt(s.now)
	j.progress0 += (s.now - j.t0) * j.rate()
	j.t0 = s.now
	for _, n := range nodes {
		s.free[n] += j.gpus
		for i, m := range j.nodes {
			if m == n {
				j.nodes = append(j.nodes[:i], j.nodes[i+1:]...)
				break
			}
		}
	}
	j.members = len(j.nodes)
	s.reschedule(j)
	s.queue = append(s.queue, &job{id: -1, gpus: j.gpus, size: len(nodes), prio: j.prio, arrival: j.arrival, firstStart: 0, rejoin: j})
}

// preempt chooses victims for j with the package's own search and evicts them.
func (s *sim) preempt(j *job) bool {
	pods, owner := s.runningPods()
	srch := &search{byName: map[string]int{}, budget: map[types.UID]int32{}}
	for n := range replayNodes {
		name := fmt.Sprintf("n%d", n)
		srch.nodes = append(srch.nodes, node{obj: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}},
			free: map[corev1.ResourceName]int64{v1alpha1.ResourceNvidiaGPU: s.free[n] * 1000, corev1.ResourcePods: 100000}})
		srch.byName[name] = n
	}
	eligible := map[int]bool{}
	for n := range replayNodes {
		eligible[n] = true
	}
	for m := range j.size {
		p := simPod(j, m, -1, s.epoch, s.now)
		srch.members = append(srch.members, member{pod: p, req: nodefree.Requests(p), eligible: eligible})
	}
	gpuNames := []corev1.ResourceName{v1alpha1.ResourceNvidiaGPU}
	describe := func(p *corev1.Pod) *victim {
		if s.arm == "before" || s.arm == "shed-only" {
			p = p.DeepCopy()
			p.Annotations = nil
		}
		return newVictim(p, workload.Classify(p, workload.Namespace{}, ""), gpuNames)
	}
	now := s.epoch.Add(time.Duration(s.now * float64(time.Second)))
	us := units(pods, j.prio, nil, anyLower(j.prio), ownPriority, describe, now)
	if s.arm == "now" || s.arm == "shed-only" || s.arm == "consolidate" {
		us = withShedding(us, func(k gang.Key, _ int32) (int32, map[string]int32, bool) {
			id, _ := strconv.Atoi(strings.TrimPrefix(k.Name, "job-"))
			return int32(owner[id].min), nil, true
		}, func(*corev1.Pod) v1alpha1.WorkloadRole { return "" })
	}
	c := srch.choose(us)
	if c == nil {
		return false
	}
	s.res.preemptions++
	for _, u := range c.victims {
		v := owner[podJob(u.pods[0])]
		if u.shed == nil {
			s.evict(v)
			continue
		}
		s.shed(v, []int{srch.byName[u.pods[0].Spec.NodeName]})
	}
	return true
}

// runningPods is the running jobs' members as pods, and the jobs by id.
func (s *sim) runningPods() ([]*corev1.Pod, map[int]*job) {
	owner := map[int]*job{}
	var pods []*corev1.Pod
	seen := map[*job]bool{}
	for _, e := range s.done {
		j := e.j
		if !j.running() || seen[j] {
			continue
		}
		seen[j] = true
		owner[j.id] = j
		for m, n := range j.nodes {
			pods = append(pods, simPod(j, m, n, s.epoch, s.now))
		}
	}
	sort.Slice(pods, func(a, b int) bool { return pods[a].Name < pods[b].Name })
	return pods, owner
}

// simPod is member m of job j as a pod on node n (-1: pending), started at the
// job's current run, declaring its last checkpoint when it makes them.
func simPod(j *job, m, n int, epoch time.Time, now float64) *corev1.Pod {
	q := *resource.NewQuantity(j.gpus, resource.DecimalSI)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("job-%d-%d", j.id, m), Namespace: "ns", UID: types.UID(fmt.Sprintf("job-%d-%d", j.id, m)),
		Labels: map[string]string{"job": strconv.Itoa(j.id)}},
		Spec: corev1.PodSpec{Priority: &j.prio, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{v1alpha1.ResourceNvidiaGPU: q}, Limits: corev1.ResourceList{v1alpha1.ResourceNvidiaGPU: q}}}}}}
	if j.size > 1 {
		p.Labels[v1alpha1.LabelPodGroup] = fmt.Sprintf("job-%d", j.id)
	}
	if n >= 0 {
		p.Spec.NodeName = fmt.Sprintf("n%d", n)
		p.Status.StartTime = &metav1.Time{Time: epoch.Add(time.Duration(j.runStart * float64(time.Second)))}
		if j.interval > 0 {
			ckpt := epoch.Add(time.Duration(j.lastCheckpoint(now) * float64(time.Second)))
			p.Annotations = map[string]string{v1alpha1.AnnotationLastCheckpoint: ckpt.UTC().Format(time.RFC3339)}
		}
	}
	return p
}

func podJob(p *corev1.Pod) int {
	id, _ := strconv.Atoi(p.Labels["job"])
	return id
}

// Consolidation's budgets as GangPreemption's defaults.
const (
	replayMovesPerGang = 4
	replayMovesPerHour = 32
)

// consolidate, for a job that fits the free GPUs only in total, moves the fewest
// running pods that may move — best-effort pods of the trace (labelled
// preemptible), of a priority not above the job's — with placement.Consolidate,
// within the budgets: each moved pod loses its run (it declares no checkpoints)
// and waits again, its room rehomed by the plan; the job's nodes are returned.
func (s *sim) consolidate(j *job) []int {
	var free int64
	for _, f := range s.free {
		free += f
	}
	if free < j.gpus*int64(j.size) {
		return nil
	}
	kept := s.moves[:0]
	for _, t := range s.moves {
		if s.now-t < 3600 {
			kept = append(kept, t)
		}
	}
	s.moves = kept
	bins := make([]placement.Bin, replayNodes)
	all := map[int]bool{}
	for n := range replayNodes {
		bins[n] = placement.Bin{Name: fmt.Sprintf("n%03d", n), Free: map[corev1.ResourceName]int64{v1alpha1.ResourceNvidiaGPU: s.free[n]}}
		all[n] = true
	}
	wants := make([]placement.Want, j.size)
	for m := range wants {
		wants[m] = placement.Want{Req: map[corev1.ResourceName]int64{v1alpha1.ResourceNvidiaGPU: j.gpus}, Eligible: all}
	}
	var ms []placement.Movable
	var movers []*job
	seen := map[*job]bool{}
	for _, e := range s.done {
		v := e.j
		if seen[v] || !v.running() || v.size != 1 || v.prio != lowPriority || v.prio > j.prio {
			continue
		}
		seen[v] = true
		ms = append(ms, placement.Movable{Bin: v.nodes[0], Req: map[corev1.ResourceName]int64{v1alpha1.ResourceNvidiaGPU: v.gpus}, Homes: all,
			Cost: float64(v.gpus) * (s.now - v.lastCheckpoint(s.now))})
		movers = append(movers, v)
	}
	plan := placement.Consolidate(bins, wants, ms, nil, nil)
	if plan == nil || len(plan.Moved) > replayMovesPerGang || len(s.moves)+len(plan.Moved) > replayMovesPerHour {
		return nil
	}
	for _, i := range plan.Moved {
		s.evict(movers[i])
		s.moves = append(s.moves, s.now)
	}
	s.res.moved += len(plan.Moved)
	return plan.At
}

// preemptStock chooses victims as kube-scheduler's DefaultPreemption does, for
// each member of j that fits no node in turn: on each node, every pod of lower
// priority is removed, then as many as fit are reprieved, the most important first
// (higher priority, then the earlier start); of the nodes where the member then
// fits, the one whose most important victim is least important, then with the
// lowest sum of victims' priorities, then the fewest victims, then whose victims
// started latest. A pod evicted from a gang breaks it: the job's controller
// restarts it whole, and every member loses its work since the last checkpoint
// (counted at once, its room free at once — in a cluster the rest of the gang goes
// a little later). Placement stays all or nothing (stock without gangs would place
// members one by one and strand some: not modelled, in stock's favour).
func (s *sim) preemptStock(j *job) bool {
	free := s.free
	onNode := map[int][]*job{}
	for _, e := range s.done {
		v := e.j
		if !v.running() || v.prio >= j.prio {
			continue
		}
		for _, n := range v.nodes {
			onNode[n] = append(onNode[n], v)
		}
	}
	// Each job is listed once per member on the node; the map of done events may
	// hold a job more than once.
	for n, vs := range onNode {
		seen := map[*job]int{}
		var out []*job
		for _, v := range vs {
			seen[v]++
			count := 0
			for _, m := range v.nodes {
				if m == n {
					count++
				}
			}
			if seen[v] <= count {
				out = append(out, v)
			}
		}
		onNode[n] = out
	}
	victims := map[*job]bool{}
	for range j.size {
		if n := bestFitNode(free, j.gpus); n >= 0 {
			free[n] -= j.gpus
			continue
		}
		best, bestVictims := -1, []*job(nil)
		for n := range replayNodes {
			var cands []*job
			room := free[n]
			for _, v := range onNode[n] {
				if !victims[v] {
					cands = append(cands, v)
					room += v.gpus
				}
			}
			if room < j.gpus {
				continue
			}
			// Reprieve the most important first: the earliest started.
			sort.SliceStable(cands, func(a, b int) bool { return cands[a].runStart < cands[b].runStart })
			var out []*job
			for _, v := range cands {
				if room-v.gpus >= j.gpus {
					room -= v.gpus
					continue
				}
				out = append(out, v)
			}
			if best < 0 || stockBetter(out, bestVictims) {
				best, bestVictims = n, out
			}
		}
		if best < 0 {
			return false
		}
		for _, v := range bestVictims {
			victims[v] = true
			for _, m := range v.nodes {
				free[m] += v.gpus
			}
		}
		free[best] -= j.gpus
	}
	if len(victims) == 0 {
		return false
	}
	s.res.preemptions++
	for v := range victims {
		s.evict(v)
	}
	return true
}

// stockBetter: DefaultPreemption's order of candidate nodes once every victim is of
// the same priority: fewer victims, then victims that started later.
func stockBetter(a, b []*job) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	latest := func(vs []*job) float64 {
		t := math.Inf(-1)
		for _, v := range vs {
			t = max(t, v.runStart)
		}
		return t
	}
	return latest(a) > latest(b)
}

// bestFitNode is the node with the fewest free GPUs that still holds gpus, or -1.
func bestFitNode(free [replayNodes]int64, gpus int64) int {
	best := -1
	for n, f := range free {
		if f >= gpus && (best < 0 || f < free[best]) {
			best = n
		}
	}
	return best
}
