package numa

import (
	"strings"
	"testing"

	nrtv1alpha2 "github.com/k8stopologyawareschedwg/noderesourcetopology-api/pkg/apis/topology/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"

	testutil "github.com/kube-nexus/kubenexus/test/util"
)

const gpu = corev1.ResourceName("nvidia.com/gpu")

// twoCells is a node of two cells with 16 CPUs, 64Gi and 4 GPUs each.
func twoCells() *Topology {
	c := func(id int) Cell {
		return Cell{ID: id, Allocatable: Amounts{corev1.ResourceCPU: 16000, corev1.ResourceMemory: 64 << 30, gpu: 4}}
	}
	return &Topology{Source: "test", Cells: []Cell{c(0), c(1)}}
}

func cpus(n int64) Amounts { return Amounts{corev1.ResourceCPU: n * 1000} }

func TestSingleNUMAFillsCellsOneByOne(t *testing.T) {
	st := NewCellState(twoCells(), Amounts{corev1.ResourceCPU: 32000})
	for i, want := range []uint64{0b01, 0b10} {
		mask, ok := st.Place(v1alpha1.NUMAPolicySingleNUMA, cpus(10))
		if !ok || mask != want {
			t.Fatalf("pod %d: got cells %b (ok %v), want %b", i, mask, ok, want)
		}
		st.Charge(v1alpha1.NUMAPolicySingleNUMA, cpus(10), mask)
	}
	if _, ok := st.Place(v1alpha1.NUMAPolicySingleNUMA, cpus(10)); ok {
		t.Fatal("a third 10-CPU pod fit in a cell with 6 CPUs left")
	}
	if got, want := st.Refusal(v1alpha1.NUMAPolicySingleNUMA, cpus(10)), "single-numa: no NUMA cell with 10 CPUs free; best cell has 6 CPUs"; got != want {
		t.Fatalf("refusal %q, want %q", got, want)
	}
	// 12 CPUs are free on the node, but in two halves: best-effort still places it,
	// across both cells.
	if mask, ok := st.Place(v1alpha1.NUMAPolicyBestEffort, cpus(12)); !ok || mask != 0b11 {
		t.Fatalf("best-effort: got %b (ok %v), want both cells", mask, ok)
	}
}

func TestReportAndNodeCapBoundTheCells(t *testing.T) {
	topo := twoCells()
	// The last report says cell 0 has 12 CPUs in use (pods the snapshot does not
	// attribute, or not yet).
	topo.Cells[0].ReportedUsed = Amounts{corev1.ResourceCPU: 12000}
	st := NewCellState(topo, Amounts{corev1.ResourceCPU: 32000, gpu: 1})
	if mask, ok := st.Place(v1alpha1.NUMAPolicySingleNUMA, cpus(8)); !ok || mask != 0b10 {
		t.Fatalf("got %b (ok %v), want cell 1: cell 0 has 4 CPUs by the report", mask, ok)
	}
	// The snapshot charging less than the report does not free anything.
	st.Charge(v1alpha1.NUMAPolicySingleNUMA, cpus(2), 0b01)
	if f := st.free(0, corev1.ResourceCPU); f != 4000 {
		t.Fatalf("cell 0 free %d, want 4000", f)
	}
	// Pods the kubelet does not align hold 7 of the node's 8 GPUs: no cell has 2.
	if _, ok := st.Place(v1alpha1.NUMAPolicySingleNUMA, Amounts{gpu: 2}); ok {
		t.Fatal("2 GPUs fit in a cell while the node has 1 free")
	}
	if got := st.Refusal(v1alpha1.NUMAPolicySingleNUMA, Amounts{gpu: 2}); got != "single-numa: no NUMA cell with 2 nvidia.com/gpu free; best cell has 1 nvidia.com/gpu" {
		t.Fatalf("refusal %q", got)
	}
}

