package placement

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-nexus/kubenexus/api/topology"
)

// Levels of the multi-layer fleet: NVLink domain, block, zone.
const sliceNVLink, sliceBlock, sliceZone = 0, 1, 2

var sliceLevels = []topology.Level{{Name: "nvlink"}, {Name: "block"}, {Name: "zone"}}

func sliceLevelName(l int) string { return sliceLevels[l].Name }

// layeredFleet is Kueue #9046's fleet: zones × 4 blocks × 8 NVLink domains × 4 nodes
// of 8 GPUs (512 nodes with 4 zones). used maps a node name to GPUs in use.
func layeredFleet(zones int, used func(name string) int64) []PlanNode {
	var nodes []PlanNode
	for z := range zones {
		for b := range 4 {
			for d := range 8 {
				for i := range 4 {
					name := fmt.Sprintf("z%d-b%d-d%d-n%d", z, b, d, i)
					nodes = append(nodes, PlanNode{
						Name:    name,
						Domains: []string{fmt.Sprintf("z%d-b%d-d%d", z, b, d), fmt.Sprintf("z%d-b%d", z, b), fmt.Sprintf("z%d", z)},
						Free:    map[corev1.ResourceName]int64{gpu: (8 - used(name)) * 1000, corev1.ResourceCPU: 64000, corev1.ResourcePods: 110000},
					})
				}
			}
		}
	}
	return nodes
}

var kueue9046 = []Slice{{Level: sliceBlock, Size: 48}, {Level: sliceNVLink, Size: 16}}

// checkSlices fails unless the plan's claims put count members in one domain of
// level, every domain of each slice layer holding a multiple of its size.
func checkSlices(t *testing.T, nodes []PlanNode, plan Plan, per int64, count, level int, slices []Slice) {
	t.Helper()
	byName := map[string]*PlanNode{}
	for i := range nodes {
		byName[nodes[i].Name] = &nodes[i]
	}
	total := 0
	outer := map[string]bool{}
	perDomain := make([]map[string]int, len(slices))
	for k := range perDomain {
		perDomain[k] = map[string]int{}
	}
	for name, c := range plan.Claims {
		n := byName[name]
		members := int(c[gpu] / per)
		total += members
		outer[n.Domain(level)] = true
		for k, s := range slices {
			perDomain[k][n.Domain(s.Level)] += members
		}
	}
	if total != count || len(outer) != 1 {
		t.Fatalf("plan claims %d members in %d %ss, want %d in one", total, len(outer), sliceLevelName(level), count)
	}
	for k, s := range slices {
		for d, m := range perDomain[k] {
			if m%s.Size != 0 {
				t.Errorf("%s %s holds %d members: not a multiple of its slice size %d", sliceLevelName(s.Level), d, m, s.Size)
			}
		}
	}
}

