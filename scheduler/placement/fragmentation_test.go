package placement

import (
	"math"
	"testing"
)

func TestFragmentation(t *testing.T) {
	// A quarter 1-GPU tasks, half 4-GPU, a quarter 8-GPU; each asks 1 CPU per GPU.
	d := Demand{{GPUs: 1, Weight: 1, MilliCPU: 1000}, {GPUs: 4, Weight: 2, MilliCPU: 4000}, {GPUs: 8, Weight: 1, MilliCPU: 8000}}
	room := func(gpus int64) Room { return Room{GPUs: gpus, MilliCPU: 64000, Memory: 1 << 40} }
	tests := []struct {
		free int64
		want float64
	}{
		{8, 0},        // every task fits
		{4, 4 * 0.25}, // 8-GPU tasks cannot use its 4
		{3, 3 * 0.75}, // 4- and 8-GPU tasks cannot
		{0, 0},        // nothing free, nothing stranded
		{1, 1 * 0.75}, // only 1-GPU tasks fit
		{7, 7 * 0.25}, // a broken node strands 7 for the 8-GPU tasks
		{12, 0},       // larger than any task
		{2, 2 * 0.75}, // 4- and 8-GPU tasks cannot
		{5, 5 * 0.25}, // 8-GPU tasks cannot
		{6, 6 * 0.25}, // ditto
		{-1, 0},       // over-committed node: nothing free
	}
	for _, tc := range tests {
		if got := Fragmentation(room(tc.free), d); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("Fragmentation(%d) = %v, want %v", tc.free, got, tc.want)
		}
	}
	if got := Fragmentation(room(3), Demand{}); got != 0 {
		t.Errorf("no demand: %v, want 0", got)
	}
	// A 1-GPU task on a pristine node strands 7 for the 8-GPU quarter; on a node with
	// 2 free it strands less than the node already did.
	one := Room{GPUs: 1, MilliCPU: 1000}
	if a, b := FragmentationDelta(room(8), one, d), FragmentationDelta(room(2), one, d); !(b < a) {
		t.Errorf("delta on the broken node %v should be below the pristine node's %v", b, a)
	}
	// GPUs beside too little CPU are stranded too: 8 free GPUs and 3 CPUs serve only
	// the 1-GPU quarter.
	if got, want := Fragmentation(Room{GPUs: 8, MilliCPU: 3000, Memory: 1 << 40}, d), 8*0.75; math.Abs(got-want) > 1e-9 {
		t.Errorf("8 GPUs beside 3 CPUs: %v, want %v", got, want)
	}
}

func TestBreaks(t *testing.T) {
	queued := map[int64]int{8: 1}
	if !Breaks(8, 1, queued, map[int64]int{8: 1}) {
		t.Error("splitting the only node that hosts a queued 8-GPU pod should break it")
	}
	if Breaks(8, 1, queued, map[int64]int{8: 2}) {
		t.Error("with two hosts for one queued 8-GPU pod, splitting one leaves enough")
	}
	if Breaks(4, 1, queued, map[int64]int{8: 1}) {
		t.Error("a node that cannot host 8 GPUs takes nothing from the queued pod")
	}
}

func TestLargestGang(t *testing.T) {
	nodes := []GPUNode{
		{Free: 8, Domains: []string{"r1"}}, {Free: 8, Domains: []string{"r1"}}, {Free: 3, Domains: []string{"r1"}},
		{Free: 8, Domains: []string{"r2"}}, {Free: 4, Domains: []string{"r2"}}, {Free: 4, Domains: []string{""}},
	}
	for _, tc := range []struct {
		k, level, want int64
		domain         string
	}{
		{8, 0, 2, "r1"}, // two whole nodes in rack r1
		{4, 0, 4, "r1"}, // r1: 2+2+0; r2: 2+1
		{8, 1, 3, ""},   // anywhere: three whole nodes
		{1, 0, 19, "r1"},
	} {
		got, d := LargestGang(nodes, tc.k, int(tc.level))
		if got != tc.want || d != tc.domain {
			t.Errorf("k=%d level=%d: %d in %q, want %d in %q", tc.k, tc.level, got, d, tc.want, tc.domain)
		}
	}
}