func TestIsolatedTakesAWholeCell(t *testing.T) {
	st := NewCellState(twoCells(), nil)
	mask, ok := st.Place(v1alpha1.NUMAPolicyIsolated, cpus(2))
	if !ok || mask != 0b01 {
		t.Fatalf("got %b (ok %v)", mask, ok)
	}
	st.Charge(v1alpha1.NUMAPolicyIsolated, cpus(2), mask)
	if f := st.free(0, corev1.ResourceCPU); f != 0 {
		t.Fatalf("an isolated pod left %d millicores of its cell to others", f)
	}
	// A single-numa pod goes to the other cell; after it, no cell is idle.
	if mask, ok := st.Place(v1alpha1.NUMAPolicySingleNUMA, cpus(1)); !ok || mask != 0b10 {
		t.Fatalf("single-numa beside an isolated pod: %b (ok %v)", mask, ok)
	}
	st.Charge(v1alpha1.NUMAPolicySingleNUMA, cpus(1), 0b10)
	if _, ok := st.Place(v1alpha1.NUMAPolicyIsolated, cpus(1)); ok {
		t.Fatal("a second isolated pod found an idle cell")
	}
	if got := st.Refusal(v1alpha1.NUMAPolicyIsolated, cpus(1)); got != "isolated: no idle NUMA cell; all 2 cells run pods with NUMA-aligned resources" {
		t.Fatalf("refusal %q", got)
	}
	// Best-effort never refuses, even with the cells full.
	if _, ok := st.Place(v1alpha1.NUMAPolicyBestEffort, cpus(40)); !ok {
		t.Fatal("best-effort refused")
	}
}

func TestRestrictedNeedsTheFewestCells(t *testing.T) {
	st := NewCellState(twoCells(), nil)
	// 24 CPUs need both cells (the fewest that can hold them).
	if mask, ok := st.Place(v1alpha1.NUMAPolicyRestricted, cpus(24)); !ok || mask != 0b11 {
		t.Fatalf("got %b (ok %v)", mask, ok)
	}
	// With 10 CPUs taken in cell 0, a 10-CPU restricted pod must fit in one cell:
	// cell 1.
	st.Charge(v1alpha1.NUMAPolicySingleNUMA, cpus(10), 0b01)
	if mask, ok := st.Place(v1alpha1.NUMAPolicyRestricted, cpus(10)); !ok || mask != 0b10 {
		t.Fatalf("got %b (ok %v)", mask, ok)
	}
	st.Charge(v1alpha1.NUMAPolicySingleNUMA, cpus(10), 0b10)
	if _, ok := st.Place(v1alpha1.NUMAPolicyRestricted, cpus(24)); ok {
		t.Fatal("24 CPUs fit in two cells with 12 free")
	}
	if got := st.Refusal(v1alpha1.NUMAPolicyRestricted, cpus(24)); got != "restricted: the pod needs 2 NUMA cells and no 2 cells have 24 CPUs free; the best have 12 CPUs" {
		t.Fatalf("refusal %q", got)
	}
	if got := st.Refusal(v1alpha1.NUMAPolicyRestricted, cpus(40)); got != "restricted: all 2 NUMA cells together cannot hold 40 CPUs" {
		t.Fatalf("refusal %q", got)
	}
}

func TestScorePrefersTheTightestCell(t *testing.T) {
	roomy := NewCellState(twoCells(), nil)
	tight := NewCellState(twoCells(), nil)
	tight.Charge(v1alpha1.NUMAPolicySingleNUMA, cpus(12), 0b01)
	tight.Charge(v1alpha1.NUMAPolicySingleNUMA, cpus(12), 0b10)
	d := cpus(4)
	m1, _ := roomy.Place(v1alpha1.NUMAPolicySingleNUMA, d)
	m2, _ := tight.Place(v1alpha1.NUMAPolicySingleNUMA, d)
	if r, ti := roomy.Score(v1alpha1.NUMAPolicySingleNUMA, d, m1), tight.Score(v1alpha1.NUMAPolicySingleNUMA, d, m2); ti != 100 || r >= ti {
		t.Fatalf("roomy %d, tight %d: want tight 100 and roomy lower", r, ti)
	}
	// Spanning two cells scores at most half of fitting in one.
	spread := NewCellState(twoCells(), nil)
	if s := spread.Score(v1alpha1.NUMAPolicyBestEffort, cpus(32), 0b11); s > 50 {
		t.Fatalf("two-cell placement scored %d", s)
	}
}

func TestDemandOfIsWhatTheKubeletAligns(t *testing.T) {
	topo := twoCells()
	guaranteed := func(cpu string) *corev1.Pod {
		rl := []string{"cpu", cpu, "memory", "8Gi", string(gpu), "1"}
		return testutil.MakePod("p", "ns").Req(rl...).Limit(rl...).Obj()
	}
	if d := DemandOf(guaranteed("4"), topo); d[corev1.ResourceCPU] != 4000 || d[corev1.ResourceMemory] != 8<<30 || d[gpu] != 1 {
		t.Fatalf("Guaranteed, whole CPUs: %v", d)
	}
	if d := DemandOf(guaranteed("1500m"), topo); d[corev1.ResourceCPU] != 0 || d[gpu] != 1 {
		t.Fatalf("fractional CPUs are not pinned, devices are: %v", d)
	}
	burstable := guaranteed("4")
	burstable.Spec.Containers[0].Resources.Limits = nil
	if d := DemandOf(burstable, topo); len(d) != 1 || d[gpu] != 1 {
		t.Fatalf("Burstable: only devices are aligned, got %v", d)
	}
}