func TestComputeSliced(t *testing.T) {
	none := func(string) int64 { return 0 }
	t.Run("Kueue #9046: 96 in one zone, 48 per block, 16 per NVLink domain", func(t *testing.T) {
		nodes := layeredFleet(4, none)
		plan, short := ComputeSliced(nodes, gpuMembers(96, 2), sliceZone, true, kueue9046)
		if short != nil {
			t.Fatalf("refused: %s", short.Describe(sliceLevels, kueue9046, gpuMembers(96, 2)))
		}
		checkSlices(t, nodes, plan, 2000, 96, sliceZone, kueue9046)
	})
	t.Run("Kueue #9046: the innermost slices in nested order, for ranks", func(t *testing.T) {
		nodes := layeredFleet(4, none)
		plan, short := ComputeSliced(nodes, gpuMembers(96, 2), sliceZone, true, kueue9046)
		if short != nil {
			t.Fatalf("refused: %+v", short)
		}
		// Members taken in the plan's order: ranks 0–15, 16–31, … each in one NVLink
		// domain, and ranks 0–47 and 48–95 each in one block.
		domainOf := map[string][]string{}
		for _, n := range nodes {
			domainOf[n.Name] = n.Domains
		}
		rank := 0
		inner, outer := map[int]map[string]bool{}, map[int]map[string]bool{}
		for _, d := range plan.Ranked {
			for range d.Members {
				if inner[rank/16] == nil {
					inner[rank/16] = map[string]bool{}
				}
				if outer[rank/48] == nil {
					outer[rank/48] = map[string]bool{}
				}
				for _, n := range d.Nodes {
					inner[rank/16][domainOf[n][sliceNVLink]] = true
					outer[rank/48][domainOf[n][sliceBlock]] = true
				}
				rank++
			}
		}
		if rank != 96 {
			t.Fatalf("the ranked domains hold %d members, want 96", rank)
		}
		for r, ds := range inner {
			if len(ds) != 1 {
				t.Errorf("ranks %d–%d span NVLink domains %v, want one", r*16, r*16+15, ds)
			}
		}
		for r, ds := range outer {
			if len(ds) != 1 {
				t.Errorf("ranks %d–%d span blocks %v, want one", r*48, r*48+47, ds)
			}
		}
	})
	t.Run("half-used NVLink domains: slices still whole", func(t *testing.T) {
		// In every NVLink domain, two nodes are full: 8 members fit, half a slice.
		// Only zone z3 has whole ones.
		nodes := layeredFleet(4, func(name string) int64 {
			if !strings.HasPrefix(name, "z3-") && (strings.HasSuffix(name, "-n0") || strings.HasSuffix(name, "-n1")) {
				return 8
			}
			return 0
		})
		plan, short := ComputeSliced(nodes, gpuMembers(96, 2), sliceZone, true, kueue9046)
		if short != nil {
			t.Fatalf("refused: %+v", short)
		}
		checkSlices(t, nodes, plan, 2000, 96, sliceZone, kueue9046)
		if plan.Domains[0] != "z3" {
			t.Errorf("planned in %v, want z3 (the only zone with whole NVLink domains)", plan.Domains)
		}
	})
	t.Run("fragmented NVLink domains: refused naming the layer", func(t *testing.T) {
		// One GPU used on one node of every NVLink domain: 15 members fit each,
		// 240 in a block — enough in total, but no slice of 16.
		nodes := layeredFleet(4, func(name string) int64 {
			if strings.HasSuffix(name, "-n0") {
				return 1
			}
			return 0
		})
		shape := gpuMembers(96, 2)
		_, short := ComputeSliced(nodes, shape, sliceZone, true, kueue9046)
		if short == nil {
			t.Fatal("planned, want refused")
		}
		got := short.Describe(sliceLevels, kueue9046, shape)
		want := "needs 96 members (96 × 2 nvidia.com/gpu) in one zone, in slices of 48 in one block, of 16 in one nvlink; z0 holds 0 of the 6 slices of 16 in one nvlink"
		if got != want {
			t.Errorf("shortage:\n got %s\nwant %s", got, want)
		}
	})
	t.Run("blocks short of NVLink slices: refused naming the block layer", func(t *testing.T) {
		// Two whole NVLink domains per block: 2 slices of 16 where a block slice
		// needs 3; a zone holds 8 slices of 16 (more than the 6 needed) but no 48.
		nodes := layeredFleet(4, func(name string) int64 {
			if strings.Contains(name, "-d0-") || strings.Contains(name, "-d1-") {
				return 0
			}
			return 8
		})
		shape := gpuMembers(96, 2)
		_, short := ComputeSliced(nodes, shape, sliceZone, true, kueue9046)
		if short == nil {
			t.Fatal("planned, want refused")
		}
		if short.Layer != 0 || short.Need != 2 || short.Best != 0 {
			t.Errorf("shortage %+v, want layer 0 (block), 0 of 2", short)
		}
		if got := short.Describe(sliceLevels, kueue9046, shape); !strings.Contains(got, "holds 0 of the 2 slices of 48 in one block") {
			t.Errorf("shortage says %q", got)
		}
	})
	t.Run("preferred: the lowest level that holds the slices", func(t *testing.T) {
		nodes := layeredFleet(2, none)
		slices := []Slice{{Level: sliceNVLink, Size: 16}}
		plan, short := ComputeSliced(nodes, gpuMembers(32, 2), sliceZone, false, slices)
		if short != nil {
			t.Fatalf("refused: %+v", short)
		}
		if plan.Level != sliceNVLink && plan.Level != sliceBlock {
			t.Errorf("planned at level %d, want the NVLink or block level", plan.Level)
		}
		checkSlices(t, nodes, plan, 2000, 32, plan.Level, slices)
	})
	t.Run("repair: a lost member goes back to its NVLink slice", func(t *testing.T) {
		nodes := layeredFleet(1, none)
		// 15 members placed in z0-b1-d3, one pending; other domains are emptier.
		for i := range nodes {
			if strings.HasPrefix(nodes[i].Name, "z0-b1-d3-") {
				nodes[i].Placed = 4
				nodes[i].Free[gpu] = 0
				if strings.HasSuffix(nodes[i].Name, "-n3") {
					nodes[i].Placed = 3
					nodes[i].Free[gpu] = 2000
				}
			}
		}
		slices := []Slice{{Level: sliceNVLink, Size: 16}}
		plan, short := ComputeSliced(nodes, gpuMembers(1, 2), sliceZone, true, slices)
		if short != nil {
			t.Fatalf("refused: %+v", short)
		}
		if _, ok := plan.Claims["z0-b1-d3-n3"]; !ok || len(plan.Claims) != 1 {
			t.Errorf("claims %v, want the one free slot of z0-b1-d3", plan.Claims)
		}
	})
}
