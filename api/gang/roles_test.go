package gang

import (
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
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

// A nested composite: serve needs one of its replicas, each replica both of its
// PodGroups.
func TestRolesSets(t *testing.T) {
	r := Roles{
		Min: map[string]int32{"r0-prefill": 2, "r0-decode": 4, "r1-prefill": 1, "r1-decode": 2},
		Sets: []v1alpha1.RoleSet{{Name: "serve", Need: 1, Sets: []int{1, 2}},
			{Name: "r0", Need: 2, Roles: []string{"r0-decode", "r0-prefill"}}, {Name: "r1", Need: 2, Roles: []string{"r1-decode", "r1-prefill"}}},
	}
	tests := map[string]struct {
		have map[string]int
		met  bool
	}{
		"one whole replica":               {map[string]int{"r1-prefill": 1, "r1-decode": 2}, true},
		"the other whole replica":         {map[string]int{"r0-prefill": 2, "r0-decode": 4}, true},
		"half of each replica":            {map[string]int{"r0-prefill": 2, "r1-decode": 2}, false},
		"one replica short of one member": {map[string]int{"r0-prefill": 2, "r0-decode": 3}, false},
		"nothing":                         {nil, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := RolesMet(r, tc.have); got != tc.met {
				t.Errorf("RolesMet = %v, want %v", got, tc.met)
			}
			if short := RoleShortfall(r, tc.have); (len(short) == 0) != tc.met {
				t.Errorf("RoleShortfall = %v, met %v", short, tc.met)
			}
		})
	}
	if diff := cmp.Diff(map[string]int32{"r1-prefill": 1, "r1-decode": 2}, r.Required()); diff != "" {
		t.Errorf("Required (-want +got):\n%s", diff)
	}
	got := DescribeShortfall(r, RoleShortfall(r, map[string]int{"r0-prefill": 2, "r1-decode": 2}))
	want := "roles short (serve needs 1 of r0, r1; r0 needs 2 of r0-decode, r0-prefill; r1 needs 2 of r1-decode, r1-prefill): r0-decode 0/4, r1-prefill 0/1"
	if got != want {
		t.Errorf("DescribeShortfall:\n got %s\nwant %s", got, want)
	}
}
