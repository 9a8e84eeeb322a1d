package gang

import (
	"fmt"
	"slices"
	"strings"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// Roles are a gang's per-role minimums (a PodGroup's spec.minMemberPerRole, the
// children of a CompositePodGroup, the leaf sub-groups of a KAI PodGroup): every
// role's minimum must be met, or, when Need is above 0, the minimums of any Need of
// them (a CompositePodGroup whose minGroupCount is below its number of children).
type Roles struct {
	Min  map[string]int32
	Need int
}

// RolesOf are pg's per-role minimums (none for a nil pg).
func RolesOf(pg *v1alpha1.PodGroup) Roles {
	if pg == nil {
		return Roles{}
	}
	return Roles{Min: pg.Spec.MinMemberPerRole, Need: int(pg.Spec.MinRolesMet)}
}

// needed is how many roles must meet their minimum.
func (r Roles) needed() int {
	if r.Need > 0 && r.Need < len(r.Min) {
		return r.Need
	}
	return len(r.Min)
}

// RoleShortfall lists the roles of r whose count in have falls short of their
// minimum, in role order, each as "role have/min" (e.g. "driver 0/1"). It is empty
// when r is met: every minimum, or Need of them.
func RoleShortfall(r Roles, have map[string]int) []string {
	if RolesMet(r, have) {
		return nil
	}
	var short []string
	for role, want := range r.Min {
		if got := have[role]; got < int(want) {
			short = append(short, fmt.Sprintf("%s %d/%d", role, got, want))
		}
	}
	slices.Sort(short)
	return short
}

// RolesMet reports whether have meets r.
func RolesMet(r Roles, have map[string]int) bool {
	met := 0
	for role, want := range r.Min {
		if have[role] >= int(want) {
			met++
		}
	}
	return met >= r.needed()
}

// Required is the minimums a start is planned for: every role's, or those of the
// Need roles with the smallest minimums (ties by name), as the quorum of such a
// gang is their sum.
func (r Roles) Required() map[string]int32 {
	if r.needed() == len(r.Min) {
		return r.Min
	}
	names := make([]string, 0, len(r.Min))
	for role := range r.Min {
		names = append(names, role)
	}
	slices.SortFunc(names, func(a, b string) int {
		if d := int(r.Min[a]) - int(r.Min[b]); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	out := make(map[string]int32, r.Need)
	for _, role := range names[:r.Need] {
		out[role] = r.Min[role]
	}
	return out
}

// DescribeShortfall joins RoleShortfall's entries for a message: "role driver 0/1,
// decode 1/2" becomes "roles short: decode 1/2, driver 0/1"; where any Need of the
// roles would do, "roles short (any 1 of 2 would do): a 1/3, b 0/2".
func DescribeShortfall(r Roles, short []string) string {
	if len(short) == 0 {
		return ""
	}
	if n := r.needed(); n < len(r.Min) {
		return fmt.Sprintf("roles short (any %d of %d would do): %s", n, len(r.Min), strings.Join(short, ", "))
	}
	return "roles short: " + strings.Join(short, ", ")
}
