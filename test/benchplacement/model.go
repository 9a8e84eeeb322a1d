package main

import (
	"math"
	"slices"

	"github.com/kube-nexus/kubenexus/scheduler/placement"
)

// fgdModel is the arm that places the tasks in-process, with no API server or
// scheduler, by FGD's own policy: each task on the node where it raises the
// fragmentation measure least, against the trace's whole task mix (the measure the
// report prints), its GPUs the devices kube-scheduler's DRA allocator would give it.
// It is the reference a real scheduler's figures are read against: what the
// published policy reaches with perfect knowledge of the mix to come.
const fgdModel = "fgd-model"

// replayModel replays the tasks through the FGD policy.
func replayModel(nodes []traceNode, tasks []task, totalGPUs int64) result {
	y := newTally(fgdModel, nodes, tasks, totalGPUs)
	u := y.usage
	frag := make([]float64, len(nodes))
	for i := range nodes {
		frag[i] = placement.Fragmentation(u.room(i), y.demand)
	}
	_ = y.each(tasks, func(t task) error {
		best, bestDelta := -1, math.Inf(1)
		var bestDevs []int
		for i, n := range nodes {
			if t.cpuMilli > n.cpuMilli-u.cpu[i] || t.mib > n.mib-u.mib[i] || (len(t.models) > 0 && !slices.Contains(t.models, n.model)) {
				continue
			}
			devs := u.firstFit(i, t)
			if t.gpus > 0 && devs == nil {
				continue
			}
			if d := placement.Fragmentation(u.roomWith(i, t, devs), y.demand) - frag[i]; d < bestDelta {
				best, bestDelta, bestDevs = i, d, devs
			}
		}
		if best < 0 {
			y.refused(t, "no node has room for it")
		} else {
			u.take(best, t, bestDevs)
			frag[best] = placement.Fragmentation(u.room(best), y.demand)
			y.placed(t)
		}
		y.arrive(t)
		return nil
	})
	return y.finish()
}

// roomWith is node i's free room were task t placed there on devs.
func (u *usage) roomWith(i int, t task, devs []int) placement.Room {
	n := u.nodes[i]
	r := placement.Room{MilliCPU: n.cpuMilli - u.cpu[i] - t.cpuMilli, Memory: (n.mib - u.mib[i] - t.mib) << 20, Partial: []int64{}}
	share := min(t.demandMilli(), 1000)
	for d, used := range u.devices[i] {
		if slices.Contains(devs, d) {
			used += share
		}
		switch {
		case used <= 0:
			r.GPUs++
		case used < 1000:
			r.Partial = append(r.Partial, 1000-used)
		}
	}
	return r
}

// packedShares is the fragmented GPUs that the shares alone leave when packed with
// hindsight: first-fit decreasing onto as few cards as that finds, CPU and memory
// ignored, each partly used card measured on its own against demand. Crumbs a share
// leaves that only smaller shares could fill remain even then; it is what an online
// placement of the same shares is read against (an offline packing, not a proven
// bound).
func packedShares(shares []int64, demand placement.Demand) float64 {
	sorted := slices.Clone(shares)
	slices.SortFunc(sorted, func(a, b int64) int { return int(b - a) })
	var cards []int64
	for _, s := range sorted {
		i := slices.IndexFunc(cards, func(used int64) bool { return used+s <= 1000 })
		if i < 0 {
			cards = append(cards, s)
		} else {
			cards[i] += s
		}
	}
	var f float64
	for _, used := range cards {
		if used < 1000 {
			f += placement.Fragmentation(placement.Room{Partial: []int64{1000 - used}, MilliCPU: math.MaxInt64 / 2, Memory: math.MaxInt64 / 2}, demand)
		}
	}
	return f
}
