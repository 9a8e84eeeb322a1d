package main

import "testing"

func TestSpeedGauge(t *testing.T) {
	g := newSpeedGauge()
	// The walk must be one cycle through all 16 MiB: a shorter cycle would sit in the
	// caches and measure nothing of the memory.
	i, steps := g.next[0], 1
	for ; i != 0; steps++ {
		i = g.next[i]
	}
	if steps != len(g.next) {
		t.Fatalf("the walk returns to its start after %d of %d entries", steps, len(g.next))
	}
	r, err := g.measure(cpuSplit{})
	if err != nil {
		t.Fatal(err)
	}
	if r.walk <= 0 || r.hash <= 0 {
		t.Fatalf("gauge reading %+v: want CPU time for both parts", r)
	}
	t.Logf("walk %.1f ms, hash %.1f ms", r.walk, r.hash)
}
