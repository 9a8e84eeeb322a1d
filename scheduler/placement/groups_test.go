package placement

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-nexus/kubenexus/api/topology"
)

// KAI's disaggregated-inference shape: prefill (2 × 8 GPUs) and decode (4 × 4 GPUs)
// each in one NVLink domain, both in one rack.
func TestComputeGroups(t *testing.T) {
	levels := []topology.Level{{Name: "nvlink"}, {Name: "rack"}}
	const nvlink, rack = 0, 1
	// rack-0: d0 and d1 of two 8-GPU nodes, d2 of two nodes with 4 GPUs free; rack-1:
	// one NVLink domain of two 8-GPU nodes.
	node := func(name, d, r string, free int64) PlanNode {
		return PlanNode{Name: name, Domains: []string{d, r}, Eligible: []bool{true, true},
			Free: map[corev1.ResourceName]int64{gpu: free * 1000, corev1.ResourceCPU: 64000, corev1.ResourcePods: 110000}}
	}
	var nodes []PlanNode
	for d, free := range []int64{8, 8, 4} {
		for i := range 2 {
			nodes = append(nodes, node(fmt.Sprintf("r0-d%d-n%d", d, i), fmt.Sprintf("r0-d%d", d), "rack-0", free))
		}
	}
	for i := range 2 {
		nodes = append(nodes, node(fmt.Sprintf("r1-d0-n%d", i), "r1-d0", "rack-1", 8))
	}
	prefill, decode := gpuMembers(2, 8), gpuMembers(4, 4)
	shapes := []Shape{prefill, decode}
	groups := []GroupShape{{Role: "prefill", Shape: 0, Level: nvlink}, {Role: "decode", Shape: 1, Level: nvlink}}

	plan, roles, short := ComputeGroups(nodes, shapes, groups, rack, true)
	if short != nil {
		t.Fatalf("refused: %s", short.Describe(levels))
	}
	if plan.Domains[0] != "rack-0" {
		t.Errorf("planned in %v, want rack-0 (rack-1 holds 16 GPUs, the gang needs 32)", plan.Domains)
	}
	byName := map[string]*PlanNode{}
	for i := range nodes {
		byName[nodes[i].Name] = &nodes[i]
	}
	for role, want := range map[string]int64{"prefill": 16000, "decode": 16000} {
		domains := map[string]bool{}
		var gpus int64
		for _, n := range roles[role] {
			domains[byName[n].Domain(nvlink)] = true
		}
		if len(domains) != 1 {
			t.Errorf("%s on %v: %d NVLink domains, want 1", role, roles[role], len(domains))
		}
		for _, n := range roles[role] {
			gpus += plan.Claims[n][gpu]
		}
		if gpus < want {
			t.Errorf("%s claims %d milli-GPUs on its nodes, want at least %d", role, gpus, want)
		}
	}
	// Decode needs 16 GPUs in one NVLink domain and prefill two whole nodes in one:
	// with a node of d1 half used, only d0 of rack-0 holds either, and rack-1 only
	// one of them. The largest sub-group first (decode) takes d0; the other order
	// fails too; the first order's shortage is told.
	nodes[2].Free[gpu] = 4000
	_, _, short = ComputeGroups(nodes, shapes, groups, rack, true)
	if short == nil {
		t.Fatal("planned, want refused")
	}
	if got, want := short.Describe(levels), "needs its prefill members (2 × 8 nvidia.com/gpu) in one nvlink within one rack; rack-0 holds 1 of the 2 in one nvlink"; got != want {
		t.Errorf("shortage:\n got %s\nwant %s", got, want)
	}
}

// No node may take any member (all full, or none the tenant may use): a preferred
// gang with sub-groups is refused, not planned (and nothing panics on the empty set).
func TestComputeGroupsNoNodes(t *testing.T) {
	shapes := []Shape{gpuMembers(2, 8)}
	groups := []GroupShape{{Role: "prefill", Shape: 0, Level: 0}}
	if _, _, short := ComputeGroups(nil, shapes, groups, 1, false); short == nil {
		t.Fatal("planned on no nodes")
	}
	if _, short := ComputeSliced(nil, gpuMembers(16, 2), 1, false, []Slice{{Level: 0, Size: 16}}); short == nil {
		t.Fatal("sliced plan on no nodes")
	}
}

// A preferred sub-group is kept in one domain of its level when one holds it, and
// placed anywhere in the gang's domain when none does; a required one is refused.
func TestComputeGroupsPreferred(t *testing.T) {
	levels := []topology.Level{{Name: "nvlink"}, {Name: "rack"}}
	const nvlink, rack = 0, 1
	var nodes []PlanNode
	for d := range 2 {
		for i := range 2 {
			nodes = append(nodes, PlanNode{Name: fmt.Sprintf("d%d-n%d", d, i), Domains: []string{fmt.Sprintf("d%d", d), "rack-0"}, Eligible: []bool{true},
				Free: map[corev1.ResourceName]int64{gpu: 8000, corev1.ResourceCPU: 64000, corev1.ResourcePods: 110000}})
		}
	}
	nvlinksOf := func(claims map[string]map[corev1.ResourceName]int64) map[string]bool {
		out := map[string]bool{}
		for i := range nodes {
			if claims[nodes[i].Name][gpu] > 0 {
				out[nodes[i].Domain(nvlink)] = true
			}
		}
		return out
	}
	// Two whole-node members fit one NVLink domain: kept there.
	plan, _, short := ComputeGroups(nodes, []Shape{gpuMembers(2, 8)}, []GroupShape{{Role: "prefill", Level: nvlink, Preferred: true}}, rack, true)
	if short != nil || len(nvlinksOf(plan.Claims)) != 1 {
		t.Fatalf("two members: shortage %v, NVLink domains %v; want one", short, nvlinksOf(plan.Claims))
	}
	// Three do not: required, refused; preferred, planned over both domains.
	three := []Shape{gpuMembers(3, 8)}
	_, _, short = ComputeGroups(nodes, three, []GroupShape{{Role: "prefill", Level: nvlink}}, rack, true)
	if short == nil {
		t.Fatal("a required sub-group of three planned; no NVLink domain holds it")
	}
	if got, want := short.Describe(levels), "needs its prefill members (3 × 8 nvidia.com/gpu) in one nvlink within one rack; rack-0 holds 2 of the 3 in one nvlink"; got != want {
		t.Errorf("shortage:\n got %s\nwant %s", got, want)
	}
	plan, _, short = ComputeGroups(nodes, three, []GroupShape{{Role: "prefill", Level: nvlink, Preferred: true}}, rack, true)
	if short != nil {
		t.Fatalf("a preferred sub-group of three refused: %s", short.Describe(levels))
	}
	if plan.Domains[0] != "rack-0" || plan.Placed != 3 || len(nvlinksOf(plan.Claims)) != 2 {
		t.Errorf("planned in %v, %d placed over NVLink domains %v; want all 3 in rack-0 over both", plan.Domains, plan.Placed, nvlinksOf(plan.Claims))
	}
}

