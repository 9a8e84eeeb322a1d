package gang

import (
	"maps"
	"slices"
	"testing"
)

func TestRoleShortfall(t *testing.T) {
	every := Roles{Min: map[string]int32{"driver": 1, "executor": 4}}
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
		got := RoleShortfall(every, tc.have)
		if !slices.Equal(got, tc.want) {
			t.Errorf("RoleShortfall(%v) = %q, want %q", tc.have, got, tc.want)
		}
		if met := RolesMet(every, tc.have); met != (len(tc.want) == 0) {
			t.Errorf("RolesMet(%v) = %v, want %v", tc.have, met, len(tc.want) == 0)
		}
	}
	if got := DescribeShortfall(every, []string{"decode 1/2", "prefill 0/1"}); got != "roles short: decode 1/2, prefill 0/1" {
		t.Errorf("DescribeShortfall = %q", got)
	}
	if !RolesMet(Roles{}, nil) || len(RoleShortfall(Roles{}, map[string]int{"x": 1})) != 0 {
		t.Error("no per-role minimums must always be met")
	}
}

// A CompositePodGroup needing any one of its children: one child with its minimum
// is enough; members spread over both children that meet neither are not.
func TestRolesAnyOf(t *testing.T) {
	oneOf := Roles{Min: map[string]int32{"a": 3, "b": 2, "c": 2}, Need: 1}
	if RolesMet(oneOf, map[string]int{"a": 2, "b": 1, "c": 1}) {
		t.Error("met with no child at its minimum")
	}
	if got, want := RoleShortfall(oneOf, map[string]int{"a": 2, "b": 1}), []string{"a 2/3", "b 1/2", "c 0/2"}; !slices.Equal(got, want) {
		t.Errorf("RoleShortfall = %q, want %q", got, want)
	}
	if !RolesMet(oneOf, map[string]int{"a": 3}) || RoleShortfall(oneOf, map[string]int{"b": 2}) != nil {
		t.Error("not met with one child at its minimum")
	}
	if got := DescribeShortfall(oneOf, []string{"a 2/3", "b 1/2"}); got != "roles short (any 1 of 3 would do): a 2/3, b 1/2" {
		t.Errorf("DescribeShortfall = %q", got)
	}
	twoOf := Roles{Min: oneOf.Min, Need: 2}
	if RolesMet(twoOf, map[string]int{"a": 3, "b": 1}) || !RolesMet(twoOf, map[string]int{"a": 3, "c": 2}) {
		t.Error("two of three: wrong")
	}
	if got, want := twoOf.Required(), map[string]int32{"b": 2, "c": 2}; !maps.Equal(got, want) {
		t.Errorf("Required = %v, want the two smallest %v", got, want)
	}
	if got := (Roles{Min: oneOf.Min}).Required(); !maps.Equal(got, oneOf.Min) {
		t.Errorf("Required of every role = %v", got)
	}
}
