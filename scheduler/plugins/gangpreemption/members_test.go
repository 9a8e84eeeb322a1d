package gangpreemption

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	testutil "github.com/kube-nexus/kubenexus/test/util"
)

// Preemption makes room for the members every role needs first: with minMember 3
// of a driver and executors, the driver is among the first three, not left behind
// the executors that sort before it.
func TestRolesFirst(t *testing.T) {
	pod := func(name, role string) *corev1.Pod {
		return testutil.MakePod(name, "ns").Label(v1alpha1.LabelWorkloadRole, role).Obj()
	}
	pods := []*corev1.Pod{pod("e-2", "executor"), pod("z-driver", "driver"), pod("e-0", "executor"), pod("e-1", "executor"), pod("e-3", "executor")}
	names := func(ps []*corev1.Pod) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}
	got := names(rolesFirst(append([]*corev1.Pod(nil), pods...), map[string]int32{"driver": 1, "executor": 2}))
	want := []string{"e-0", "e-1", "z-driver", "e-2", "e-3"}
	if len(got) != len(want) {
		t.Fatalf("rolesFirst = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("rolesFirst = %v, want %v", got, want)
		}
	}
	if got := names(rolesFirst(append([]*corev1.Pod(nil), pods...), nil)); got[0] != "e-0" || got[4] != "z-driver" {
		t.Fatalf("without per-role minimums, by name: %v", got)
	}
}
