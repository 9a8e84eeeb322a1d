package gang

import (
	"slices"
	"testing"
)

func TestRoleShortfall(t *testing.T) {
	min := map[string]int32{"driver": 1, "executor": 4}
	tests := []struct {
		have map[string]int
		want []string
	}{
		{map[string]int{"driver": 1, "executor": 4}, nil},
		{map[string]int{"driver": 2, "executor": 9, "other": 1}, nil},
		{map[string]int{"executor": 5}, []string{"driver 0/1"}},
		{map[string]int{"": 9, "executor": 3}, []string{"driver 0/1", "executor 3/4"}},
	}
	for _, tc := range tests {
		got := RoleShortfall(min, tc.have)
		if !slices.Equal(got, tc.want) {
			t.Errorf("RoleShortfall(%v) = %q, want %q", tc.have, got, tc.want)
		}
		if met := RolesMet(min, tc.have); met != (len(tc.want) == 0) {
			t.Errorf("RolesMet(%v) = %v, want %v", tc.have, met, len(tc.want) == 0)
		}
	}
	if got := DescribeShortfall([]string{"decode 1/2", "prefill 0/1"}); got != "roles short: decode 1/2, prefill 0/1" {
		t.Errorf("DescribeShortfall = %q", got)
	}
	if !RolesMet(nil, nil) || len(RoleShortfall(nil, map[string]int{"x": 1})) != 0 {
		t.Error("no per-role minimums must always be met")
	}
}
