package workload

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// MaxRuntimeBound is the longest runtime bound read from a pod or a Workload: a week. Longer
// values (or anything unparsable) count as no bound.
const MaxRuntimeBound = 7 * 24 * time.Hour

// RuntimeBound returns how long the pod may run at most: its
// spec.activeDeadlineSeconds, else Kueue's kueue.x-k8s.io/max-exec-time-seconds
// label (or annotation) when it is a whole number of seconds from 1 to a week.
// Labels are untrusted: a malformed value is no bound, never an error.
func RuntimeBound(pod *corev1.Pod) (time.Duration, bool) {
	if s := pod.Spec.ActiveDeadlineSeconds; s != nil && *s > 0 {
		if d := time.Duration(*s) * time.Second; d <= MaxRuntimeBound {
			return d, true
		}
		return 0, false
	}
	raw, ok := pod.Labels[v1alpha1.LabelKueueMaxExecTime]
	if !ok {
		raw, ok = pod.Annotations[v1alpha1.LabelKueueMaxExecTime]
	}
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < 1 || time.Duration(n)*time.Second > MaxRuntimeBound {
		return 0, false
	}
	return time.Duration(n) * time.Second, true
}

// Ends returns when a bound pod will have ended at the latest: its start (status
// startTime, else its creation) plus its bound.
func Ends(pod *corev1.Pod, bound time.Duration) time.Time {
	start := pod.CreationTimestamp.Time
	if pod.Status.StartTime != nil {
		start = pod.Status.StartTime.Time
	}
	return start.Add(bound)
}
