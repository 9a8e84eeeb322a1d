package v1alpha1

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestSigsPodGroupStatus(t *testing.T) {
	start := metav1.NewTime(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))
	tests := map[string]struct {
		in   PodGroupStatus
		want map[string]any
	}{
		"pending":                 {PodGroupStatus{Phase: PodGroupPending}, map[string]any{"phase": "Pending"}},
		"bound, not running yet":  {PodGroupStatus{Phase: PodGroupScheduled, Scheduled: 2, ScheduleStartTime: &start}, map[string]any{"phase": "Scheduling", "scheduleStartTime": "2026-11-23T10:00:00Z"}},
		"running":                 {PodGroupStatus{Phase: PodGroupRunning, Running: 3, OccupiedBy: "ns/job"}, map[string]any{"phase": "Running", "running": int64(3), "occupiedBy": "ns/job"}},
		"succeeded is Finished":   {PodGroupStatus{Phase: PodGroupSucceeded, Succeeded: 3}, map[string]any{"phase": "Finished", "succeeded": int64(3)}},
		"failed keeps its counts": {PodGroupStatus{Phase: PodGroupFailed, Failed: 1, Running: 1}, map[string]any{"phase": "Failed", "failed": int64(1), "running": int64(1)}},
	}
	for name, tc := range tests {
		if diff := cmp.Diff(tc.want, SigsPodGroupStatus(tc.in)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}

func TestFromSigsPodGroup(t *testing.T) {
	u := NewSigsPodGroup()
	u.SetNamespace("ns")
	u.SetName("pg")
	u.Object["spec"] = map[string]any{"minMember": int64(4), "scheduleTimeoutSeconds": int64(30), "minResources": map[string]any{"cpu": "8"}}
	u.Object["status"] = map[string]any{"phase": "Finished", "scheduleStartTime": "2026-11-23T10:00:00Z"}
	pg, err := FromSigsPodGroup(u)
	if err != nil {
		t.Fatal(err)
	}
	if pg.Spec.MinMember != 4 || *pg.Spec.ScheduleTimeoutSeconds != 30 || pg.Spec.MinResources.Cpu().String() != "8" {
		t.Errorf("spec not read: %+v", pg.Spec)
	}
	if pg.APIVersion != "scheduling.x-k8s.io/v1alpha1" || pg.Name != "pg" || pg.Namespace != "ns" {
		t.Errorf("identity not kept: %s %s/%s", pg.APIVersion, pg.Namespace, pg.Name)
	}
	if pg.Status.ScheduleStartTime == nil || pg.Status.Phase != "" {
		t.Errorf("status: start %v phase %q; want the start time and no phase", pg.Status.ScheduleStartTime, pg.Status.Phase)
	}
	bad := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"minMember": "four"}}}
	bad.SetGroupVersionKind(SigsPodGroupGVK)
	if _, err := FromSigsPodGroup(bad); err == nil {
		t.Error("a non-integer minMember was accepted")
	}
}

func TestVolcanoPodGroupStatus(t *testing.T) {
	tests := map[string]struct {
		in       PodGroupStatus
		admitted bool
		want     map[string]any
	}{
		"not admitted: controllers create no pod yet": {PodGroupStatus{Phase: PodGroupPending}, false, map[string]any{"phase": "Pending"}},
		"admitted, members not there yet":             {PodGroupStatus{Phase: PodGroupPending}, true, map[string]any{"phase": "Inqueue"}},
		"members being scheduled":                     {PodGroupStatus{Phase: PodGroupScheduling}, true, map[string]any{"phase": "Inqueue"}},
		"bound, not running":                          {PodGroupStatus{Phase: PodGroupScheduled}, true, map[string]any{"phase": "Inqueue"}},
		"running":                                     {PodGroupStatus{Phase: PodGroupRunning, Running: 2}, true, map[string]any{"phase": "Running", "running": int64(2)}},
		"succeeded is Completed":                      {PodGroupStatus{Phase: PodGroupSucceeded, Succeeded: 2}, true, map[string]any{"phase": "Completed", "succeeded": int64(2)}},
		"failed is Unknown":                           {PodGroupStatus{Phase: PodGroupFailed, Failed: 1}, true, map[string]any{"phase": "Unknown", "failed": int64(1)}},
	}
	for name, tc := range tests {
		if diff := cmp.Diff(tc.want, VolcanoPodGroupStatus(tc.in, tc.admitted)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}

func TestFromVolcanoPodGroup(t *testing.T) {
	u := NewVolcanoPodGroup()
	u.SetNamespace("ns")
	u.SetName("vj")
	u.Object["spec"] = map[string]any{"minMember": int64(3), "queue": "default", "minTaskMember": map[string]any{"worker": int64(2)},
		"priorityClassName": "high", "minResources": map[string]any{"nvidia.com/gpu": "16"}}
	pg, err := FromVolcanoPodGroup(u)
	if err != nil {
		t.Fatal(err)
	}
	if pg.Spec.MinMember != 3 || pg.Spec.PriorityClassName != "high" || pg.Spec.MinResources.Name("nvidia.com/gpu", "").String() != "16" {
		t.Errorf("spec not read: %+v", pg.Spec)
	}
	if pg.APIVersion != "scheduling.volcano.sh/v1beta1" {
		t.Errorf("APIVersion %q", pg.APIVersion)
	}
}
