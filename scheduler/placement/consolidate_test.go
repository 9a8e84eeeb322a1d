package placement

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func gpus(n int64) map[corev1.ResourceName]int64 { return map[corev1.ResourceName]int64{gpu: n} }

func all(n int) map[int]bool {
	m := map[int]bool{}
	for i := range n {
		m[i] = true
	}
	return m
}

// fragmented: four 8-GPU nodes, each running two 2-GPU pods that may move (4 GPUs
// free on each, 16 in all).
func fragmented() ([]Bin, []Movable) {
	var bins []Bin
	var movables []Movable
	for i, name := range []string{"n-0", "n-1", "n-2", "n-3"} {
		bins = append(bins, Bin{Name: name, Free: gpus(4)})
		for range 2 {
			movables = append(movables, Movable{Bin: i, Req: gpus(2), Homes: all(4), Cost: float64(100 * (i + 1))})
		}
	}
	return bins, movables
}

func TestConsolidateMovesTheFewestAndRehomesThem(t *testing.T) {
	bins, movables := fragmented()
	wants := []Want{{Req: gpus(8), Eligible: all(4)}, {Req: gpus(8), Eligible: all(4)}}
	m := Consolidate(bins, wants, movables, nil, nil)
	if m == nil {
		t.Fatal("no plan: two 8-GPU members fit 16 free GPUs once four 2-GPU pods move")
	}
	if len(m.Moved) != 4 {
		t.Fatalf("moved %v, want the 4 pods of two nodes", m.Moved)
	}
	emptied := map[int]bool{}
	for _, i := range m.Moved {
		emptied[movables[i].Bin] = true
	}
	for wi, b := range m.At {
		if !emptied[b] {
			t.Errorf("member %d on %s, which kept its pods", wi, bins[b].Name)
		}
	}
	for k, b := range m.To {
		if emptied[b] {
			t.Errorf("moved pod %d rehomed on %s, a node emptied for the gang", m.Moved[k], bins[b].Name)
		}
	}
	// The cheapest nodes go: n-0 and n-1 (cost 100 and 200 per pod).
	if m.Cost != 600 {
		t.Errorf("cost %v, want 600 (n-0's and n-1's pods)", m.Cost)
	}
}

func TestConsolidateRefuses(t *testing.T) {
	bins, movables := fragmented()
	three := []Want{{Req: gpus(8), Eligible: all(4)}, {Req: gpus(8), Eligible: all(4)}, {Req: gpus(8), Eligible: all(4)}}
	if m := Consolidate(bins, three, movables, nil, nil); m != nil {
		t.Errorf("three 8-GPU members on 16 free GPUs: planned %+v", m)
	}
	// The moved pods may run only where they are: none can be rehomed.
	for i := range movables {
		movables[i].Homes = map[int]bool{movables[i].Bin: true}
	}
	two := three[:2]
	if m := Consolidate(bins, two, movables, nil, nil); m != nil {
		t.Errorf("replacements with nowhere to go: planned %+v", m)
	}
	// A budget that lets no two pods go together.
	bins, movables = fragmented()
	one := func(set []int) bool { return len(set) <= 1 }
	if m := Consolidate(bins, two, movables, nil, one); m != nil {
		t.Errorf("allow refuses every pair: planned %+v", m)
	}
}

func TestConsolidateStaysInAScope(t *testing.T) {
	bins, movables := fragmented()
	wants := []Want{{Req: gpus(8), Eligible: all(4)}, {Req: gpus(8), Eligible: all(4)}}
	// Rack a = n-0, n-1; rack b = n-2, n-3. Room in one rack only: the pods of both
	// nodes of a rack move, to the other rack.
	scopes := []map[int]bool{{2: true, 3: true}, {0: true, 1: true}}
	m := Consolidate(bins, wants, movables, scopes, nil)
	if m == nil || len(m.Moved) != 4 {
		t.Fatalf("plan %+v, want 4 pods moved", m)
	}
	racks := map[bool]int{}
	for _, b := range m.At {
		racks[b < 2]++
	}
	if len(racks) != 1 {
		t.Errorf("members across racks: %v", m.At)
	}
	if m.At[0] >= 2 {
		t.Errorf("members in rack b (%v): rack a's pods cost less", m.At)
	}
}

func TestShortInTotal(t *testing.T) {
	bins, _ := fragmented()
	two := []Want{{Req: gpus(8), Eligible: all(4)}, {Req: gpus(8), Eligible: all(4)}}
	if ShortInTotal(bins, two) {
		t.Error("16 GPUs free in pieces: not short of two 8-GPU members in total")
	}
	if !ShortInTotal(bins, append(two, two[0])) {
		t.Error("16 GPUs free: short of three 8-GPU members")
	}
}
