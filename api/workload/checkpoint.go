package workload

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// MaxMinRuntime bounds what a pod's workload.kubenexus.io/min-runtime protects it
// for: a tenant writes the annotation, and an unbounded one would make its pods
// unpreemptible.
const MaxMinRuntime = 4 * time.Hour

// Checkpointing is what a pod declares of its checkpoints and minimum runtime.
// Every field is optional (zero: not declared).
type Checkpointing struct {
	Last       time.Time
	Interval   time.Duration
	MinRuntime time.Duration
}

// CheckpointingOf reads the pod's checkpoint annotations. The error names the
// first malformed one and what is allowed; the fields read before it are kept.
func CheckpointingOf(pod *corev1.Pod) (Checkpointing, error) {
	var c Checkpointing
	a := pod.Annotations
	if v, ok := a[v1alpha1.AnnotationLastCheckpoint]; ok {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return c, fmt.Errorf("annotation %s: %q is not an RFC 3339 time (e.g. 2026-11-29T15:04:05Z)", v1alpha1.AnnotationLastCheckpoint, v)
		}
		c.Last = t
	}
	duration := func(key string, maxValue time.Duration) (time.Duration, error) {
		v, ok := a[key]
		if !ok {
			return 0, nil
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > maxValue {
			return 0, fmt.Errorf("annotation %s: %q must be a duration above 0 and at most %s (e.g. 30m)", key, v, maxValue)
		}
		return d, nil
	}
	var err error
	if c.Interval, err = duration(v1alpha1.AnnotationCheckpointInterval, 7*24*time.Hour); err != nil {
		return c, err
	}
	if c.MinRuntime, err = duration(v1alpha1.AnnotationMinRuntime, MaxMinRuntime); err != nil {
		return c, err
	}
	return c, nil
}

// Declared reports whether the pod declares its checkpoints (a last checkpoint
// or an interval).
func (c Checkpointing) Declared() bool { return !c.Last.IsZero() || c.Interval > 0 }

// StartOf is when the pod started running (its creation before it has a start
// time).
func StartOf(pod *corev1.Pod) time.Time {
	if pod.Status.StartTime != nil {
		return pod.Status.StartTime.Time
	}
	return pod.CreationTimestamp.Time
}

// Lost is the work (running time) evicting a pod that started at start throws
// away at now: the time since its last checkpoint when it declared one after its
// start (a checkpoint declared in the future counts as now), else the time since
// the last boundary of its checkpoint interval, else all its running time.
func (c Checkpointing) Lost(start, now time.Time) time.Duration {
	ran := now.Sub(start)
	if ran <= 0 {
		return 0
	}
	switch {
	case !c.Last.IsZero() && c.Last.After(start):
		return max(now.Sub(c.Last), 0)
	case c.Interval > 0:
		return ran % c.Interval
	}
	return ran
}

// Protected says whether a pod that started at start is still within its minimum
// runtime at now against a preemptor of tenant tier by (the victim's tier is
// victim): a preemptor of a higher tier is not held back.
func (c Checkpointing) Protected(start, now time.Time, victim, by v1alpha1.TenantTier) bool {
	if c.MinRuntime <= 0 || TierRank(by) > TierRank(victim) {
		return false
	}
	return now.Sub(start) < c.MinRuntime
}

// TierRank orders tenant tiers: gold above silver above bronze above none.
func TierRank(t v1alpha1.TenantTier) int {
	switch t {
	case v1alpha1.TenantTierGold:
		return 3
	case v1alpha1.TenantTierSilver:
		return 2
	case v1alpha1.TenantTierBronze:
		return 1
	}
	return 0
}
