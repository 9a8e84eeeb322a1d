package tenant

import (
	"fmt"
	"slices"

	"github.com/kube-nexus/kubenexus/api/hardware"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// Tier is one HardwareTier as the scheduler evaluates it.
type Tier struct {
	name      string
	rank      int32
	selector  *hardware.Selector
	allowed   []v1alpha1.TenantTier
	borrowing v1alpha1.BorrowingPolicy
	// clusterQueues limit the tier to workloads Kueue admitted through them.
	clusterQueues []string
}

// TierSet is an immutable snapshot of the cluster's HardwareTiers, replaced as a
// whole when one changes.
type TierSet struct {
	// tiers are ordered by rank, highest first, then by name.
	tiers            []Tier
	minRank, maxRank int32
	// usesDevices: some tier selects nodes by their DRA devices.
	usesDevices bool
	// usesClusterQueues: some tier is limited to Kueue ClusterQueues.
	usesClusterQueues bool
}

// newTierSet builds the snapshot. A selector the API server accepted always
// converts; one that does not is reported and its tier left out.
func newTierSet(hwts []v1alpha1.HardwareTier) (*TierSet, []error) {
	s := &TierSet{}
	var errs []error
	for i := range hwts {
		h := &hwts[i]
		sel, err := hardware.NewSelector(&h.Spec)
		if err != nil {
			errs = append(errs, fmt.Errorf("HardwareTier %s: %w; the tier is ignored", h.Name, err))
			continue
		}
		s.usesDevices = s.usesDevices || sel.UsesDevices()
		s.usesClusterQueues = s.usesClusterQueues || len(h.Spec.AllowedClusterQueues) > 0
		s.tiers = append(s.tiers, Tier{name: h.Name, rank: h.Spec.Rank, selector: sel, allowed: h.Spec.AllowedTenantTiers, borrowing: h.Spec.Borrowing,
			clusterQueues: h.Spec.AllowedClusterQueues})
	}
	slices.SortFunc(s.tiers, func(a, b Tier) int {
		if a.rank != b.rank {
			return int(b.rank - a.rank)
		}
		if a.name < b.name {
			return -1
		}
		return 1
	})
	if len(s.tiers) > 0 {
		s.maxRank, s.minRank = s.tiers[0].rank, s.tiers[len(s.tiers)-1].rank
	}
	return s, errs
}

// DeviceLister gives a node's DRA devices.
type DeviceLister interface {
	OnNode(node string) []hardware.Device
}

// Of returns the tier of a node with these labels, or nil. The node's devices are
// read (from devices; nil: none) only when a tier selects by them. Admission refuses
// overlapping selectors; if two tiers still select a node, the higher rank wins, so
// the stricter policy usually applies.
func (s *TierSet) Of(nodeName string, nodeLabels map[string]string, devices DeviceLister) *Tier {
	var devs []hardware.Device
	if s.usesDevices && devices != nil {
		devs = devices.OnNode(nodeName)
	}
	for i := range s.tiers {
		if s.tiers[i].selector.Matches(nodeLabels, devs) {
			return &s.tiers[i]
		}
	}
	return nil
}

// access is what a tier lets a pod do on its nodes.
type access = hardware.Access

const (
	allowed  = hardware.Allowed
	borrowed = hardware.Borrowed
	denied   = hardware.Denied
)

func (t *Tier) AccessFor(tenant v1alpha1.TenantTier, preemptible bool) access {
	return hardware.AccessFor(t.allowed, t.borrowing, tenant, preemptible)
}

// score rates a node of tier t (nil: untiered) for a pod of tenant tier tenant, on
// the 0–100 scale: an allowed tier scores 50–100 by how well its rank suits the
// tenant — gold the highest rank, bronze the lowest, silver indifferent (75).
func (s *TierSet) score(t *Tier, tenant v1alpha1.TenantTier, preemptible bool, untiered, borrowedScore int64) int64 {
	if t == nil {
		return untiered
	}
	switch t.AccessFor(tenant, preemptible) {
	case borrowed:
		return borrowedScore
	case denied:
		return 0 // Filter keeps such nodes out; a score is only asked for feasible ones
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

// AdmitsClusterQueue reports whether the tier admits a pod Kueue admitted through
// clusterQueue ("": not through Kueue).
func (t *Tier) AdmitsClusterQueue(clusterQueue string) bool {
	return hardware.AdmitsClusterQueue(t.clusterQueues, clusterQueue)
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

// Message explains why a node of tier t is refused to the pod.
func (t *Tier) Message(tenant v1alpha1.TenantTier) string {
	if t.borrowing == v1alpha1.BorrowingPreemptible {
		return fmt.Sprintf("node is in HardwareTier %s, which admits tenant tiers %v; tier %s may borrow it only with %s=true",
			t.name, t.allowed, tenant, v1alpha1.LabelPreemptible)
	}
	return fmt.Sprintf("node is in HardwareTier %s, which admits tenant tiers %v and does not lend to tier %s", t.name, t.allowed, tenant)
}

// Empty reports whether there are no HardwareTiers (nil: no snapshot yet).
func (s *TierSet) Empty() bool { return s == nil || len(s.tiers) == 0 }

// UsesDevices reports whether some tier selects nodes by their DRA devices.
func (s *TierSet) UsesDevices() bool { return s != nil && s.usesDevices }

// Denied reports whether a tier a node of these labels is in denies a pod of
// tenant tier tenant.
func (s *TierSet) Denied(nodeName string, nodeLabels map[string]string, devices DeviceLister, tenant v1alpha1.TenantTier, preemptible bool) bool {
	t := s.Of(nodeName, nodeLabels, devices)
	return t != nil && t.AccessFor(tenant, preemptible) == denied
}

// UsesClusterQueues reports whether some tier is limited to Kueue ClusterQueues.
func (s *TierSet) UsesClusterQueues() bool { return s != nil && s.usesClusterQueues }
