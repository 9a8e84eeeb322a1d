package hardware

import (
	"fmt"
	"slices"
	"strings"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// TierSet is the cluster's HardwareTiers as KubeNexus applies them, the one model
// of them: the scheduler's TenantHardware, NetworkFabric, GangPreemption and
// ResourceReservation, the manager's ResourceReservation webhook and its
// feasibility engine all ask it which tier a node is in and what that tier lets a
// tenant do. Tiers are ordered by rank (highest first, then by name): when two
// select a node the higher rank wins (admission refuses overlapping selectors; this
// keeps the stricter policy if two still overlap). A TierSet is immutable; a
// change of a HardwareTier makes a new one.
type TierSet struct {
	tiers            []Tier
	minRank, maxRank int32
	// usesDevices: some tier selects nodes by their DRA devices.
	usesDevices bool
	// usesClusterQueues: some tier is limited to Kueue ClusterQueues.
	usesClusterQueues bool
}

// Tier is one HardwareTier with its selector built.
type Tier struct {
	name      string
	rank      int32
	selector  *Selector
	allowed   []v1alpha1.TenantTier
	borrowing v1alpha1.BorrowingPolicy
	// clusterQueues limit the tier to workloads Kueue admitted through them.
	clusterQueues []string
}

// NewTierSet builds the tiers' selectors. A selector the API server accepted
// always converts; one that does not is reported and its tier left out.
func NewTierSet(hwts []v1alpha1.HardwareTier) (*TierSet, []error) {
	s := &TierSet{}
	var errs []error
	for i := range hwts {
		h := &hwts[i]
		sel, err := NewSelector(&h.Spec)
		if err != nil {
			errs = append(errs, fmt.Errorf("HardwareTier %s: %w; the tier is ignored", h.Name, err))
			continue
		}
		s.usesDevices = s.usesDevices || sel.UsesDevices()
		s.usesClusterQueues = s.usesClusterQueues || len(h.Spec.AllowedClusterQueues) > 0
		s.tiers = append(s.tiers, Tier{name: h.Name, rank: h.Spec.Rank, selector: sel, allowed: h.Spec.AllowedTenantTiers,
			borrowing: h.Spec.Borrowing, clusterQueues: h.Spec.AllowedClusterQueues})
	}
	slices.SortStableFunc(s.tiers, func(a, b Tier) int {
		if a.rank != b.rank {
			return int(b.rank - a.rank)
		}
		return strings.Compare(a.name, b.name)
	})
	if len(s.tiers) > 0 {
		s.maxRank, s.minRank = s.tiers[0].rank, s.tiers[len(s.tiers)-1].rank
	}
	return s, errs
}

// Empty reports whether there are no HardwareTiers (nil: none known yet).
func (s *TierSet) Empty() bool { return s == nil || len(s.tiers) == 0 }

// UsesDevices reports whether some tier selects nodes by their DRA devices (a
// caller need not read devices otherwise).
func (s *TierSet) UsesDevices() bool { return s != nil && s.usesDevices }

// UsesClusterQueues reports whether some tier is limited to Kueue ClusterQueues.
func (s *TierSet) UsesClusterQueues() bool { return s != nil && s.usesClusterQueues }

// Of returns the tier of a node with these labels and devices, or nil.
func (s *TierSet) Of(nodeLabels map[string]string, devs []Device) *Tier {
	if s == nil {
		return nil
	}
	for i := range s.tiers {
		if s.tiers[i].selector.Matches(nodeLabels, devs) {
			return &s.tiers[i]
		}
	}
	return nil
}

// OfNode is Of for the node named nodeName, whose devices are read (from devices;
// nil: none) only when a tier selects by them.
func (s *TierSet) OfNode(nodeName string, nodeLabels map[string]string, devices func(node string) []Device) *Tier {
	var devs []Device
	if s.UsesDevices() && devices != nil {
		devs = devices(nodeName)
	}
	return s.Of(nodeLabels, devs)
}

// Denied reports whether the tier of the node denies a pod of tenant tier tenant.
func (s *TierSet) Denied(nodeName string, nodeLabels map[string]string, devices func(string) []Device, tenant v1alpha1.TenantTier, preemptible bool) bool {
	t := s.OfNode(nodeName, nodeLabels, devices)
	return t != nil && t.AccessFor(tenant, preemptible) == Denied
}

// Score rates a node of tier t (nil: untiered, scored untiered) for a pod of tenant
// tier tenant on the 0–100 scale: a tier it borrows scores borrowed; an allowed
// tier 50–100 by how well its rank suits the tenant — gold the highest rank, bronze
// the lowest, silver indifferent (75).
func (s *TierSet) Score(t *Tier, tenant v1alpha1.TenantTier, preemptible bool, untiered, borrowed int64) int64 {
	if t == nil {
		return untiered
	}
	switch t.AccessFor(tenant, preemptible) {
	case Borrowed:
		return borrowed
	case Denied:
		return 0 // a filter keeps such nodes out; a score is only asked for feasible ones
	}
	r := 0.5 // position of the rank between the lowest and the highest, 0..1
	if s.maxRank > s.minRank {
		r = float64(t.rank-s.minRank) / float64(s.maxRank-s.minRank)
	}
	switch tenant {
	case v1alpha1.TenantTierGold:
		return 50 + int64(50*r+0.5)
	case v1alpha1.TenantTierBronze:
		return 50 + int64(50*(1-r)+0.5)
	default:
		return 75
	}
}

// RefusesHolding explains why a tenant of tier tenant may not hold capacity (a
// ResourceReservation) on the node: its HardwareTier does not admit the tenant
// tier. Borrowing does not count — it is for preemptible pods, and held capacity is
// not preemptible. "" when the node is open to the tenant (in a tier that admits
// it, or in none).
func (s *TierSet) RefusesHolding(nodeName string, nodeLabels map[string]string, devices func(string) []Device, tenant v1alpha1.TenantTier) string {
	t := s.OfNode(nodeName, nodeLabels, devices)
	if t == nil || t.AccessFor(tenant, false) == Allowed {
		return ""
	}
	return fmt.Sprintf("node %s is in HardwareTier %s, which admits tenant tiers %v; tenant tier %s may not hold capacity there",
		nodeName, t.name, t.allowed, tenant)
}

// Name is the HardwareTier's name.
func (t *Tier) Name() string { return t.name }

// AccessFor is what the tier lets a pod of tenant tier tenant do on its nodes.
func (t *Tier) AccessFor(tenant v1alpha1.TenantTier, preemptible bool) Access {
	return AccessFor(t.allowed, t.borrowing, tenant, preemptible)
}

// AdmitsClusterQueue reports whether the tier admits a pod Kueue admitted through
// clusterQueue ("": not through Kueue).
func (t *Tier) AdmitsClusterQueue(clusterQueue string) bool {
	return AdmitsClusterQueue(t.clusterQueues, clusterQueue)
}

// ClusterQueueMessage explains why a node of tier t is refused to a pod admitted
// through clusterQueue.
func (t *Tier) ClusterQueueMessage(clusterQueue string) string {
	via := "was not admitted through Kueue"
	if clusterQueue != "" {
		via = "was admitted through ClusterQueue " + clusterQueue
	}
	return fmt.Sprintf("node is in HardwareTier %s, which admits only workloads of Kueue ClusterQueues %v; the pod %s", t.name, t.clusterQueues, via)
}

// Message explains why a node of tier t is refused to a pod of tenant tier tenant.
func (t *Tier) Message(tenant v1alpha1.TenantTier) string {
	if t.borrowing == v1alpha1.BorrowingPreemptible {
		return fmt.Sprintf("node is in HardwareTier %s, which admits tenant tiers %v; tier %s may borrow it only with %s=true",
			t.name, t.allowed, tenant, v1alpha1.LabelPreemptible)
	}
	return fmt.Sprintf("node is in HardwareTier %s, which admits tenant tiers %v and does not lend to tier %s", t.name, t.allowed, tenant)
}
