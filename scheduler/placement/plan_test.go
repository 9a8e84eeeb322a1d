package placement

import (
	"fmt"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

const gpu corev1.ResourceName = "nvidia.com/gpu"

// fleet builds racks × perRack nodes of 8 GPUs and 64 CPUs; levels: tor (two per
// rack), rack, zone (one). used maps a node name to GPUs already in use.
func fleet(racks, perRack int, used map[string]int64) []PlanNode {
	var nodes []PlanNode
	for r := range racks {
		for i := range perRack {
			name := fmt.Sprintf("r%d-n%d", r, i)
			nodes = append(nodes, PlanNode{
				Name:    name,
				Domains: []string{fmt.Sprintf("r%d-tor%d", r, i*2/perRack), fmt.Sprintf("rack-%d", r), "zone-a"},
				Free:    map[corev1.ResourceName]int64{gpu: (8 - used[name]) * 1000, corev1.ResourceCPU: 64000, corev1.ResourcePods: 110000},
			})
		}
	}
	return nodes
}

func gpuMembers(n int, gpus int64) Shape {
	return Shape{Requests: map[corev1.ResourceName]int64{gpu: gpus * 1000, corev1.ResourceCPU: 8000, corev1.ResourcePods: 1000}, Count: n}
}

func TestCompute(t *testing.T) {
	const tor, rack, zone = 0, 1, 2
	tests := map[string]struct {
		nodes    []PlanNode
		shapes   []Shape
		maxLevel int
		spill    bool
		want     Plan
		short    *Shortage
		claimsOn []string // nodes the plan claims
	}{
		"a gang of two 8-GPU members fits one ToR": {
			nodes: fleet(2, 4, nil), shapes: []Shape{gpuMembers(2, 8)}, maxLevel: rack,
			want: Plan{Level: tor, Domains: []string{"r0-tor0"}, Fits: true, Placed: 2}, claimsOn: []string{"r0-n0", "r0-n1"},
		},
		"four 8-GPU members need a rack; the rack with a busy node does not hold them": {
			nodes: fleet(2, 4, map[string]int64{"r0-n2": 1}), shapes: []Shape{gpuMembers(4, 8)}, maxLevel: zone,
			want: Plan{Level: rack, Domains: []string{"rack-1"}, Fits: true, Placed: 4}, claimsOn: []string{"r1-n0", "r1-n1", "r1-n2", "r1-n3"},
		},
		"best fit: the rack left with the fewest free GPUs": {
			// rack-0's second ToR has 4 + 4 free GPUs: 4 × 2-GPU members fill it exactly,
			// where an empty ToR of rack-1 would be left with 8 free.
			nodes:  fleet(2, 4, map[string]int64{"r0-n0": 7, "r0-n1": 7, "r0-n2": 4, "r0-n3": 4}),
			shapes: []Shape{gpuMembers(4, 2)}, maxLevel: zone,
			want: Plan{Level: tor, Domains: []string{"r0-tor1"}, Fits: true, Placed: 4}, claimsOn: []string{"r0-n2", "r0-n3"},
		},
		"required rack with no rack big enough: the shortage names the best rack": {
			nodes: fleet(2, 4, nil), shapes: []Shape{gpuMembers(6, 8)}, maxLevel: rack,
			short: &Shortage{Level: rack, Need: 6, BestFits: 4, BestDomain: "rack-0"},
		},
		"preferred: spills over the fewest racks, largest first": {
			nodes: fleet(3, 4, map[string]int64{"r0-n0": 8, "r0-n1": 8, "r0-n2": 8}), shapes: []Shape{gpuMembers(7, 8)}, maxLevel: rack, spill: true,
			want:  Plan{Level: rack, Domains: []string{"rack-1", "rack-2"}, Fits: true, Placed: 7},
			short: &Shortage{Level: rack, Need: 7, BestFits: 4, BestDomain: "rack-1"},
		},
		"a driver and GPU executors: executors packed, the driver beside them": {
			nodes: fleet(2, 4, nil),
			shapes: []Shape{
				{Requests: map[corev1.ResourceName]int64{corev1.ResourceCPU: 4000}, Count: 1},
				gpuMembers(2, 8),
			},
			maxLevel: zone,
			want:     Plan{Level: tor, Domains: []string{"r0-tor0"}, Fits: true, Placed: 3}, claimsOn: []string{"r0-n0", "r0-n1"},
		},
		"members that keep off each other's node take one node each": {
			// 4 × 2-GPU members with hostname anti-affinity: without the bound they
			// would share one node of a ToR; with it they need a rack's four nodes.
			nodes: fleet(2, 4, nil), shapes: []Shape{func() Shape { s := gpuMembers(4, 2); s.MaxPerNode = 1; return s }()}, maxLevel: zone,
			want: Plan{Level: rack, Domains: []string{"rack-0"}, Fits: true, Placed: 4}, claimsOn: []string{"r0-n0", "r0-n1", "r0-n2", "r0-n3"},
		},
		"placed members anchor the plan to their rack, though another rack fits better": {
			// Two members already run on r1-n0 and r1-n1 (rack-1 is busier); the
			// remaining two join them in rack-1's other ToR rather than rack-0.
			nodes: anchored(fleet(2, 4, map[string]int64{"r1-n0": 8, "r1-n1": 8}), "r1-n0", "r1-n1"), shapes: []Shape{gpuMembers(2, 8)}, maxLevel: rack,
			want: Plan{Level: rack, Domains: []string{"rack-1"}, Fits: true, Placed: 2}, claimsOn: []string{"r1-n2", "r1-n3"},
		},
		"an anchored rack without room: the shortage names it": {
			nodes: anchored(fleet(2, 4, map[string]int64{"r1-n0": 8, "r1-n1": 8, "r1-n2": 8, "r1-n3": 4}), "r1-n0"), shapes: []Shape{gpuMembers(2, 8)}, maxLevel: rack,
			short: &Shortage{Level: rack, Need: 2, BestFits: 0, BestDomain: "", Anchored: "rack-1"},
		},
		"members placed in two racks: no single rack holds the gang": {
			nodes: anchored(fleet(2, 4, nil), "r0-n0", "r1-n0"), shapes: []Shape{gpuMembers(1, 8)}, maxLevel: rack,
			short: &Shortage{Level: rack, Need: 1, Spread: true},
		},
		"racks kept whole: the gang goes to the ToR of the rack already broken, not to an equally tight ToR of a whole rack": {
			// Without the racks kept whole, r0-tor0 and r1-tor1 tie (both left with
			// no free GPU) and the name picks r0-tor0, breaking rack-0.
			nodes: keptWhole(fleet(2, 4, map[string]int64{"r1-n0": 1}), rack), shapes: []Shape{gpuMembers(2, 8)}, maxLevel: zone,
			want: Plan{Level: tor, Domains: []string{"r1-tor1"}, Fits: true, Placed: 2}, claimsOn: []string{"r1-n2", "r1-n3"},
		},
		"racks kept whole: when only whole racks hold the gang, the plan strands what it leaves": {
			nodes: keptWhole(fleet(2, 4, map[string]int64{"r1-n0": 8, "r1-n1": 8, "r1-n2": 8, "r1-n3": 8}), rack), shapes: []Shape{gpuMembers(1, 8)}, maxLevel: zone,
			want: Plan{Level: tor, Domains: []string{"r0-tor0"}, Fits: true, Placed: 1, Stranded: 24000}, claimsOn: []string{"r0-n0"},
		},
		"preferred with anchors: the spill starts in the anchors' rack": {
			nodes: anchored(fleet(3, 2, map[string]int64{"r2-n0": 8}), "r2-n0"), shapes: []Shape{gpuMembers(3, 8)}, maxLevel: rack, spill: true,
			want:  Plan{Level: rack, Domains: []string{"rack-2", "rack-0"}, Fits: true, Placed: 3},
			short: &Shortage{Level: rack, Need: 3, BestFits: 1, BestDomain: "rack-2", Anchored: "rack-2"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, short := Compute(tc.nodes, tc.shapes, tc.maxLevel, tc.spill)
			if diff := cmp.Diff(tc.short, short); diff != "" {
				t.Errorf("shortage (-want +got):\n%s", diff)
			}
			claims := got.Claims
			got.Claims = nil
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			if tc.claimsOn != nil {
				var on []string
				for n := range claims {
					on = append(on, n)
				}
				if diff := cmp.Diff(tc.claimsOn, on, sortStrings); diff != "" {
					t.Errorf("claimed nodes (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// keptWhole marks each node's domain at level as kept whole, whole when every node
// of it has all 8 GPUs free.
func keptWhole(nodes []PlanNode, level int) []PlanNode {
	broken := map[string]bool{}
	for _, n := range nodes {
		if n.Free[gpu] < 8000 {
			broken[n.Domains[level]] = true
		}
	}
	for i := range nodes {
		nodes[i].KeepDomain = nodes[i].Domains[level]
		nodes[i].KeepWhole = !broken[nodes[i].KeepDomain]
	}
	return nodes
}

// anchored marks the named nodes as holding placed members of the gang.
func anchored(nodes []PlanNode, names ...string) []PlanNode {
	for i := range nodes {
		for _, n := range names {
			if nodes[i].Name == n {
				nodes[i].Anchor = true
			}
		}
	}
	return nodes
}

func TestIneligibleNodesAreNotPlanned(t *testing.T) {
	nodes := fleet(1, 4, nil)
	for i := range nodes {
		nodes[i].Eligible = []bool{i >= 2} // e.g. a node selector matches n2 and n3 only
	}
	got, _ := Compute(nodes, []Shape{gpuMembers(2, 8)}, 2, false)
	if got.Domains[0] != "r0-tor1" {
		t.Errorf("planned %v, want the ToR of the eligible nodes", got.Domains)
	}
}

func TestDescribeShortage(t *testing.T) {
	s := &Shortage{Level: 1, Need: 16, BestFits: 12}
	if got, want := s.Describe("rack", []Shape{gpuMembers(16, 8)}), "needs 16 members (16 × 8 nvidia.com/gpu) in one rack; the largest rack fits 12"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	s = &Shortage{Level: 1, Need: 2, BestFits: 1, Anchored: "rack/r7"}
	if got, want := s.Describe("rack", []Shape{gpuMembers(2, 8)}), "needs 2 more members (2 × 8 nvidia.com/gpu) in rack/r7, where its placed members run; it fits 1"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestDescribeShapesOfDRAGPUs(t *testing.T) {
	shapes := []Shape{
		{Count: 4, Requests: map[corev1.ResourceName]int64{corev1.ResourceCPU: 1000, DRAWholeGPUs: 2000, DRAGPUCapacity: 2000}},
		{Count: 2, Requests: map[corev1.ResourceName]int64{corev1.ResourceCPU: 1000, DRAGPUCapacity: 250}},
	}
	if got, want := DescribeShapes(shapes), "4 × 2 whole DRA GPUs + 2 × 0.25 of a DRA GPU"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// sortStrings compares string slices as sets.
var sortStrings = cmp.Transformer("sort", func(in []string) []string {
	out := append([]string(nil), in...)
	sort.Strings(out)
	return out
})

// BenchmarkCompute plans a gang of 8 × 8-GPU members over 5000 nodes in 100 racks of
// two ToRs, 10 zones, with a quarter of the GPUs in use.
func BenchmarkCompute(b *testing.B) {
	var nodes []PlanNode
	for i := range 5000 {
		rack := i / 50
		nodes = append(nodes, PlanNode{
			Name:    fmt.Sprintf("n%d", i),
			Domains: []string{"", fmt.Sprintf("r%d-t%d", rack, (i%50)/25), fmt.Sprintf("r%d", rack), fmt.Sprintf("z%d", rack/10)},
			Free:    map[corev1.ResourceName]int64{gpu: int64(8-(i%4)*2) * 1000, corev1.ResourceCPU: 64000, corev1.ResourcePods: 110000},
		})
	}
	shapes := []Shape{gpuMembers(8, 8)}
	b.ReportAllocs()
	for b.Loop() {
		if p, _ := Compute(nodes, shapes, 3, true); !p.Fits {
			b.Fatal("no plan")
		}
	}
}
