package hardware

import (
	"fmt"
	"slices"
	"strings"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// Tiers are the cluster's HardwareTiers with their selectors built, ordered by rank
// (highest first, then by name): when two tiers select a node, the higher rank wins
// (admission refuses overlapping selectors; this keeps the stricter policy if two
// still overlap). A tier whose selector cannot be built is left out.
type Tiers struct {
	tiers []compiledTier
	// devices: some tier selects nodes by their DRA devices.
	devices bool
}

type compiledTier struct {
	tier     *v1alpha1.HardwareTier
	selector *Selector
}

// NewTiers builds the selectors of hwts (which it keeps, unmodified).
func NewTiers(hwts []v1alpha1.HardwareTier) *Tiers {
	t := &Tiers{}
	for i := range hwts {
		sel, err := NewSelector(&hwts[i].Spec)
		if err != nil {
			continue
		}
		t.devices = t.devices || sel.UsesDevices()
		t.tiers = append(t.tiers, compiledTier{tier: &hwts[i], selector: sel})
	}
	slices.SortStableFunc(t.tiers, func(a, b compiledTier) int {
		if a.tier.Spec.Rank != b.tier.Spec.Rank {
			return int(b.tier.Spec.Rank - a.tier.Spec.Rank)
		}
		return strings.Compare(a.tier.Name, b.tier.Name)
	})
	return t
}

// UsesDevices reports whether some tier selects nodes by their DRA devices (a
// caller need not read devices otherwise).
func (t *Tiers) UsesDevices() bool { return t != nil && t.devices }

// Of returns the tier that selects a node with these labels and devices, or nil.
func (t *Tiers) Of(nodeLabels map[string]string, devs []Device) *v1alpha1.HardwareTier {
	if t == nil {
		return nil
	}
	for i := range t.tiers {
		if t.tiers[i].selector.Matches(nodeLabels, devs) {
			return t.tiers[i].tier
		}
	}
	return nil
}

// RefusesHolding explains why a tenant of tier tenant may not hold capacity (a
// ResourceReservation) on a node with these labels and devices: its HardwareTier
// does not admit the tenant tier. Borrowing does not count — it is for preemptible
// pods, and held capacity is not preemptible. "" when the node is open to the
// tenant (in a tier that admits it, or in none).
func (t *Tiers) RefusesHolding(nodeName string, nodeLabels map[string]string, devs []Device, tenant v1alpha1.TenantTier) string {
	tier := t.Of(nodeLabels, devs)
	if tier == nil || AccessFor(tier.Spec.AllowedTenantTiers, tier.Spec.Borrowing, tenant, false) == Allowed {
		return ""
	}
	return fmt.Sprintf("node %s is in HardwareTier %s, which admits tenant tiers %v; tenant tier %s may not hold capacity there",
		nodeName, tier.Name, tier.Spec.AllowedTenantTiers, tenant)
}