func TestTopologyFromNRTAndLabels(t *testing.T) {
	q := resource.MustParse
	nrt := &nrtv1alpha2.NodeResourceTopology{
		ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Attributes: nrtv1alpha2.AttributeList{{Name: "topologyManagerPolicy", Value: "single-numa-node"}},
		Zones: nrtv1alpha2.ZoneList{
			{Name: "node-1", Type: "Node", Resources: nrtv1alpha2.ResourceInfoList{{Name: "cpu", Capacity: q("32"), Allocatable: q("30"), Available: q("10")}}},
			{Name: "node-0", Type: "Node", Resources: nrtv1alpha2.ResourceInfoList{{Name: "cpu", Capacity: q("32"), Allocatable: q("32"), Available: q("32")}}},
			{Name: "socket-0", Type: "Socket"},
		},
	}
	topo, err := FromNRT(nrt)
	if err != nil {
		t.Fatal(err)
	}
	if len(topo.Cells) != 2 || topo.Cells[0].ID != 0 || topo.Cells[1].ReportedUsed[corev1.ResourceCPU] != 20000 || topo.KubeletPolicy != v1alpha1.NUMAPolicySingleNUMA {
		t.Fatalf("parsed %+v", topo)
	}
	nrt.Attributes = nil
	nrt.TopologyPolicies = []string{"RestrictedPodLevel"}
	if topo, _ := FromNRT(nrt); topo.KubeletPolicy != v1alpha1.NUMAPolicyRestricted {
		t.Fatalf("policy from topologyPolicies: %q", topo.KubeletPolicy)
	}

	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n2", Labels: map[string]string{v1alpha1.LabelNUMANodeCount: "2", "numa.kubenexus.io/node-1-cpus": "20"}},
		Status:     corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: q("33"), corev1.ResourceMemory: q("64Gi"), gpu: q("8")}},
	}
	topo, err = FromLabels(node, []corev1.ResourceName{gpu})
	if err != nil {
		t.Fatal(err)
	}
	if c0, c1 := topo.Cells[0].Allocatable, topo.Cells[1].Allocatable; c0[corev1.ResourceCPU] != 16500 || c1[corev1.ResourceCPU] != 20000 || c0[gpu] != 4 || c1[corev1.ResourceMemory] != 32<<30 {
		t.Fatalf("cells %v / %v", c0, c1)
	}
	for _, bad := range []map[string]string{
		{v1alpha1.LabelNUMANodeCount: "0"},
		{v1alpha1.LabelNUMANodeCount: "two"},
		{v1alpha1.LabelNUMANodeCount: "2", "numa.kubenexus.io/node-0-memory": "lots"},
	} {
		node.Labels = bad
		if _, err := FromLabels(node, nil); err == nil || !strings.Contains(err.Error(), "numa.kubenexus.io/node-") {
			t.Fatalf("labels %v: error %v, want one naming the label", bad, err)
		}
	}
	node.Labels = nil
	if topo, err := FromLabels(node, nil); topo != nil || err != nil {
		t.Fatalf("no labels: %v %v", topo, err)
	}
}

func TestRefusesEmpty(t *testing.T) {
	two := twoCells()
	// Reported use does not count: the question is whether the node could ever take it.
	two.Cells[0].ReportedUsed = cpus(16)
	two.Cells[1].ReportedUsed = cpus(16)
	for _, tc := range []struct {
		name   string
		policy v1alpha1.NUMAPolicy
		d      Amounts
		want   string
	}{
		{"one cell holds it", v1alpha1.NUMAPolicySingleNUMA, cpus(16), ""},
		{"no cell is that large", v1alpha1.NUMAPolicySingleNUMA, cpus(24), "single-numa: no NUMA cell with 24 CPUs free; best cell has 16 CPUs"},
		{"restricted takes two cells", v1alpha1.NUMAPolicyRestricted, cpus(24), ""},
		{"not even both cells", v1alpha1.NUMAPolicyRestricted, cpus(40), "restricted: all 2 NUMA cells together cannot hold 40 CPUs"},
		{"best-effort never refuses", v1alpha1.NUMAPolicyBestEffort, cpus(40), ""},
		{"nothing aligned", v1alpha1.NUMAPolicySingleNUMA, Amounts{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RefusesEmpty(two, tc.policy, tc.d); got != tc.want {
				t.Errorf("RefusesEmpty = %q, want %q", got, tc.want)
			}
		})
	}
}
