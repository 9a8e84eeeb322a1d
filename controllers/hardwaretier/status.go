// Package hardwaretier reports what each HardwareTier covers: its nodes, their GPUs
// and how many are allocated, the largest gangs its free GPUs hold, and whether it
// overlaps another tier.
package hardwaretier

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-nexus/kubenexus/api/hardware"
	"github.com/kube-nexus/kubenexus/api/topology"
	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
)

// Reasons of the Overlapping condition.
const (
	ReasonOverlap      = "SelectorsOverlap"
	ReasonNoOverlap    = "Disjoint"
	ReasonBadSelector  = "InvalidSelector"
	maxNamedNodes      = 3
	maxNamedOtherTiers = 5
)

// ComputeStatus is tier's status given every tier, every node, the DRA devices
// each node's ResourceSlices publish (for tiers that select by them) and the GPUs
// that unfinished pods bound to a node request. A node in two tiers makes
// both report Overlapping with the other tier's name and an example node: the
// scheduler could not tell which tier's tenants own it.
func ComputeStatus(tier *v1alpha1.HardwareTier, tiers []v1alpha1.HardwareTier, nodes []corev1.Node, devicesOf func(node string) []hardware.Device, extendedOf func(node string) map[corev1.ResourceName]int64, cardsOf func(node string) *hardware.GPUs, gpuAllocated func(node string) int64, gpuResources []corev1.ResourceName, levels []topology.Level) v1alpha1.HardwareTierStatus {
	status := *tier.Status.DeepCopy()
	status.ObservedGeneration = tier.Generation
	status.Nodes, status.GPUCapacity, status.GPUAllocated = 0, 0, 0
	status.LargestPlaceableGangs = nil

	sel, err := hardware.NewSelector(&tier.Spec)
	if err != nil {
		setCondition(&status, tier.Generation, metav1.ConditionUnknown, ReasonBadSelector, err.Error())
		return status
	}
	others := map[string]*hardware.Selector{}
	for i := range tiers {
		t := &tiers[i]
		if t.Name == tier.Name {
			continue
		}
		if s, err := hardware.NewSelector(&t.Spec); err == nil {
			others[t.Name] = s
		}
	}
	overlaps := map[string][]string{} // other tier → shared nodes
	var gpuNodes []placement.GPUNode
	for i := range nodes {
		n := &nodes[i]
		devs := devicesOf(n.Name)
		if !sel.Matches(n.Labels, devs) {
			continue
		}
		status.Nodes++
		// GPUs as every component counts them (hardware.NodeGPUs): a card is
		// allocated when any of it is (a shared GPU partly used holds no whole-GPU
		// member).
		var extended map[corev1.ResourceName]int64
		if extendedOf != nil {
			extended = extendedOf(n.Name)
		}
		g := cardsOf(n.Name)
		capacity, fromCards := hardware.NodeGPUs(n.Status.Allocatable, extended, g, gpuResources)
		used := gpuAllocated(n.Name)
		if fromCards {
			used = capacity - g.FreeCards()
		}
		status.GPUCapacity += capacity
		status.GPUAllocated += used
		gpuNodes = append(gpuNodes, placement.GPUNode{Name: n.Name, Free: max(capacity-used, 0), Domains: topology.DomainsOf(levels, n.Labels)})
		for name, s := range others {
			if s.Matches(n.Labels, devs) {
				overlaps[name] = append(overlaps[name], n.Name)
			}
		}
	}
	if status.GPUCapacity > 0 {
		for _, g := range placement.LargestGangs(gpuNodes, levels) {
			status.LargestPlaceableGangs = append(status.LargestPlaceableGangs, v1alpha1.PlaceableGang{
				GPUsPerMember: int32(g.GPUsPerMember), Level: g.Level, Members: int32(min(g.Members, 1<<30)), Domain: g.Domain})
		}
	}
	if len(overlaps) == 0 {
		setCondition(&status, tier.Generation, metav1.ConditionFalse, ReasonNoOverlap, "No node is selected by another HardwareTier.")
		return status
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range overlaps {
			if !yield(n) {
				return
			}
		}
	})
	var parts []string
	for i, name := range names {
		if i == maxNamedOtherTiers {
			parts = append(parts, fmt.Sprintf("and %d more tiers", len(names)-i))
			break
		}
		shared := overlaps[name]
		slices.Sort(shared)
		example := shared[:min(len(shared), maxNamedNodes)]
		parts = append(parts, fmt.Sprintf("%s (%d nodes, e.g. %s)", name, len(shared), strings.Join(example, ", ")))
	}
	setCondition(&status, tier.Generation, metav1.ConditionTrue, ReasonOverlap,
		"Nodes selected by this tier are also selected by "+strings.Join(parts, "; ")+". Make the selectors disjoint.")
	return status
}

func setCondition(s *v1alpha1.HardwareTierStatus, gen int64, st metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&s.Conditions, metav1.Condition{
		Type: v1alpha1.HardwareTierConditionOverlap, Status: st, Reason: reason, Message: msg, ObservedGeneration: gen,
	})
}
