package main

import (
	"math"
	"testing"

	"github.com/kube-nexus/kubenexus/scheduler/placement"
)

func TestPackedSharesLeavesTheCrumbsOfHindsight(t *testing.T) {
	// One whole-GPU shape: every free share of a partly used card is fragmented.
	whole := placement.Demand{{GPUs: 1, Weight: 1}}
	// 0.85 with 0.1 (0.05 left), 0.45 with 0.45 (0.1 left): 0.15 GPUs of crumbs, where
	// the arrival order 0.45, 0.85, 0.45, 0.1 placed first fit would leave 0.15 + 0.05.
	got := packedShares([]int64{450, 850, 450, 100}, whole)
	if math.Abs(got-0.15) > 1e-9 {
		t.Fatalf("packedShares = %v GPUs, want 0.15", got)
	}
	// A demand of 0.05 shares can use every crumb: nothing is fragmented.
	if got := packedShares([]int64{450, 850, 450, 100}, placement.Demand{{Share: 50, Weight: 1}}); got != 0 {
		t.Fatalf("packedShares against 0.05 shares = %v GPUs, want 0", got)
	}
}

func TestFirstFitTakesTheDevicesTheAllocatorWould(t *testing.T) {
	wholeGPUs = false
	u := newUsage([]traceNode{{name: "n", cpuMilli: 64000, mib: 1 << 20, gpus: 4}})
	u.devices[0] = []int64{700, 0, 200, 0}
	for _, tc := range []struct {
		t    task
		want []int
	}{
		{task{gpus: 1, fractional: true, milli: 300}, []int{0}},
		{task{gpus: 1, fractional: true, milli: 500}, []int{1}},
		{task{gpus: 2}, []int{1, 3}},
		{task{gpus: 3}, nil},
		{task{}, nil},
	} {
		got := u.firstFit(0, tc.t)
		if len(got) != len(tc.want) || (len(got) > 0 && (got[0] != tc.want[0] || got[len(got)-1] != tc.want[len(tc.want)-1])) {
			t.Errorf("firstFit(%+v) = %v, want %v", tc.t, got, tc.want)
		}
	}
	r := u.roomWith(0, task{gpus: 1, fractional: true, milli: 300, cpuMilli: 4000}, []int{0})
	if r.GPUs != 2 || len(r.Partial) != 1 || r.Partial[0] != 800 || r.MilliCPU != 60000 {
		t.Fatalf("room after a 0.3 share on the 0.7-used card = %+v, want 2 whole GPUs, one card 0.8 free, 60 CPUs", r)
	}
}
