package feasibility

import (
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-nexus/kubenexus/api/gang"
	testutil "github.com/kube-nexus/kubenexus/test/util"
)

// With starvation aging on, a gang that has waited long enough goes ahead of a
// younger one of higher priority, as Coscheduling's queue sort ages them; with it
// off, priority alone orders them.
func TestQueueAgesGangsAsTheQueueSortDoes(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	pod := func(name string, priority int32, created time.Time) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.NewTime(created)},
			Spec: corev1.PodSpec{SchedulerName: "kubenexus-scheduler", Priority: ptr.To(priority)}}
	}
	pods := []corev1.Pod{pod("young-high", 1, t0), pod("old-low", 0, t0.Add(-2*time.Hour)), pod("older-low", 0, t0.Add(-30*time.Minute).Add(-2*time.Hour))}
	ours := func(s string) bool { return s == "kubenexus-scheduler" }
	for _, tc := range []struct {
		aging int32
		want  []string
	}{
		{0, []string{"young-high", "older-low", "old-low"}},
		// An hour a point: two hours waited outweigh one point of priority.
		{3600, []string{"older-low", "old-low", "young-high"}},
		// A day a point: two hours do not.
		{86400, []string{"young-high", "older-low", "old-low"}},
	} {
		var got []string
		for _, q := range Queue(pods, ours, nil, tc.aging, nil) {
			got = append(got, q.Name.Name)
		}
		if len(got) != len(tc.want) {
			t.Fatalf("aging %d: queue %v, want %v", tc.aging, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("aging %d: queue %v, want %v", tc.aging, got, tc.want)
				break
			}
		}
	}
}

// The members of a CompositePodGroup tree's Kubernetes PodGroups queue as the
// tree's one gang, under its root's key, as the scheduler files them; a PodGroup of
// no tree stays a gang of its own.
func TestQueueFilesACompositeTreeAsOneGang(t *testing.T) {
	pod := func(name, group string) corev1.Pod {
		return *testutil.MakePod(name, "ns").SchedulingGroup(group).SchedulerName("kubenexus-scheduler").Obj()
	}
	pods := []corev1.Pod{pod("p0", "r0-prefill"), pod("d0", "r0-decode"), pod("d1", "r1-decode"), pod("alone-0", "alone")}
	serve := gang.Key{Namespace: "ns", Name: "serve", Composite: true}
	composites := map[gang.Key]gang.Key{
		{Namespace: "ns", Name: "r0-prefill"}: serve, {Namespace: "ns", Name: "r0-decode"}: serve, {Namespace: "ns", Name: "r1-decode"}: serve,
	}
	got := map[string]int{}
	for _, q := range Queue(pods, func(string) bool { return true }, nil, 0, composites) {
		if q.Key == nil || *q.Key != q.Name {
			t.Errorf("%s queued with gang key %v", q.Name, q.Key)
		}
		got[q.Name.String()+map[bool]string{true: " (composite)"}[q.Name.Composite]] = len(q.Pending)
	}
	want := map[string]int{"ns/serve (composite)": 3, "ns/alone": 1}
	if !maps.Equal(got, want) {
		t.Errorf("queue %v, want %v", got, want)
	}
}
