package numa

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/kubernetes/pkg/apis/core/v1/helper/qos"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// strictness orders the policies: the kubelet's policy and the pod's own hint
// combine to the stricter of the two.
var strictness = map[v1alpha1.NUMAPolicy]int{
	"":                            0,
	v1alpha1.NUMAPolicyBestEffort: 1,
	v1alpha1.NUMAPolicyRestricted: 2,
	v1alpha1.NUMAPolicySingleNUMA: 3,
	v1alpha1.NUMAPolicyIsolated:   4,
}

// EffectivePolicy is the policy a pod is placed by on a node: its own hint or the
// node's kubelet policy, whichever is stricter (the kubelet refuses what its
// policy refuses, whatever the pod asked).
func EffectivePolicy(own v1alpha1.NUMAPolicy, t *Topology) v1alpha1.NUMAPolicy {
	if strictness[t.KubeletPolicy] > strictness[own] {
		return t.KubeletPolicy
	}
	return own
}

// DemandOf returns what the kubelet aligns to NUMA cells for the pod, among the
// resources t's cells account for: CPUs of a Guaranteed pod asking for whole CPUs
// (the CPU manager's static policy), memory and hugepages of a Guaranteed pod (the
// memory manager), and devices (extended resources) of any pod. Empty when the
// kubelet would align nothing.
func DemandOf(pod *corev1.Pod, t *Topology) Amounts {
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	guaranteed := QOSOf(pod) == corev1.PodQOSGuaranteed
	d := Amounts{}
	for name, q := range reqs {
		if q.Sign() <= 0 || !t.HasResource(name) {
			continue
		}
		switch {
		case name == corev1.ResourceCPU:
			if guaranteed && q.MilliValue()%1000 == 0 {
				d[name] = q.MilliValue()
			}
		case name == corev1.ResourceMemory || strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix):
			if guaranteed {
				d[name] = q.Value()
			}
		case strings.Contains(string(name), "/"):
			d[name] = q.Value()
		}
	}
	return d
}

// QOSOf is the pod's QoS class as the API server recorded it, else computed.
func QOSOf(pod *corev1.Pod) corev1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	return qos.GetPodQOS(pod)
}

// CellState is a node's cells with what aligned pods take from them.
type CellState struct {
	t *Topology
	// charged is what the scheduler's snapshot puts in each cell.
	charged []Amounts
	// busy marks cells some aligned pod takes from.
	busy []bool
	// nodeFree caps every cell by what the whole node has free (pods the kubelet
	// does not align still use the node's CPUs, memory and devices).
	nodeFree Amounts
}

// NewCellState is t's cells with nothing charged yet, each capped by what the
// whole node has free (nodeFree; a resource it does not name is not capped).
func NewCellState(t *Topology, nodeFree Amounts) *CellState {
	s := &CellState{t: t, charged: make([]Amounts, len(t.Cells)), busy: make([]bool, len(t.Cells)), nodeFree: nodeFree}
	for i := range s.charged {
		s.charged[i] = Amounts{}
	}
	return s
}

// free is what cell i has left of name: its allocatable less the larger of what
// the snapshot charges it and what the last report said was used, capped by the
// node's free amount.
func (s *CellState) free(i int, name corev1.ResourceName) int64 {
	c := &s.t.Cells[i]
	used := max(s.charged[i][name], c.ReportedUsed[name])
	f := c.Allocatable[name] - used
	if nf, ok := s.nodeFree[name]; ok && nf < f {
		f = nf
	}
	return max(f, 0)
}

// idle reports whether no aligned pod takes from cell i, by the snapshot and by the
// last report.
func (s *CellState) idle(i int) bool {
	if s.busy[i] {
		return false
	}
	for _, v := range s.t.Cells[i].ReportedUsed {
		if v > 0 {
			return false
		}
	}
	return true
}

// sumFree is what the cells of mask have left of name together, capped by the node.
func (s *CellState) sumFree(mask uint64, name corev1.ResourceName) int64 {
	var sum int64
	for i := range s.t.Cells {
		if mask&(1<<i) != 0 {
			sum += s.free(i, name)
		}
	}
	if nf, ok := s.nodeFree[name]; ok && nf < sum {
		sum = nf
	}
	return sum
}

func (s *CellState) sumAllocatable(mask uint64, name corev1.ResourceName) int64 {
	var sum int64
	for i := range s.t.Cells {
		if mask&(1<<i) != 0 {
			sum += s.t.Cells[i].Allocatable[name]
		}
	}
	return sum
}

// maxEnumeratedCells bounds exhaustive search over sets of cells; larger nodes are
// searched over runs of adjacent cells.
const maxEnumeratedCells = 8

