package feasibility

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
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
		for _, q := range Queue(pods, ours, nil, tc.aging) {
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
