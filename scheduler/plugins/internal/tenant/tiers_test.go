package tenant

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	testutil "github.com/kube-nexus/kubenexus/test/util"
)

const (
	gold   = v1alpha1.TenantTierGold
	silver = v1alpha1.TenantTierSilver
	bronze = v1alpha1.TenantTierBronze
)

func hwSelector(v string) metav1.LabelSelector {
	return metav1.LabelSelector{MatchLabels: map[string]string{"hw": v}}
}

// The demo's tiers: premium H100 for gold (lent to preemptible pods), standard for
// gold and silver, economy for everyone.
func demoTiers(t *testing.T) *TierSet {
	t.Helper()
	s, errs := newTierSet([]v1alpha1.HardwareTier{
		*testutil.MakeHardwareTier("standard", 50).Selector(hwSelector("standard")).Tenants(gold, silver).Obj(),
		*testutil.MakeHardwareTier("premium", 100).Selector(hwSelector("premium")).Tenants(gold).Borrowing(v1alpha1.BorrowingPreemptible).Obj(),
		*testutil.MakeHardwareTier("economy", 10).Selector(hwSelector("economy")).Tenants(gold, silver, bronze).Obj(),
	})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return s
}

func TestTierOfNode(t *testing.T) {
	s := demoTiers(t)
	if got := s.Of("n", map[string]string{"hw": "standard", "zone": "a"}, nil); got == nil || got.name != "standard" {
		t.Errorf("standard node: tier %v", got)
	}
	if got := s.Of("n", map[string]string{"zone": "a"}, nil); got != nil {
		t.Errorf("unlabelled node: tier %s, want none", got.name)
	}
	// Two tiers selecting one node (admission refuses this, but a node relabelled
	// later can do it): the higher rank applies.
	overlap, _ := newTierSet([]v1alpha1.HardwareTier{
		*testutil.MakeHardwareTier("cheap", 5).Selector(metav1.LabelSelector{MatchLabels: map[string]string{"zone": "a"}}).Tenants(bronze).Obj(),
		*testutil.MakeHardwareTier("gpu", 90).Selector(hwSelector("gpu")).Tenants(gold).Obj(),
	})
	if got := overlap.Of("n", map[string]string{"hw": "gpu", "zone": "a"}, nil); got == nil || got.name != "gpu" {
		t.Errorf("node in two tiers: %v, want gpu (higher rank)", got)
	}
}

func TestAccessAndMessage(t *testing.T) {
	s := demoTiers(t)
	premium, standard := s.Of("n", map[string]string{"hw": "premium"}, nil), s.Of("n", map[string]string{"hw": "standard"}, nil)
	for _, tc := range []struct {
		t           *Tier
		tenant      v1alpha1.TenantTier
		preemptible bool
		want        access
	}{
		{premium, gold, false, allowed},
		{premium, bronze, false, denied},
		{premium, bronze, true, borrowed},
		{standard, bronze, false, denied},
		{standard, bronze, true, denied}, // standard lends to nobody
		{standard, silver, false, allowed},
	} {
		if got := tc.t.AccessFor(tc.tenant, tc.preemptible); got != tc.want {
			t.Errorf("%s for %s (preemptible %v): %v, want %v", tc.t.name, tc.tenant, tc.preemptible, got, tc.want)
		}
	}
	if m := standard.Message(bronze); m != "node is in HardwareTier standard, which admits tenant tiers [gold silver] and does not lend to tier bronze" {
		t.Errorf("message %q", m)
	}
	if m := premium.Message(bronze); !strings.Contains(m, "may borrow it only with workload.kubenexus.io/preemptible=true") {
		t.Errorf("message %q", m)
	}
}

func TestScore(t *testing.T) {
	s := demoTiers(t)
	node := func(hw string) *Tier { return s.Of("n", map[string]string{"hw": hw}, nil) }
	for _, tc := range []struct {
		hw          string // "" for an untiered node
		tenant      v1alpha1.TenantTier
		preemptible bool
		want        int64
	}{
		// Gold climbs the ranks: premium 100, standard (rank 50 of 10..100) 72, economy 50.
		{"premium", gold, false, 100},
		{"standard", gold, false, 72},
		{"economy", gold, false, 50},
		// Bronze descends them.
		{"economy", bronze, false, 100},
		// Silver has no preference among the tiers it may use.
		{"standard", silver, false, 75},
		{"economy", silver, false, 75},
		// Borrowed and untiered nodes score what the args say.
		{"premium", bronze, true, 5},
		{"", bronze, false, 40},
		{"", gold, false, 40},
	} {
		var tr *Tier
		if tc.hw != "" {
			tr = node(tc.hw)
		}
		if got := s.score(tr, tc.tenant, tc.preemptible, 40, 5); got != tc.want {
			t.Errorf("%q node for %s (preemptible %v): score %d, want %d", tc.hw, tc.tenant, tc.preemptible, got, tc.want)
		}
	}
	// One tier: no rank spread, every tenant allowed on it scores the middle.
	single, _ := newTierSet([]v1alpha1.HardwareTier{*testutil.MakeHardwareTier("only", 7).Selector(hwSelector("x")).Tenants(gold, bronze).Obj()})
	only := single.Of("n", map[string]string{"hw": "x"}, nil)
	if g, b := single.score(only, gold, false, 50, 0), single.score(only, bronze, false, 50, 0); g != 75 || b != 75 {
		t.Errorf("single tier scores gold %d bronze %d, want 75 75", g, b)
	}
}

// Selectors the API server would refuse are reported and their tiers left out.
func TestUnusableSelectorsAreIgnored(t *testing.T) {
	s, errs := newTierSet([]v1alpha1.HardwareTier{
		*testutil.MakeHardwareTier("all", 1).Selector(metav1.LabelSelector{}).Tenants(gold).Obj(),
		*testutil.MakeHardwareTier("bad", 2).Selector(metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "hw", Operator: "Near"}}}).Obj(),
	})
	if len(errs) != 2 || !strings.Contains(errs[0].Error(), "HardwareTier all: spec.nodeSelector is empty and spec.deviceSelectors is unset: the tier would select every node; the tier is ignored") ||
		!strings.Contains(errs[1].Error(), "HardwareTier bad:") {
		t.Errorf("errors %v", errs)
	}
	if len(s.tiers) != 0 {
		t.Errorf("tiers %v, want none", s.tiers)
	}
}
