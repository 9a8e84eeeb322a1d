package main

import (
	"math"
	"testing"
)

func TestPairedRatio(t *testing.T) {
	cpu := metrics[2] // sched CPU-ms/pod, first→last
	run := func(rep int, v float64) result { return result{rep: rep, schedFL: v} }
	kubenexus := []result{run(0, 1), run(1, 3), run(2, 2), run(3, 5), run(4, math.NaN())}
	stock := []result{run(0, 2), run(1, 4), run(2, 2) /* rep 3 never ran */, run(4, 1)}

	got := summarize(pairedRatios(kubenexus, stock, cpu))
	// rep 0: 0.5, rep 1: 0.75, rep 2: 1; rep 3 has no partner, rep 4 no figure.
	want := stats{med: 0.75, min: 0.5, max: 1, n: 3}
	if got != want {
		t.Errorf("pairedRatios = %+v, want %+v", got, want)
	}
	if got.cell(2) != "0.75 [0.50–1.00]" {
		t.Errorf("cell = %q", got.cell(2))
	}

	// A partner with no CPU recorded (0) contributes no ratio rather than +Inf.
	if got := summarize(pairedRatios([]result{run(0, 1)}, []result{run(0, 0)}, cpu)); got.ok() {
		t.Errorf("pairedRatios against a zero figure = %+v, want no ratios", got)
	}
}

func TestTrimmedGeoMean(t *testing.T) {
	tests := map[string]struct {
		ratios []float64
		want   float64
	}{
		"five: the lowest and highest are left out": {ratios: []float64{4, 1, 0.5, 1, 1}, want: 1},
		"geometric, not arithmetic":                 {ratios: []float64{0.5, 2, 1, 0.25, 4}, want: 1},
		"fewer than five: all count":                {ratios: []float64{2, 8}, want: 4},
		"no usable ratio":                           {ratios: []float64{0, math.NaN(), math.Inf(1)}, want: math.NaN()},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := trimmedGeoMean(tc.ratios)
			if math.IsNaN(tc.want) != math.IsNaN(got) || !math.IsNaN(got) && math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("trimmedGeoMean(%v) = %v, want %v", tc.ratios, got, tc.want)
			}
		})
	}
}

func TestPearson(t *testing.T) {
	if got := pearson([]float64{1, 2, 3, 4}, []float64{2, 4, 6, 8}); math.Abs(got-1) > 1e-9 {
		t.Errorf("perfectly correlated: r = %v", got)
	}
	if got := pearson([]float64{1, 2, 3, 4}, []float64{8, 6, 4, 2}); math.Abs(got+1) > 1e-9 {
		t.Errorf("perfectly anti-correlated: r = %v", got)
	}
	if got := pearson([]float64{1, 2, 3}, []float64{5, 5, 5}); !math.IsNaN(got) {
		t.Errorf("no variance: r = %v, want NaN", got)
	}
}
