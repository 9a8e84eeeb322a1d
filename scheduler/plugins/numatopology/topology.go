package numatopology

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

// amounts are resource quantities in the units the plugin compares: CPU in
// millicores, everything else in whole units (bytes, devices).
type amounts map[corev1.ResourceName]int64

func amountOf(name corev1.ResourceName, q resource.Quantity) int64 {
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// topology is what the plugin knows of one node's NUMA cells.
type topology struct {
	// source names where the facts come from, for messages.
	source string
	// cells in the order of their NUMA ids.
	cells []cell
	// kubeletPolicy is the kubelet topology manager's policy as the
	// NodeResourceTopology reports it; "" when it aligns nothing or is unknown.
	kubeletPolicy v1alpha1.NUMAPolicy
}

// cell is one NUMA node.
type cell struct {
	id          int
	allocatable amounts
	// reportedUsed is allocatable less the available amounts the last
	// NodeResourceTopology report gave; nil without a report.
	reportedUsed amounts
}

// hasResource reports whether any cell accounts for name.
func (t *topology) hasResource(name corev1.ResourceName) bool {
	for i := range t.cells {
		if _, ok := t.cells[i].allocatable[name]; ok {
			return true
		}
	}
	return false
}

// zoneTypeNode is the zone type of a NUMA node in a NodeResourceTopology.
const zoneTypeNode = "Node"

// attrTopologyManagerPolicy is the attribute the topology exporters (NFD's
// topology-updater, RTE) publish the kubelet's topology manager policy under.
const attrTopologyManagerPolicy = "topologyManagerPolicy"

// fromNRT reads a NodeResourceTopology. Its zones of type Node are the cells, their
// ids from the zone names' numeric suffix ("node-1"), in id order.
func fromNRT(nrt *nrtv1alpha2.NodeResourceTopology) (*topology, error) {
	t := &topology{source: "NodeResourceTopology " + nrt.Name, kubeletPolicy: kubeletPolicyOf(nrt)}
	for i, z := range nrt.Zones {
		if z.Type != zoneTypeNode {
			continue
		}
		id := i
		if j := strings.LastIndexAny(z.Name, "-_"); j >= 0 {
			if n, err := strconv.Atoi(z.Name[j+1:]); err == nil && n >= 0 {
				id = n
			}
		}
		c := cell{id: id, allocatable: amounts{}, reportedUsed: amounts{}}
		for _, r := range z.Resources {
			name := corev1.ResourceName(r.Name)
			alloc := amountOf(name, r.Allocatable)
			c.allocatable[name] = alloc
			if used := alloc - amountOf(name, r.Available); used > 0 {
				c.reportedUsed[name] = used
			}
		}
		t.cells = append(t.cells, c)
	}
	if len(t.cells) == 0 {
		return nil, fmt.Errorf("NodeResourceTopology %s has no zone of type %s", nrt.Name, zoneTypeNode)
	}
	slices.SortStableFunc(t.cells, func(a, b cell) int { return a.id - b.id })
	for i := 1; i < len(t.cells); i++ {
		if t.cells[i].id == t.cells[i-1].id {
			return nil, fmt.Errorf("NodeResourceTopology %s has two NUMA zones with id %d", nrt.Name, t.cells[i].id)
		}
	}
	return t, nil
}

// kubeletPolicyOf reads the kubelet's policy from the top-level attribute, else
// from the deprecated topologyPolicies list.
func kubeletPolicyOf(nrt *nrtv1alpha2.NodeResourceTopology) v1alpha1.NUMAPolicy {
	for _, a := range nrt.Attributes {
		if a.Name == attrTopologyManagerPolicy {
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

// fromLabels reads the fallback labels of a node without a NodeResourceTopology:
// numa.kubenexus.io/node-count cells, each with numa.kubenexus.io/node-<i>-cpus,
// -memory and -gpus where set, else an even share of the node's allocatable CPU,
// memory and GPUs (gpuResources). It returns nil without the count label.
func fromLabels(node *corev1.Node, gpuResources []corev1.ResourceName) (*topology, error) {
	raw, ok := node.Labels[v1alpha1.LabelNUMANodeCount]
	if !ok {
		return nil, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > maxLabelCells {
		return nil, fmt.Errorf("node label %s=%q must be a whole number from 1 to %d", v1alpha1.LabelNUMANodeCount, raw, maxLabelCells)
	}
	t := &topology{source: "node labels " + v1alpha1.LabelNUMANodeCount + "=" + raw, cells: make([]cell, n)}
	for i := range t.cells {
		t.cells[i] = cell{id: i, allocatable: amounts{}}
	}
	split := func(name corev1.ResourceName, label func(i int) string, parse func(string) (int64, error)) error {
		total, ok := node.Status.Allocatable[name]
		if !ok {
			return nil
		}
		share, extra := amountOf(name, total)/int64(n), amountOf(name, total)%int64(n)
		for i := range t.cells {
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
			t.cells[i].allocatable[name] = v
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
