// Package numa is what the placement engine knows of a node's NUMA cells — from its
// NodeResourceTopology, else from the numa.kubenexus.io fallback labels — and how
// the kubelet's topology manager fits a pod into them under each policy. The
// NUMATopology plugin charges the cells from the scheduler's snapshot; the
// placement-feasibility engine asks whether a node's cells could hold a pod at all.
package numa

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	nrtv1alpha2 "github.com/k8stopologyawareschedwg/noderesourcetopology-api/pkg/apis/topology/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// Amounts are resource quantities in the units placement compares: CPU in
// millicores, everything else in whole units (bytes, devices).
type Amounts map[corev1.ResourceName]int64

func AmountOf(name corev1.ResourceName, q resource.Quantity) int64 {
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// Topology is what is known of one node's NUMA cells.
type Topology struct {
	// Source names where the facts come from, for messages.
	Source string
	// Cells in the order of their NUMA ids.
	Cells []Cell
	// KubeletPolicy is the kubelet topology manager's policy as the
	// NodeResourceTopology reports it; "" when it aligns nothing or is unknown.
	KubeletPolicy v1alpha1.NUMAPolicy
}

// Cell is one NUMA node.
type Cell struct {
	ID          int
	Allocatable Amounts
	// ReportedUsed is allocatable less the available amounts the last
	// NodeResourceTopology report gave; nil without a report.
	ReportedUsed Amounts
}

// HasResource reports whether any cell accounts for name.
func (t *Topology) HasResource(name corev1.ResourceName) bool {
	for i := range t.Cells {
		if _, ok := t.Cells[i].Allocatable[name]; ok {
			return true
		}
	}
	return false
}

// ZoneTypeNode is the zone type of a NUMA node in a NodeResourceTopology.
const ZoneTypeNode = "Node"

// AttrTopologyManagerPolicy is the attribute the topology exporters (NFD's
// topology-updater, RTE) publish the kubelet's topology manager policy under.
const AttrTopologyManagerPolicy = "topologyManagerPolicy"

// FromNRT reads a NodeResourceTopology. Its zones of type Node are the cells, their
// ids from the zone names' numeric suffix ("node-1"), in id order.
func FromNRT(nrt *nrtv1alpha2.NodeResourceTopology) (*Topology, error) {
	t := &Topology{Source: "NodeResourceTopology " + nrt.Name, KubeletPolicy: kubeletPolicyOf(nrt)}
	for i, z := range nrt.Zones {
		if z.Type != ZoneTypeNode {
			continue
		}
		id := i
		if j := strings.LastIndexAny(z.Name, "-_"); j >= 0 {
			if n, err := strconv.Atoi(z.Name[j+1:]); err == nil && n >= 0 {
				id = n
			}
		}
		c := Cell{ID: id, Allocatable: Amounts{}, ReportedUsed: Amounts{}}
		for _, r := range z.Resources {
			name := corev1.ResourceName(r.Name)
			alloc := AmountOf(name, r.Allocatable)
			c.Allocatable[name] = alloc
			if used := alloc - AmountOf(name, r.Available); used > 0 {
				c.ReportedUsed[name] = used
			}
		}
		t.Cells = append(t.Cells, c)
	}
	if len(t.Cells) == 0 {
		return nil, fmt.Errorf("NodeResourceTopology %s has no zone of type %s", nrt.Name, ZoneTypeNode)
	}
	slices.SortStableFunc(t.Cells, func(a, b Cell) int { return a.ID - b.ID })
	for i := 1; i < len(t.Cells); i++ {
		if t.Cells[i].ID == t.Cells[i-1].ID {
			return nil, fmt.Errorf("NodeResourceTopology %s has two NUMA zones with id %d", nrt.Name, t.Cells[i].ID)
		}
	}
	return t, nil
}

// kubeletPolicyOf reads the kubelet's policy from the top-level attribute, else
// from the deprecated topologyPolicies list.
func kubeletPolicyOf(nrt *nrtv1alpha2.NodeResourceTopology) v1alpha1.NUMAPolicy {
	for _, a := range nrt.Attributes {
		if a.Name == AttrTopologyManagerPolicy {
			switch a.Value {
			case "single-numa-node":
				return v1alpha1.NUMAPolicySingleNUMA
			case "restricted":
				return v1alpha1.NUMAPolicyRestricted
			case "best-effort":
				return v1alpha1.NUMAPolicyBestEffort
			}
			return ""
		}
	}
	for _, p := range nrt.TopologyPolicies {
		switch {
		case strings.HasPrefix(p, "SingleNUMANode"):
			return v1alpha1.NUMAPolicySingleNUMA
		case strings.HasPrefix(p, "Restricted"):
			return v1alpha1.NUMAPolicyRestricted
		case strings.HasPrefix(p, "BestEffort"):
			return v1alpha1.NUMAPolicyBestEffort
		}
	}
	return ""
}

// maxLabelCells bounds numa.kubenexus.io/node-count.
const maxLabelCells = 64

// FromLabels reads the fallback labels of a node without a NodeResourceTopology:
// numa.kubenexus.io/node-count cells, each with numa.kubenexus.io/node-<i>-cpus,
// -memory and -gpus where set, else an even share of the node's allocatable CPU,
// memory and GPUs (gpuResources). It returns nil without the count label.
func FromLabels(node *corev1.Node, gpuResources []corev1.ResourceName) (*Topology, error) {
	raw, ok := node.Labels[v1alpha1.LabelNUMANodeCount]
	if !ok {
		return nil, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > maxLabelCells {
		return nil, fmt.Errorf("node label %s=%q must be a whole number from 1 to %d", v1alpha1.LabelNUMANodeCount, raw, maxLabelCells)
	}
	t := &Topology{Source: "node labels " + v1alpha1.LabelNUMANodeCount + "=" + raw, Cells: make([]Cell, n)}
	for i := range t.Cells {
		t.Cells[i] = Cell{ID: i, Allocatable: Amounts{}}
	}
	split := func(name corev1.ResourceName, label func(i int) string, parse func(string) (int64, error)) error {
		total, ok := node.Status.Allocatable[name]
		if !ok {
			return nil
		}
		share, extra := AmountOf(name, total)/int64(n), AmountOf(name, total)%int64(n)
		for i := range t.Cells {
			v := share
			if int64(i) < extra {
				v++
			}
			key := label(i)
			if s, ok := node.Labels[key]; ok {
				parsed, err := parse(s)
				if err != nil || parsed < 0 {
					return fmt.Errorf("node label %s=%q: %v", key, s, err)
				}
				v = parsed
			}
			t.Cells[i].Allocatable[name] = v
		}
		return nil
	}
	count := func(unit int64) func(string) (int64, error) {
		return func(s string) (int64, error) {
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil || v < 0 {
				return 0, fmt.Errorf("must be a whole number")
			}
			return v * unit, nil
		}
	}
	if err := split(corev1.ResourceCPU, func(i int) string { return fmt.Sprintf(labelCellCPUs, i) }, count(1000)); err != nil {
		return nil, err
	}
	if err := split(corev1.ResourceMemory, func(i int) string { return fmt.Sprintf(labelCellMemory, i) }, func(s string) (int64, error) {
		q, err := resource.ParseQuantity(s)
		if err != nil {
			return 0, fmt.Errorf("must be a quantity (for example 64Gi)")
		}
		return q.Value(), nil
	}); err != nil {
		return nil, err
	}
	for _, g := range gpuResources {
		if err := split(g, func(i int) string { return fmt.Sprintf(labelCellGPUs, i) }, count(1)); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Fallback per-cell labels (format with the cell index).
const (
	labelCellCPUs   = v1alpha1.LabelNUMACellPrefix + "%d-cpus"
	labelCellMemory = v1alpha1.LabelNUMACellPrefix + "%d-memory"
	labelCellGPUs   = v1alpha1.LabelNUMACellPrefix + "%d-gpus"
)
