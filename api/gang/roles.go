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
	// Sets, when there are any, replace Need: the gang's composites nested in one
	// another, the root first (v1alpha1.PodGroupSpec.RoleSets); each is met when
	// Need of its roles and nested sets are.
	Sets []v1alpha1.RoleSet
}

// RolesOf are pg's per-role minimums (none for a nil pg).
func RolesOf(pg *v1alpha1.PodGroup) Roles {
	if pg == nil {
		return Roles{}
	}
	return Roles{Min: pg.Spec.MinMemberPerRole, Need: int(pg.Spec.MinRolesMet), Sets: pg.Spec.RoleSets}
}

// setMet reports whether set i of r is met by have.
func (r Roles) setMet(i int, have map[string]int) bool {
	s := r.Sets[i]
	met := 0
	for _, role := range s.Roles {
		if have[role] >= int(r.Min[role]) {
			met++
		}
	}
	for _, k := range s.Sets {
		if k > i && k < len(r.Sets) && r.setMet(k, have) {
			met++
		}
	}
	return met >= min(int(s.Need), len(s.Roles)+len(s.Sets))
}

// setRequired adds to out the roles of set i whose minimums meet it with the fewest
// members — its Need cheapest roles and nested sets — and returns that count.
func (r Roles) setRequired(i int, out map[string]int32) int {
	s := r.Sets[i]
	type choice struct {
		cost  int
		roles map[string]int32
		name  string
	}
	var choices []choice
	for _, role := range s.Roles {
		choices = append(choices, choice{int(r.Min[role]), map[string]int32{role: r.Min[role]}, role})
	}
	for _, k := range s.Sets {
		if k > i && k < len(r.Sets) {
			sub := map[string]int32{}
			choices = append(choices, choice{r.setRequired(k, sub), sub, r.Sets[k].Name})
		}
	}
	slices.SortFunc(choices, func(a, b choice) int {
		if a.cost != b.cost {
			return a.cost - b.cost
		}
		return strings.Compare(a.name, b.name)
	})
	total := 0
	for _, c := range choices[:min(int(s.Need), len(choices))] {
		total += c.cost
		for role, m := range c.roles {
			out[role] = m
		}
	}
	return total
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
	if len(r.Sets) > 0 {
		return r.setMet(0, have)
	}
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
	if len(r.Sets) > 0 {
		out := map[string]int32{}
		r.setRequired(0, out)
		return out
	}
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
	if len(r.Sets) > 0 {
		return fmt.Sprintf("roles short (%s): %s", r.DescribeSets(), strings.Join(short, ", "))
	}
	if n := r.needed(); n < len(r.Min) {
		return fmt.Sprintf("roles short (any %d of %d would do): %s", n, len(r.Min), strings.Join(short, ", "))
	}
	return "roles short: " + strings.Join(short, ", ")
}

// maxSetsDescribed bounds how many sets a message describes.
const maxSetsDescribed = 8

// DescribeSets says what each set of a nested gang needs, root first: "serve needs 1
// of r0, r1; r0 needs 2 of decode-0, prefill-0; …".
func (r Roles) DescribeSets() string {
	parts := make([]string, 0, len(r.Sets))
	for i, s := range r.Sets {
		names := slices.Clone(s.Roles)
		for _, k := range s.Sets {
			if k > i && k < len(r.Sets) {
				names = append(names, r.Sets[k].Name)
			}
		}
		slices.Sort(names)
		if i == maxSetsDescribed {
			parts = append(parts, fmt.Sprintf("%d more", len(r.Sets)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%s needs %d of %s", s.Name, min(int(s.Need), len(names)), strings.Join(names, ", ")))
	}
	return strings.Join(parts, "; ")
}
