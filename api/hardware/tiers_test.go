package hardware_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-nexus/kubenexus/api/hardware"
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
func demoTiers(t *testing.T) *hardware.TierSet {
	t.Helper()
	s, errs := hardware.NewTierSet([]v1alpha1.HardwareTier{
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
	if got := s.Of(map[string]string{"hw": "standard", "zone": "a"}, nil); got == nil || got.Name() != "standard" {
		t.Errorf("standard node: tier %v", got)
	}
	if got := s.Of(map[string]string{"zone": "a"}, nil); got != nil {
		t.Errorf("unlabelled node: tier %s, want none", got.Name())
	}
	// Two tiers selecting one node (admission refuses this, but a node relabelled
	// later can do it): the higher rank applies.
	overlap, _ := hardware.NewTierSet([]v1alpha1.HardwareTier{
		*testutil.MakeHardwareTier("cheap", 5).Selector(metav1.LabelSelector{MatchLabels: map[string]string{"zone": "a"}}).Tenants(bronze).Obj(),
		*testutil.MakeHardwareTier("gpu", 90).Selector(hwSelector("gpu")).Tenants(gold).Obj(),
	})
	if got := overlap.Of(map[string]string{"hw": "gpu", "zone": "a"}, nil); got == nil || got.Name() != "gpu" {
		t.Errorf("node in two tiers: %v, want gpu (higher rank)", got)
	}
}

func TestAccessAndMessage(t *testing.T) {
	s := demoTiers(t)
	premium, standard := s.Of(map[string]string{"hw": "premium"}, nil), s.Of(map[string]string{"hw": "standard"}, nil)
	for _, tc := range []struct {
		t           *hardware.Tier
		tenant      v1alpha1.TenantTier
		preemptible bool
		want        hardware.Access
	}{
		{premium, gold, false, hardware.Allowed},
		{premium, bronze, false, hardware.Denied},
		{premium, bronze, true, hardware.Borrowed},
		{standard, bronze, false, hardware.Denied},
		{standard, bronze, true, hardware.Denied}, // standard lends to nobody
		{standard, silver, false, hardware.Allowed},
	} {
		if got := tc.t.AccessFor(tc.tenant, tc.preemptible); got != tc.want {
			t.Errorf("%s for %s (preemptible %v): %v, want %v", tc.t.Name(), tc.tenant, tc.preemptible, got, tc.want)
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
	node := func(hw string) *hardware.Tier { return s.Of(map[string]string{"hw": hw}, nil) }
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
		var tr *hardware.Tier
		if tc.hw != "" {
			tr = node(tc.hw)
		}
		if got := s.Score(tr, tc.tenant, tc.preemptible, 40, 5); got != tc.want {
			t.Errorf("%q node for %s (preemptible %v): score %d, want %d", tc.hw, tc.tenant, tc.preemptible, got, tc.want)
		}
	}
	// One tier: no rank spread, every tenant allowed on it scores the middle.
	single, _ := hardware.NewTierSet([]v1alpha1.HardwareTier{*testutil.MakeHardwareTier("only", 7).Selector(hwSelector("x")).Tenants(gold, bronze).Obj()})
	only := single.Of(map[string]string{"hw": "x"}, nil)
	if g, b := single.Score(only, gold, false, 50, 0), single.Score(only, bronze, false, 50, 0); g != 75 || b != 75 {
		t.Errorf("single tier scores gold %d bronze %d, want 75 75", g, b)
	}
}

// Selectors the API server would refuse are reported and their tiers left out.
func TestUnusableSelectorsAreIgnored(t *testing.T) {
	s, errs := hardware.NewTierSet([]v1alpha1.HardwareTier{
		*testutil.MakeHardwareTier("all", 1).Selector(metav1.LabelSelector{}).Tenants(gold).Obj(),
		*testutil.MakeHardwareTier("bad", 2).Selector(metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "hw", Operator: "Near"}}}).Obj(),
	})
	if len(errs) != 2 || !strings.Contains(errs[0].Error(), "HardwareTier all: spec.nodeSelector is empty and spec.deviceSelectors is unset: the tier would select every node; the tier is ignored") ||
		!strings.Contains(errs[1].Error(), "HardwareTier bad:") {
		t.Errorf("errors %v", errs)
	}
	if !s.Empty() {
		t.Errorf("tiers %v, want none", s)
	}
}

func TestTierSetRefusesHolding(t *testing.T) {
	tier := func(name string, rank int32, product string, borrowing v1alpha1.BorrowingPolicy, allowed ...v1alpha1.TenantTier) v1alpha1.HardwareTier {
		return v1alpha1.HardwareTier{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.HardwareTierSpec{
			Rank: rank, NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"nvidia.com/gpu.product": product}},
			AllowedTenantTiers: allowed, Borrowing: borrowing}}
	}
	tiers, _ := hardware.NewTierSet([]v1alpha1.HardwareTier{
		tier("standard", 50, "A100", v1alpha1.BorrowingPreemptible, v1alpha1.TenantTierGold, v1alpha1.TenantTierSilver),
		tier("premium", 100, "H100", v1alpha1.BorrowingNever, v1alpha1.TenantTierGold),
		// An overlapping lower tier: the higher rank's policy applies.
		tier("loose", 10, "H100", v1alpha1.BorrowingNever, v1alpha1.TenantTierBronze),
	})
	h100 := map[string]string{"nvidia.com/gpu.product": "H100"}
	a100 := map[string]string{"nvidia.com/gpu.product": "A100"}
	tests := map[string]struct {
		labels map[string]string
		tenant v1alpha1.TenantTier
		want   string
	}{
		"gold on premium":                        {h100, v1alpha1.TenantTierGold, ""},
		"bronze on premium":                      {h100, v1alpha1.TenantTierBronze, "node h100-7 is in HardwareTier premium, which admits tenant tiers [gold]; tenant tier bronze may not hold capacity there"},
		"bronze on a tier that lends to it":      {a100, v1alpha1.TenantTierBronze, "node h100-7 is in HardwareTier standard, which admits tenant tiers [gold silver]; tenant tier bronze may not hold capacity there"},
		"silver on standard":                     {a100, v1alpha1.TenantTierSilver, ""},
		"bronze on a node no tier selects":       {map[string]string{"nvidia.com/gpu.product": "L4"}, v1alpha1.TenantTierBronze, ""},
		"bronze on a node with no labels at all": {nil, v1alpha1.TenantTierBronze, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tiers.RefusesHolding("h100-7", tc.labels, nil, tc.tenant); got != tc.want {
				t.Errorf("RefusesHolding = %q, want %q", got, tc.want)
			}
		})
	}
	var none *hardware.TierSet
	if got := none.RefusesHolding("n", h100, nil, v1alpha1.TenantTierBronze); got != "" {
		t.Errorf("no tiers refused: %q", got)
	}
}
