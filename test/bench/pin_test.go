package main

import (
	"slices"
	"testing"
)

func TestSplitCPUs(t *testing.T) {
	for _, tc := range []struct {
		cpus        []int
		rest, sched []int
	}{
		{cpus: nil, rest: nil, sched: nil},
		{cpus: []int{3}, rest: []int{3}, sched: nil},
		{cpus: []int{0, 1}, rest: []int{0}, sched: []int{1}},
		{cpus: []int{0, 1, 2}, rest: []int{0, 1}, sched: []int{2}},
		{cpus: []int{0, 2, 4, 6}, rest: []int{0, 2}, sched: []int{4, 6}},
	} {
		rest, sched := splitCPUs(tc.cpus)
		if !slices.Equal(rest, tc.rest) || !slices.Equal(sched, tc.sched) {
			t.Errorf("splitCPUs(%v) = %v, %v; want %v, %v", tc.cpus, rest, sched, tc.rest, tc.sched)
		}
	}
}
