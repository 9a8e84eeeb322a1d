package coscheduling

import (
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/gangs"
)

func withRole(p *corev1.Pod, role string) *corev1.Pod {
	p.Labels[v1alpha1.LabelWorkloadRole] = role
	return p
}

// The index counts ungated members by role, and exactly one arrival completes a
// gang with per-role minimums: the one whose role (or count) was the last short,
// whichever order the members come in.
func TestRoleQuorumCompletedOnce(t *testing.T) {
	roles := gang.Roles{Min: map[string]int32{"driver": 1, "executor": 2}}
	orders := map[string]struct {
		roles []string
		at    int // members counted when the gang completed
	}{
		"driver last":  {[]string{"executor", "executor", "executor", "driver"}, 4},
		"driver first": {[]string{"driver", "executor", "executor", "executor"}, 3},
		"driver mid":   {[]string{"executor", "driver", "executor", "executor"}, 3},
	}
	for name, tc := range orders {
		t.Run(name, func(t *testing.T) {
			x := gangs.NewService("kubenexus-scheduler", time.Now)
			var completions []int
			x.OnChange(func(c gangs.MemberChange) {
				if gangs.CompletedBy(c.Pod, 3, roles, c.Ungated, c.Roles) {
					completions = append(completions, c.Ungated)
				}
			})
			var pods []*corev1.Pod
			for i, role := range tc.roles {
				pods = append(pods, withRole(member("g-"+string(rune('0'+i)), "g", 0), role))
				x.Upsert(pods[i])
			}
			if len(completions) != 1 || completions[0] != tc.at {
				t.Fatalf("arrivals completing the gang (members counted) = %v, want [%d]", completions, tc.at)
			}
			e := x.Get(gang.Key{Namespace: "ns", Name: "g"})
			if want := map[string]int{"driver": 1, "executor": 3}; !maps.Equal(e.RoleUngated, want) {
				t.Fatalf("roleUngated = %v, want %v", e.RoleUngated, want)
			}
			// The driver leaves: the role is no longer counted, and the gang is short.
			for _, p := range pods {
				if p.Labels[v1alpha1.LabelWorkloadRole] == "driver" {
					x.Remove(p)
				}
			}
			if e.RoleUngated["driver"] != 0 || gangs.QuorumMet(3, roles, e.Ungated, e.RoleUngated) {
				t.Fatalf("after the driver left: roleUngated = %v, ungated %d, quorum still met", e.RoleUngated, e.Ungated)
			}
			// An executor relabelled driver completes it again, and says so.
			var changes []gangs.MemberChange
			x.OnChange(func(c gangs.MemberChange) { changes = append(changes, c) })
			relabelled := withRole(pods[slices.IndexFunc(pods, func(p *corev1.Pod) bool {
				return p.Labels[v1alpha1.LabelWorkloadRole] == "executor"
			})].DeepCopy(), "driver")
			x.Upsert(relabelled)
			if len(changes) != 1 || !changes[0].RoleChanged || !gangs.QuorumMet(3, roles, changes[0].Ungated, changes[0].Roles) {
				t.Fatalf("changes after relabelling = %+v, want one role change that meets the quorum", changes)
			}
		})
	}
}
