package main

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// result is one run of one workload by one arm. CPU figures are milliseconds of CPU
// time (utime+stime) per scheduled pod; NaN when not measured.
type result struct {
	workload, arm string
	rep, pods     int

	span        time.Duration // first → last binding
	startToLast time.Duration // scheduler process start → last binding
	startReady  time.Duration // scheduler process start → /readyz (or the null binder's ready line); 0 if not seen

	quiet      bool          // the control plane was quiet when the scheduler started
	quietAfter time.Duration // how long the bench waited for that

	podsPerSec, podsPerSecStart float64

	schedFL, schedRL, schedSL float64 // scheduler CPU-ms/pod: first→last, ready→last, start→last
	ctlFL, ctlSL              float64 // kube-apiserver + etcd CPU-ms/pod: first→last, start→last
	apiFL, etcdFL             float64 // the two parts of ctlFL

	attemptsPerPod float64 // scheduler_schedule_attempts_total (all results) / pods
	// batched is the attempts opportunistic batching served from the previous pod's
	// ranking (scheduler_batch_attempts_total{result="hint_used"}); NaN when the
	// scheduler does not serve metrics.
	batched float64

	gangSpanP50, gangSpanP99 time.Duration
	multiRackGangs           float64 // gangs whose members are on more than one rack
	unreserved               string
	peakRSSMiB               int
	// rssAnonMiB and rssFileMiB split the resident set when the run ends: anonymous
	// memory (heap, stacks) and pages of mapped files (mostly the binary's own).
	rssAnonMiB, rssFileMiB int

	// W6: lower-priority pods evicted per pod placed, and lower-priority gangs left
	// with some but not all members.
	evictedPerPod, partialGangs float64

	// api is what kube-apiserver served per pod from the process's start to the
	// last binding (apicalls.go); nil when its metrics could not be read.
	api apiCalls

	speed gaugeReading // the speed gauge just before the run (speed.go)
}

func (r result) line() string {
	quiet := fmt.Sprintf("quiet after %.1fs", r.quietAfter.Seconds())
	if !r.quiet {
		quiet = fmt.Sprintf("NOT QUIET after %.0fs", r.quietAfter.Seconds())
	}
	return fmt.Sprintf("  %s run %d %-17s %5d pods  %7.1f pods/s (start→last %6.1f)  sched CPU-ms/pod %s (ready→last %s, start→last %s)  apiserver+etcd %s (%s+%s)  attempts/pod %s  batched %s  peak RSS %d MiB (at the end: anon %d, files %d)  control plane %s  gauge walk %.1f hash %.1f ms",
		r.workload, r.rep+1, r.arm, r.pods, r.podsPerSec, r.podsPerSecStart, f2(r.schedFL), f2(r.schedRL), f2(r.schedSL),
		f2(r.ctlFL), f2(r.apiFL), f2(r.etcdFL), f2(r.attemptsPerPod), f2(r.batched), r.peakRSSMiB, r.rssAnonMiB, r.rssFileMiB, quiet, r.speed.walk, r.speed.hash)
}