// masks returns the sets of k cells in the order they are tried: lowest cells first,
// as the kubelet's topology manager prefers them.
func (s *CellState) masks(k int) []uint64 {
	n := len(s.t.Cells)
	var out []uint64
	if n <= maxEnumeratedCells {
		for m := uint64(1); m < 1<<n; m++ {
			if bits.OnesCount64(m) == k {
				out = append(out, m)
			}
		}
		return out
	}
	for start := 0; start+k <= n && start+k <= 64; start++ {
		out = append(out, ((uint64(1)<<k)-1)<<start)
	}
	return out
}

func covers(d Amounts, have func(corev1.ResourceName) int64) bool {
	for name, v := range d {
		if have(name) < v {
			return false
		}
	}
	return true
}

// fewestCells is the smallest number of cells whose allocatable could hold d;
// 0 when the whole node could not.
func (s *CellState) fewestCells(d Amounts) int {
	for k := 1; k <= len(s.t.Cells); k++ {
		for _, m := range s.masks(k) {
			if covers(d, func(n corev1.ResourceName) int64 { return s.sumAllocatable(m, n) }) {
				return k
			}
		}
	}
	return 0
}

// Place returns the cells (a mask) a pod with demand d takes under policy, as the
// kubelet would pick them: the lowest cells that satisfy the policy. ok is false
// when the policy refuses the node. best-effort always succeeds: without a set of
// cells that holds d, it takes from every cell.
func (s *CellState) Place(policy v1alpha1.NUMAPolicy, d Amounts) (mask uint64, ok bool) {
	n := len(s.t.Cells)
	switch policy {
	case v1alpha1.NUMAPolicyIsolated:
		for i := range n {
			if s.idle(i) && covers(d, func(name corev1.ResourceName) int64 { return s.free(i, name) }) {
				return 1 << i, true
			}
		}
		return 0, false
	case v1alpha1.NUMAPolicySingleNUMA:
		return s.firstFit(1, d)
	case v1alpha1.NUMAPolicyRestricted:
		k := s.fewestCells(d)
		if k == 0 {
			return 0, false
		}
		return s.firstFit(k, d)
	default: // best-effort, and a kubelet policy the pod inherits
		for k := 1; k <= n; k++ {
			if m, ok := s.firstFit(k, d); ok {
				return m, true
			}
		}
		return allCells(n), true
	}
}

func allCells(n int) uint64 {
	if n >= 64 {
		return ^uint64(0)
	}
	return (uint64(1) << n) - 1
}

func (s *CellState) firstFit(k int, d Amounts) (uint64, bool) {
	for _, m := range s.masks(k) {
		if covers(d, func(name corev1.ResourceName) int64 { return s.sumFree(m, name) }) {
			return m, true
		}
	}
	return 0, false
}

// Charge records that a pod with demand d takes the cells of mask: an isolated pod
// the whole cell, others d, filling the cells in order.
func (s *CellState) Charge(policy v1alpha1.NUMAPolicy, d Amounts, mask uint64) {
	for i := range s.t.Cells {
		if mask&(1<<i) == 0 {
			continue
		}
		s.busy[i] = true
		if policy == v1alpha1.NUMAPolicyIsolated {
			for name, v := range s.t.Cells[i].Allocatable {
				s.charged[i][name] = max(s.charged[i][name], v)
			}
		}
	}
	if policy == v1alpha1.NUMAPolicyIsolated {
		return
	}
	for name, v := range d {
		left := v
		for i := range s.t.Cells {
			if mask&(1<<i) == 0 || left == 0 {
				continue
			}
			take := min(left, max(s.t.Cells[i].Allocatable[name]-s.charged[i][name], 0))
			s.charged[i][name] += take
			left -= take
		}
		// Over-committed cells (a report or pods the snapshot cannot fit): the rest
		// goes to the first cell, so the node reads as full rather than free.
		if left > 0 {
			for i := range s.t.Cells {
				if mask&(1<<i) != 0 {
					s.charged[i][name] += left
					break
				}
			}
		}
	}
}

// Score rates placing d on the cells of mask, 0–100: best fit (least left over in
// those cells) divided by the number of cells the pod spans.
func (s *CellState) Score(policy v1alpha1.NUMAPolicy, d Amounts, mask uint64) int64 {
	k := bits.OnesCount64(mask)
	if k == 0 || len(d) == 0 {
		return 0
	}
	var leftover float64
	for name, v := range d {
		alloc := s.sumAllocatable(mask, name)
		if alloc <= 0 {
			continue
		}
		take := v
		if policy == v1alpha1.NUMAPolicyIsolated {
			take = alloc
		}
		leftover += float64(max(s.sumFree(mask, name)-take, 0)) / float64(alloc)
	}
	leftover /= float64(len(d))
	return int64((100 - 100*leftover) / float64(k))
}