// A set keeps several roles in one domain together, between their own levels and
// the gang's: decode's leader (CPU only, no domain of its own) and its workers (one
// NVLink domain) in one rack, within one zone.
func TestComputeGroupsSet(t *testing.T) {
	levels := []topology.Level{{Name: "nvlink"}, {Name: "rack"}, {Name: "zone"}}
	const nvlink, rack, zone = 0, 1, 2
	// node makes a node of NVLink domain d in rack r of zone-0.
	node := func(name, d, r string, gpus, cpu int64) PlanNode {
		return PlanNode{Name: name, Domains: []string{d, r, "zone-0"}, Eligible: []bool{true, true},
			Free: map[corev1.ResourceName]int64{gpu: gpus * 1000, corev1.ResourceCPU: cpu * 1000, corev1.ResourcePods: 110000}}
	}
	leader := Shape{Requests: map[corev1.ResourceName]int64{corev1.ResourceCPU: 32000, corev1.ResourcePods: 1000}, Count: 1}
	shapes := []Shape{leader, gpuMembers(4, 4)}
	groups := []GroupShape{
		{Role: "decode-leader", Shape: 0, Level: NoLevel, Set: "decode", SetLevel: rack},
		{Role: "decode-workers", Shape: 1, Level: nvlink, Set: "decode", SetLevel: rack},
	}
	rackOf := func(nodes []PlanNode, names []string) map[string]bool {
		out := map[string]bool{}
		for _, name := range names {
			for i := range nodes {
				if nodes[i].Name == name {
					out[nodes[i].Domain(rack)] = true
				}
			}
		}
		return out
	}

	// rack-0's NVLink domain comes first and holds the workers as tightly as
	// rack-1's, but its CPUs are taken: the leader fits only rack-1, so the whole
	// set goes there (a plan of the workers alone would take rack-0).
	nodes := []PlanNode{
		node("r0-n0", "r0-d0", "rack-0", 8, 16), node("r0-n1", "r0-d0", "rack-0", 8, 16),
		node("r1-n0", "r1-d0", "rack-1", 8, 64), node("r1-n1", "r1-d0", "rack-1", 8, 64),
	}
	plan, roles, short := ComputeGroups(nodes, shapes, groups, zone, true)
	if short != nil {
		t.Fatalf("refused: %s", short.Describe(levels))
	}
	if got := rackOf(nodes, append(slices.Clone(roles["decode-leader"]), roles["decode-workers"]...)); len(got) != 1 || !got["rack-1"] {
		t.Errorf("leader on %v, workers on %v: racks %v, want rack-1 alone", roles["decode-leader"], roles["decode-workers"], got)
	}
	if plan.Domains[0] != "zone-0" || plan.Placed != 5 {
		t.Errorf("planned in %v with %d placed, want zone-0 with 5", plan.Domains, plan.Placed)
	}

	// No rack has room for the leader beside the workers: refused, naming the set,
	// its rack and the most of it one rack holds.
	nodes = append(nodes[:2:2], node("r1-n0", "r1-d0", "rack-1", 8, 16), node("r1-n1", "r1-d0", "rack-1", 8, 16), node("cpu-0", "r2-d0", "rack-2", 0, 64))
	if _, _, short = ComputeGroups(nodes, shapes, groups, zone, true); short == nil {
		t.Fatal("planned, want refused: the leader fits only rack-2, which has no GPU")
	}
	if got, want := short.Describe(levels), "needs its decode members (1 × 32000m cpu + 4 × 4 nvidia.com/gpu) in one rack within one zone; zone-0 holds 4 of the 5 in one rack"; got != want {
		t.Errorf("shortage:\n got %s\nwant %s", got, want)
	}

	// A rack holds all of decode, but not its workers in one NVLink domain: the
	// workers' shortage is told, within the set's rack.
	nodes = []PlanNode{
		node("r0-n0", "r0-d0", "rack-0", 8, 64), node("r0-n1", "r0-d1", "rack-0", 8, 64),
	}
	if _, _, short = ComputeGroups(nodes, shapes, groups, zone, true); short == nil {
		t.Fatal("planned, want refused: no NVLink domain holds the four workers")
	}
	if got, want := short.Describe(levels), "needs its decode-workers members (4 × 4 nvidia.com/gpu) in one nvlink within one rack; rack-0 holds 2 of the 4 in one nvlink"; got != want {
		t.Errorf("shortage:\n got %s\nwant %s", got, want)
	}
}
