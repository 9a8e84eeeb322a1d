package workload

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

func TestCheckpointingOf(t *testing.T) {
	for name, tc := range map[string]struct {
		annotations map[string]string
		want        Checkpointing
		err         string
	}{
		"none": {},
		"all three": {annotations: map[string]string{v1alpha1.AnnotationLastCheckpoint: "2026-11-29T10:00:00Z",
			v1alpha1.AnnotationCheckpointInterval: "30m", v1alpha1.AnnotationMinRuntime: "1h"},
			want: Checkpointing{Last: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC), Interval: 30 * time.Minute, MinRuntime: time.Hour}},
		"a time that is not RFC 3339": {annotations: map[string]string{v1alpha1.AnnotationLastCheckpoint: "yesterday"},
			err: `annotation workload.kubenexus.io/last-checkpoint: "yesterday" is not an RFC 3339 time`},
		"an interval that is not a duration": {annotations: map[string]string{v1alpha1.AnnotationCheckpointInterval: "1hr"},
			err: `annotation workload.kubenexus.io/checkpoint-interval: "1hr" must be a duration above 0`},
		"a minimum runtime above the bound": {annotations: map[string]string{v1alpha1.AnnotationMinRuntime: "100h"},
			err: `annotation workload.kubenexus.io/min-runtime: "100h" must be a duration above 0 and at most 4h0m0s`},
		"a negative minimum runtime": {annotations: map[string]string{v1alpha1.AnnotationMinRuntime: "-5m"},
			err: `workload.kubenexus.io/min-runtime: "-5m" must be a duration above 0`},
	} {
		got, err := CheckpointingOf(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: tc.annotations}})
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want it to say %q", name, err, tc.err)
		case tc.err == "" && got != tc.want:
			t.Errorf("%s: %+v, want %+v", name, got, tc.want)
		}
	}
}

func TestWorkLostAndMinimumRuntime(t *testing.T) {
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	now := start.Add(100 * time.Minute)
	for name, tc := range map[string]struct {
		c    Checkpointing
		want time.Duration
	}{
		"nothing declared: all its running time":         {Checkpointing{}, 100 * time.Minute},
		"checkpointed 10 minutes ago":                    {Checkpointing{Last: now.Add(-10 * time.Minute)}, 10 * time.Minute},
		"a checkpoint before its start does not count":   {Checkpointing{Last: start.Add(-time.Hour)}, 100 * time.Minute},
		"a checkpoint in the future counts as now":       {Checkpointing{Last: now.Add(time.Hour)}, 0},
		"every 30 minutes: 10 since the last":            {Checkpointing{Interval: 30 * time.Minute}, 10 * time.Minute},
		"the declared checkpoint wins over the interval": {Checkpointing{Last: now.Add(-time.Minute), Interval: 30 * time.Minute}, time.Minute},
	} {
		if got := tc.c.Lost(start, now); got != tc.want {
			t.Errorf("%s: lost %s, want %s", name, got, tc.want)
		}
	}
	c := Checkpointing{MinRuntime: 2 * time.Hour}
	if !c.Protected(start, now, v1alpha1.TenantTierSilver, v1alpha1.TenantTierSilver) {
		t.Error("100 minutes into a 2 h minimum runtime: a preemptor of the same tier should be held back")
	}
	if !c.Protected(start, now, v1alpha1.TenantTierSilver, v1alpha1.TenantTierBronze) {
		t.Error("a preemptor of a lower tier should be held back")
	}
	if c.Protected(start, now, v1alpha1.TenantTierSilver, v1alpha1.TenantTierGold) {
		t.Error("a preemptor of a higher tier should not be held back")
	}
	if c.Protected(start, start.Add(3*time.Hour), v1alpha1.TenantTierSilver, v1alpha1.TenantTierSilver) {
		t.Error("past its minimum runtime the pod should not be protected")
	}
}
