package hardware

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

func TestTiersRefusesHolding(t *testing.T) {
	tier := func(name string, rank int32, product string, borrowing v1alpha1.BorrowingPolicy, allowed ...v1alpha1.TenantTier) v1alpha1.HardwareTier {
		return v1alpha1.HardwareTier{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.HardwareTierSpec{
			Rank: rank, NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"nvidia.com/gpu.product": product}},
			AllowedTenantTiers: allowed, Borrowing: borrowing}}
	}
	tiers := NewTiers([]v1alpha1.HardwareTier{
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
	var none *Tiers
	if got := none.RefusesHolding("n", h100, nil, v1alpha1.TenantTierBronze); got != "" {
		t.Errorf("no tiers refused: %q", got)
	}
}
