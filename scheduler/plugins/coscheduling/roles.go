package coscheduling

import (
	"maps"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
)

// minPerRole is the PodGroup's spec.minMemberPerRole (nil without a PodGroup): the
// gang is complete only when, on top of minMember, every role named there has its
// minimum.
func minPerRole(pg *v1alpha1.PodGroup) map[string]int32 {
	if pg == nil {
		return nil
	}
	return pg.Spec.MinMemberPerRole
}

// presentRoles counts the gang's ungated members by role, counting pod when the
// index has not delivered it yet. Callers hold the index lock.
func presentRoles(e *gangEntry, pod *corev1.Pod) map[string]int {
	have := map[string]int{}
	if e != nil {
		maps.Copy(have, e.roleUngated)
		if _, counted := e.members[pod.UID]; counted {
			return have
		}
	}
	if !gang.IsGated(pod) {
		have[string(workload.RoleOf(pod))]++
	}
	return have
}

// quorumMet reports whether ungated members, have by role, complete the gang.
func quorumMet(minMember int32, roles map[string]int32, ungated int, have map[string]int) bool {
	return ungated >= int(minMember) && gang.RolesMet(roles, have)
}

// completedBy reports whether pod, counted in ungated and have, is the member that
// completed the gang: the gang is complete with it and was not without it.
func completedBy(pod *corev1.Pod, minMember int32, roles map[string]int32, ungated int, have map[string]int) bool {
	if !quorumMet(minMember, roles, ungated, have) {
		return false
	}
	if len(roles) == 0 {
		return ungated == int(minMember)
	}
	role := string(workload.RoleOf(pod))
	without := maps.Clone(have)
	without[role]--
	return !quorumMet(minMember, roles, ungated-1, without)
}