func f2(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// stats is median and range of one metric over the runs of one arm.
type stats struct {
	med, min, max float64
	n             int
}

func summarize(vs []float64) stats {
	var xs []float64
	for _, v := range vs {
		if !math.IsNaN(v) {
			xs = append(xs, v)
		}
	}
	if len(xs) == 0 {
		return stats{med: math.NaN(), min: math.NaN(), max: math.NaN()}
	}
	sort.Float64s(xs)
	med := xs[len(xs)/2]
	if len(xs)%2 == 0 {
		med = (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
	}
	return stats{med: med, min: xs[0], max: xs[len(xs)-1], n: len(xs)}
}

func (s stats) ok() bool { return s.n > 0 }

func (s stats) overlaps(o stats) bool { return s.min <= o.max && o.min <= s.max }

func (s stats) cell(prec int) string {
	if !s.ok() {
		return "n/a"
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	if s.n == 1 {
		return f(s.med)
	}
	return fmt.Sprintf("%s [%s–%s]", f(s.med), f(s.min), f(s.max))
}

type metric struct {
	label string
	prec  int
	get   func(result) float64
	gang  bool // only for gang workloads
	// preempt: only for the preemption workload
	preempt bool
}

var metrics = []metric{
	{label: "pods/s, first→last binding", prec: 0, get: func(r result) float64 { return r.podsPerSec }},
	{label: "pods/s, process start→last", prec: 0, get: func(r result) float64 { return r.podsPerSecStart }},
	{label: "sched CPU-ms/pod, first→last", prec: 2, get: func(r result) float64 { return r.schedFL }},
	{label: "sched CPU-ms/pod, ready→last", prec: 2, get: func(r result) float64 { return r.schedRL }},
	{label: "sched CPU-ms/pod, start→last", prec: 2, get: func(r result) float64 { return r.schedSL }},
	{label: "apiserver+etcd CPU-ms/pod, f→l", prec: 2, get: func(r result) float64 { return r.ctlFL }},
	{label: "apiserver+etcd CPU-ms/pod, s→l", prec: 2, get: func(r result) float64 { return r.ctlSL }},
	{label: "start→ready, s", prec: 2, get: func(r result) float64 {
		if r.startReady == 0 {
			return math.NaN()
		}
		return r.startReady.Seconds()
	}},
	{label: "scheduling attempts/pod", prec: 2, get: func(r result) float64 { return r.attemptsPerPod }},
	{label: "pods placed by batching", prec: 0, get: func(r result) float64 { return r.batched }},
	{label: "peak RSS, MiB", prec: 0, get: func(r result) float64 { return float64(r.peakRSSMiB) }},
	{label: "RSS at the end: anon, MiB", prec: 0, get: func(r result) float64 { return float64(r.rssAnonMiB) }},
	{label: "RSS at the end: files, MiB", prec: 0, get: func(r result) float64 { return float64(r.rssFileMiB) }},
	{label: "gang span p50, ms", prec: 0, gang: true, get: func(r result) float64 { return ms(r.gangSpanP50) }},
	{label: "gang span p99, ms", prec: 0, gang: true, get: func(r result) float64 { return ms(r.gangSpanP99) }},
	{label: "gangs on more than one rack", prec: 0, gang: true, get: func(r result) float64 { return r.multiRackGangs }},
	{label: "evicted pods per placed pod", prec: 2, preempt: true, get: func(r result) float64 { return r.evictedPerPod }},
	{label: "gangs left partly evicted", prec: 0, preempt: true, get: func(r result) float64 { return r.partialGangs }},
	{label: "speed gauge: 16 MiB walk, ms", prec: 1, get: func(r result) float64 { return r.speed.walk }},
	{label: "speed gauge: hashing, ms", prec: 1, get: func(r result) float64 { return r.speed.hash }},
	{label: "Unreserve count", prec: 0, get: func(r result) float64 {
		v, err := strconv.ParseFloat(strings.Fields(r.unreserved + " x")[0], 64)
		if err != nil {
			return math.NaN()
		}
		return v
	}},
}

// pairedRatios returns, for the repetitions both arms ran, the ratio of a's figure
// to b's in the same repetition. The arms of one repetition run one after the other, so
// whatever else slows the machine for a few minutes weighs on both sides of each ratio,
// which the ratio of two medians taken over the whole invocation does not cancel.
func pairedRatios(a, b []result, m metric) []float64 {
	byRep := map[int]float64{}
	for _, r := range b {
		byRep[r.rep] = m.get(r)
	}
	var ratios []float64
	for _, r := range a {
		if d, ok := byRep[r.rep]; ok && d > 0 && m.get(r) > 0 {
			ratios = append(ratios, m.get(r)/d)
		}
	}
	return ratios
}

// trimmedGeoMean is the geometric mean of ratios without the lowest and the highest
// (with five or more of them). Noise on a shared machine multiplies a run's cost, so
// the mean is taken of logarithms; a stretch of noise that hits one run of one arm
// makes one extreme ratio, which is left out. Uses every other run fully, where the
// median uses one or two.
func trimmedGeoMean(ratios []float64) float64 {
	var logs []float64
	for _, r := range ratios {
		if r > 0 && !math.IsNaN(r) && !math.IsInf(r, 0) {
			logs = append(logs, math.Log(r))
		}
	}
	if len(logs) == 0 {
		return math.NaN()
	}
	sort.Float64s(logs)
	if len(logs) >= 5 {
		logs = logs[1 : len(logs)-1]
	}
	sum := 0.0
	for _, l := range logs {
		sum += l
	}
	return math.Exp(sum / float64(len(logs)))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// comparisons are the metrics whose kubenexus/other ratios the report prints.
var comparisons = []int{0, 1, 2, 3, 4}

func report(rs []result, wls []workload, arms []arm) {
	for _, w := range wls {
		by := map[string][]result{}
		for _, r := range rs {
			if r.workload == w.name {
				by[r.arm] = append(by[r.arm], r)
			}
		}
		var present []string
		for _, a := range arms {
			if len(by[a.name]) > 0 {
				present = append(present, a.name)
			}
		}
		if len(present) == 0 {
			continue
		}
		st := func(arm string, m metric) stats {
			var vs []float64
			for _, r := range by[arm] {
				vs = append(vs, m.get(r))
			}
			return summarize(vs)
		}
		fmt.Printf("\n%s: %s; %d run(s) per arm; median [min–max]; CPU time is counted in ticks of %s, i.e. %.3f CPU-ms/pod here\n",
			w.name, w.desc, len(by[present[0]]), time.Second/time.Duration(clockTicks), float64(time.Second/time.Duration(clockTicks))/float64(time.Millisecond)/float64(w.pods))
		fmt.Printf("%-32s", "")
		for _, a := range present {
			fmt.Printf("  %-22s", a)
		}
		fmt.Println()
		for _, m := range metrics {
			if m.gang && w.gangSize == 0 || m.preempt && !w.preempt {
				continue
			}
			fmt.Printf("%-32s", m.label)
			for _, a := range present {
				fmt.Printf("  %-22s", st(a, m).cell(m.prec))
			}
			fmt.Println()
		}
		if len(by["kubenexus"]) > 0 {
			for _, other := range []string{"stock", "stock-gang", "scheduler-plugins"} {
				if len(by[other]) == 0 {
					continue
				}
				fmt.Printf("kubenexus/%s: ratio of medians; median [min–max] of the per-run ratios (run r of both arms, back to back); their geometric mean without the lowest and highest:\n", other)
				for _, i := range comparisons {
					m := metrics[i]
					k, o := st("kubenexus", m), st(other, m)
					if !k.ok() || !o.ok() || o.med == 0 {
						continue
					}
					verdict := "ranges disjoint"
					switch {
					case k.n < 2 || o.n < 2:
						verdict = "one run: no spread to judge by"
					case k.overlaps(o):
						verdict = "no measurable difference (min–max ranges overlap)"
					}
					ratios := pairedRatios(by["kubenexus"], by[other], m)
					fmt.Printf("  %-32s %5.2f  per run %-18s  geo-mean %s  %s\n", m.label, k.med/o.med, summarize(ratios).cell(2), f2(trimmedGeoMean(ratios)), verdict)
				}
			}
		}
		for _, binder := range []string{"null-binder", "null-binder-events"} {
			nb := st(binder, metrics[0])
			if !nb.ok() || nb.med <= 0 {
				continue
			}
			what := "this apiserver's binding limit"
			if binder == "null-binder-events" {
				what = "the limit with an Event per pod"
			}
			fmt.Printf("fraction of the %s arm's pods/s (%s), medians:", binder, what)
			for _, a := range present {
				if a != binder {
					fmt.Printf("  %s %.2f", a, st(a, metrics[0]).med/nb.med)
				}
			}
			fmt.Println()
		}
		reportAPICalls(by, present)
		if w.gangSize > 0 && len(by["stock"]) > 0 {
			fmt.Println("(the stock and null-binder arms treat gang members as plain pods: their gang span is queue order)")
		}
	}
	var walk, hash []float64
	for _, r := range rs {
		walk, hash = append(walk, r.speed.walk), append(hash, r.speed.hash)
	}
	if w, h := summarize(walk), summarize(hash); w.ok() && w.min > 0 && h.min > 0 {
		fmt.Printf("\nspeed gauge before each of the %d runs (same work every time, scheduler's CPU): 16 MiB walk %s ms (max/min %.2f), hashing %s ms (max/min %.2f)\n",
			w.n, w.cell(1), w.max/w.min, h.cell(1), h.max/h.min)
		if h.max/h.min > 1.1 {
			fmt.Println("  the CPU's own speed (hashing) moved by more than 10% during the invocation: expect ratios to move between invocations too")
		}
		// Does the gauge predict a run's cost? Each run's scheduler CPU-ms/pod relative
		// to its arm's median for the workload, against the gauge before it.
		medians := map[[2]string][]float64{}
		for _, r := range rs {
			k := [2]string{r.workload, r.arm}
			medians[k] = append(medians[k], headlineCPU(r))
		}
		var rel, rw, rh []float64
		for _, r := range rs {
			if m := summarize(medians[[2]string{r.workload, r.arm}]).med; m > 0 && !math.IsNaN(headlineCPU(r)) {
				rel, rw, rh = append(rel, headlineCPU(r)/m), append(rw, r.speed.walk), append(rh, r.speed.hash)
			}
		}
		fmt.Printf("  correlation with each run's scheduler CPU-ms/pod over its arm's median: walk r = %s, hashing r = %s\n", f2(pearson(rw, rel)), f2(pearson(rh, rel)))
	}
	// The cross-workload comparison the README has always quoted.
	med := func(wl, arm string) float64 {
		var vs []float64
		for _, r := range rs {
			if r.workload == wl && r.arm == arm {
				vs = append(vs, r.podsPerSec)
			}
		}
		return summarize(vs).med
	}
	if k, s := med("W2", "kubenexus"), med("W1", "stock"); k > 0 && s > 0 {
		fmt.Printf("\nW2 kubenexus gang throughput vs stock W1 plain-pod throughput (medians): %.2f\n", k/s)
	}
	if r, g := med("W5", "kubenexus"), med("W2", "kubenexus"); r > 0 && g > 0 {
		fmt.Printf("W5 (gangs of 8, required: rack) vs W2 (gangs of 8) kubenexus throughput (medians): %.2f\n", r/g)
	}
}

// headlineCPU is the scheduler CPU-ms/pod a workload's ratios are read from: ready→last
// for W4, whose first binding waits for the whole gang, first→last for the others.
func headlineCPU(r result) float64 {
	if r.workload == "W4" {
		return r.schedRL
	}
	return r.schedFL
}

// pearson is the correlation coefficient of xs and ys (NaN with fewer than three
// pairs or no variance).
func pearson(xs, ys []float64) float64 {
	n := len(xs)
	if n < 3 || len(ys) != n {
		return math.NaN()
	}
	var mx, my float64
	for i := range n {
		mx += xs[i] / float64(n)
		my += ys[i] / float64(n)
	}
	var sxy, sxx, syy float64
	for i := range n {
		dx, dy := xs[i]-mx, ys[i]-my
		sxy, sxx, syy = sxy+dx*dy, sxx+dx*dx, syy+dy*dy
	}
	if sxx == 0 || syy == 0 {
		return math.NaN()
	}
	return sxy / math.Sqrt(sxx*syy)
}
