package gang

import (
	"fmt"
	"slices"
	"strings"
)

// RoleShortfall lists the roles of minPerRole (a PodGroup's spec.minMemberPerRole)
// whose count in have falls short of their minimum, in role order, each as
// "role have/min" (e.g. "driver 0/1"). It is empty when every minimum is met.
func RoleShortfall(minPerRole map[string]int32, have map[string]int) []string {
	var short []string
	for role, want := range minPerRole {
		if got := have[role]; got < int(want) {
			short = append(short, fmt.Sprintf("%s %d/%d", role, got, want))
		}
	}
	slices.Sort(short)
	return short
}

// RolesMet reports whether have meets every minimum of minPerRole.
func RolesMet(minPerRole map[string]int32, have map[string]int) bool {
	for role, want := range minPerRole {
		if have[role] < int(want) {
			return false
		}
	}
	return true
}

// DescribeShortfall joins RoleShortfall's entries for a message: "role driver 0/1,
// decode 1/2" becomes "roles short: decode 1/2, driver 0/1".
func DescribeShortfall(short []string) string {
	if len(short) == 0 {
		return ""
	}
	return "roles short: " + strings.Join(short, ", ")
}