// Refusal explains why policy refuses the node for d.
func (s *CellState) Refusal(policy v1alpha1.NUMAPolicy, d Amounts) string {
	n := len(s.t.Cells)
	names := sortedNames(d)
	switch policy {
	case v1alpha1.NUMAPolicyIsolated:
		var idle []int
		for i := range n {
			if s.idle(i) {
				idle = append(idle, i)
			}
		}
		if len(idle) == 0 {
			return fmt.Sprintf("isolated: no idle NUMA cell; all %d cells run pods with NUMA-aligned resources", n)
		}
		for _, name := range names {
			best := int64(0)
			for _, i := range idle {
				best = max(best, s.free(i, name))
			}
			if best < d[name] {
				return fmt.Sprintf("isolated: no idle NUMA cell with %s; the largest idle cell has %s", format(name, d[name]), format(name, best))
			}
		}
		return fmt.Sprintf("isolated: no idle NUMA cell has %s free together", formatAll(d, names))
	case v1alpha1.NUMAPolicyRestricted:
		k := s.fewestCells(d)
		if k == 0 {
			return fmt.Sprintf("restricted: all %d NUMA cells together cannot hold %s", n, formatAll(d, names))
		}
		if k > 1 {
			for _, name := range names {
				best := int64(0)
				for _, m := range s.masks(k) {
					best = max(best, s.sumFree(m, name))
				}
				if best < d[name] {
					return fmt.Sprintf("restricted: the pod needs %d NUMA cells and no %d cells have %s free; the best have %s", k, k, format(name, d[name]), format(name, best))
				}
			}
			return fmt.Sprintf("restricted: the pod needs %d NUMA cells and no %d cells have %s free together", k, k, formatAll(d, names))
		}
	}
	prefix := string(policy)
	for _, name := range names {
		best := int64(0)
		for i := range n {
			best = max(best, s.free(i, name))
		}
		if best < d[name] {
			return fmt.Sprintf("%s: no NUMA cell with %s free; best cell has %s", prefix, format(name, d[name]), format(name, best))
		}
	}
	return fmt.Sprintf("%s: no NUMA cell has %s free together", prefix, formatAll(d, names))
}

// sortedNames orders resources for messages: CPU, memory, then by name.
func sortedNames(d Amounts) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(d))
	for name := range d {
		names = append(names, name)
	}
	rank := func(n corev1.ResourceName) int {
		switch n {
		case corev1.ResourceCPU:
			return 0
		case corev1.ResourceMemory:
			return 1
		}
		return 2
	}
	slices.SortFunc(names, func(a, b corev1.ResourceName) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(string(a), string(b))
	})
	return names
}

// format writes an amount for a message: "48 CPUs", "64Gi memory", "2 nvidia.com/gpu".
func format(name corev1.ResourceName, v int64) string {
	switch {
	case name == corev1.ResourceCPU:
		if v%1000 == 0 {
			return fmt.Sprintf("%d CPUs", v/1000)
		}
		return fmt.Sprintf("%.1f CPUs", float64(v)/1000)
	case name == corev1.ResourceMemory || strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix):
		return resource.NewQuantity(v, resource.BinarySI).String() + " " + string(name)
	}
	return fmt.Sprintf("%d %s", v, name)
}

func formatAll(d Amounts, names []corev1.ResourceName) string {
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = format(name, d[name])
	}
	return strings.Join(parts, ", ")
}

// RefusesEmpty says why policy refuses a pod with demand d on t's node even with no
// pod on it (what the kubelet reported used left out): "" when the empty node takes
// it, and for best-effort, which never refuses. The placement-feasibility engine
// uses it for what only other nodes (or a smaller request) can change.
func RefusesEmpty(t *Topology, policy v1alpha1.NUMAPolicy, d Amounts) string {
	if policy == "" || policy == v1alpha1.NUMAPolicyBestEffort || len(d) == 0 && policy != v1alpha1.NUMAPolicyIsolated {
		return ""
	}
	empty := &Topology{Source: t.Source, Cells: make([]Cell, len(t.Cells)), KubeletPolicy: t.KubeletPolicy}
	for i, c := range t.Cells {
		empty.Cells[i] = Cell{ID: c.ID, Allocatable: c.Allocatable}
	}
	s := NewCellState(empty, nil)
	if _, ok := s.Place(policy, d); ok {
		return ""
	}
	return s.Refusal(policy, d)
}
