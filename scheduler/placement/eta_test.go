package placement

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestEarliestStart(t *testing.T) {
	const rack = 1
	t0 := time.Date(2026, 11, 27, 1, 0, 0, 0, time.UTC)
	gpus := func(n int64) map[corev1.ResourceName]int64 {
		return map[corev1.ResourceName]int64{gpu: n * 1000, corev1.ResourceCPU: 8000, corev1.ResourcePods: 1000}
	}
	// Two racks of two nodes; every GPU of rack 0 and six of each node of rack 1 in use.
	used := map[string]int64{"r0-n0": 8, "r0-n1": 8, "r1-n0": 6, "r1-n1": 6}
	index := func(nodes []PlanNode, name string) int {
		for i := range nodes {
			if nodes[i].Name == name {
				return i
			}
		}
		t.Fatalf("no node %s", name)
		return -1
	}
	tests := map[string]struct {
		releases []func(nodes []PlanNode) Release
		shapes   []Shape
		wantOK   bool
		wantAt   time.Time
		wantDom  string
	}{
		"nothing bounded: unknown": {shapes: []Shape{gpuMembers(2, 8)}},
		"the gang needs both pods of rack 1 to end; the later end is its start": {
			releases: []func([]PlanNode) Release{
				func(n []PlanNode) Release {
					return Release{At: t0.Add(30 * time.Minute), Node: index(n, "r1-n1"), Frees: gpus(6)}
				},
				func(n []PlanNode) Release {
					return Release{At: t0.Add(10 * time.Minute), Node: index(n, "r1-n0"), Frees: gpus(6)}
				},
				func(n []PlanNode) Release {
					return Release{At: t0.Add(90 * time.Minute), Node: index(n, "r0-n0"), Frees: gpus(8)}
				},
			},
			shapes: []Shape{gpuMembers(2, 8)}, wantOK: true, wantAt: t0.Add(30 * time.Minute), wantDom: "rack-1",
		},
		"one rack must hold the gang: room freed in two racks is not enough until a rack is whole": {
			releases: []func([]PlanNode) Release{
				func(n []PlanNode) Release {
					return Release{At: t0.Add(5 * time.Minute), Node: index(n, "r1-n0"), Frees: gpus(6)}
				},
				func(n []PlanNode) Release {
					return Release{At: t0.Add(10 * time.Minute), Node: index(n, "r0-n0"), Frees: gpus(8)}
				},
				func(n []PlanNode) Release {
					return Release{At: t0.Add(20 * time.Minute), Node: index(n, "r0-n1"), Frees: gpus(8)}
				},
			},
			shapes: []Shape{gpuMembers(2, 8)}, wantOK: true, wantAt: t0.Add(20 * time.Minute), wantDom: "rack-0",
		},
		"bounded pods free too little: unknown": {
			releases: []func([]PlanNode) Release{
				func(n []PlanNode) Release {
					return Release{At: t0.Add(5 * time.Minute), Node: index(n, "r1-n0"), Frees: gpus(6)}
				},
			},
			shapes: []Shape{gpuMembers(2, 8)},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			nodes := fleet(2, 2, used)
			var releases []Release
			for _, r := range tc.releases {
				releases = append(releases, r(nodes))
			}
			before := nodes[index(nodes, "r1-n0")].Free[gpu]
			at, plan, ok := EarliestStart(nodes, tc.shapes, rack, releases)
			if ok != tc.wantOK || !at.Equal(tc.wantAt) {
				t.Fatalf("EarliestStart = %v, %v; want %v, %v", at, ok, tc.wantAt, tc.wantOK)
			}
			if ok && (len(plan.Domains) != 1 || plan.Domains[0] != tc.wantDom) {
				t.Errorf("plan domains = %v, want [%s]", plan.Domains, tc.wantDom)
			}
			if got := nodes[index(nodes, "r1-n0")].Free[gpu]; got != before {
				t.Errorf("EarliestStart changed the nodes it was given: free GPUs of r1-n0 %d, was %d", got, before)
			}
		})
	}
}
