package placement

import (
	"math"
	"testing"
)

func TestFragmentation(t *testing.T) {
	d := Demand{1: 1, 4: 2, 8: 1} // a quarter 1-GPU tasks, half 4-GPU, a quarter 8-GPU
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
		if got := Fragmentation(tc.free, d); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("Fragmentation(%d) = %v, want %v", tc.free, got, tc.want)
		}
	}
	if got := Fragmentation(3, Demand{}); got != 0 {
		t.Errorf("no demand: %v, want 0", got)
	}
	// A 1-GPU task on a pristine node strands 7 for the 8-GPU quarter; on a node with
	// 2 free it strands less than the node already did.
	if a, b := FragmentationDelta(8, 1, d), FragmentationDelta(2, 1, d); !(b < a) {
		t.Errorf("delta on the broken node %v should be below the pristine node's %v", b, a)
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
