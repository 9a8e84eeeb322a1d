package main

import (
	"fmt"
	"math"
	"time"

	"github.com/kube-nexus/kubenexus/scheduler/placement"
)

// tally keeps one arm's account of a replay: which tasks were placed and refused,
// the node usage they leave, and the curves and marks the report prints.
type tally struct {
	r                  result
	usage              *usage
	demand             placement.Demand
	total              int64 // the cluster's GPUs, in thousandths
	arrived, allocated int64 // GPU demand so far and what of it was placed, in thousandths
	nextFrag           float64
	start              time.Time
	// shares are the fractional tasks' shares arrived before 90% of demand.
	shares []int64
}

func newTally(arm string, nodes []traceNode, tasks []task, totalGPUs int64) *tally {
	return &tally{
		r:      result{arm: arm, firstFailUnalloc: -1, at80: -1, at90: -1, at100: -1, frag90: -1},
		usage:  newUsage(nodes),
		demand: demandOf(tasks),
		total:  totalGPUs * 1000,
		start:  time.Now(),
	}
}

// each hands f the tasks in order until the GPUs asked for reach the cluster's,
// replaying the trace from its start (names suffixed -r1, -r2) up to twice more if
// it runs out first.
func (y *tally) each(tasks []task, f func(t task) error) error {
	for pass := 0; y.arrived < y.total && pass < 3; pass++ {
		for _, t := range tasks {
			if y.arrived >= y.total {
				return nil
			}
			if pass > 0 {
				t.name = fmt.Sprintf("%s-r%d", t.name, pass)
			}
			if err := f(t); err != nil {
				return err
			}
		}
	}
	return nil
}

// refused records a task the arm could not place, with its reason.
func (y *tally) refused(t task, message string) {
	y.r.failed++
	y.r.failures = append(y.r.failures, failure{task: t, unallocatedMilli: y.total - y.allocated, message: message})
	if t.gpus > 0 {
		y.r.gpuFailed++
		if y.r.firstFailUnalloc < 0 {
			y.r.firstFailUnalloc = y.total - y.allocated
			y.r.firstFail = fmt.Sprintf("%s (%s GPUs, %dm CPU, %d MiB)", t.name, gpusText(t.demandMilli()), t.cpuMilli, t.mib)
		}
	}
}

// placed records a task bound (its usage is already in y.usage).
func (y *tally) placed(t task) { y.allocated += t.demandMilli() }

// arrive counts the task once it was placed or refused: the arrived demand, the
// allocation curve, fragmentation once per percent of demand, and the marks.
func (y *tally) arrive(t task) {
	r := &y.r
	r.tasks++
	if t.fractional {
		r.fractionalTasks++
	}
	if t.gpus == 0 {
		return
	}
	y.arrived += t.demandMilli()
	if m := t.demandMilli(); m < 1000 && r.frag90 < 0 {
		y.shares = append(y.shares, m)
	}
	p := point{arrived: pct(y.arrived, y.total), allocated: pct(y.allocated, y.total), fragmented: -1}
	if p.arrived >= y.nextFrag {
		p.fragmented = y.usage.fragmented(y.demand)
		y.nextFrag = math.Floor(p.arrived) + 1
	}
	r.curve = append(r.curve, p)
	for _, mark := range []struct {
		at  float64
		dst *float64
	}{{80, &r.at80}, {90, &r.at90}, {100, &r.at100}} {
		if *mark.dst < 0 && p.arrived >= mark.at {
			*mark.dst = p.allocated
		}
	}
	if r.frag90 < 0 && p.arrived >= 90 {
		r.frag90 = y.usage.fragmented(y.demand)
		r.frag90Nodes = y.usage.nodeRows(y.demand)
		r.packedShares90 = packedShares(y.shares, y.demand)
	}
	if r.tasks%500 == 0 {
		fmt.Printf("  %s: %d tasks, demand %.0f%%, allocated %.1f%%, %d failed\n", r.arm, r.tasks, p.arrived, p.allocated, r.failed)
	}
}

// finish closes the account and prints its line.
func (y *tally) finish() result {
	r := y.r
	r.podsPerSec = float64(r.tasks) / time.Since(y.start).Seconds()
	r.allocatedMilliAtStop = y.allocated
	r.largest8, _ = placement.LargestGang(y.usage.wholeFree(), 8, 0)
	fmt.Printf("%s: %d tasks (%d failed, %d of them GPU tasks); unallocated GPUs at the first GPU failure %s (%s); fragmented GPUs at 90%% demand %.1f; allocated at 100%% demand %.1f%%; %.1f pods/s\n",
		r.arm, r.tasks, r.failed, r.gpuFailed, gpusText(r.firstFailUnalloc), r.firstFail, r.frag90, r.at100, r.podsPerSec)
	return r
}
