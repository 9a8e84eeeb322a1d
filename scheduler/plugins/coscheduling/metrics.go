package coscheduling

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Metrics served on the scheduler's /metrics endpoint beside kube-scheduler's own.
var (
	gangRejections = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "kubenexus",
		Subsystem:      "coscheduling",
		Name:           "gang_rejections_total",
		Help:           "Gangs rejected as a unit, by reason (InsufficientCapacity, Timeout).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})
	unreservedMembers = metrics.NewCounter(&metrics.CounterOpts{
		Namespace:      "kubenexus",
		Subsystem:      "coscheduling",
		Name:           "unreserved_members_total",
		Help:           "Gang members whose reservation was undone (rejected while waiting at Permit, or failed after it).",
		StabilityLevel: metrics.ALPHA,
	})
	gangsScheduled = metrics.NewCounter(&metrics.CounterOpts{
		Namespace:      "kubenexus",
		Subsystem:      "coscheduling",
		Name:           "gangs_scheduled_total",
		Help:           "Gangs that reached their quorum at Permit and were released for binding.",
		StabilityLevel: metrics.ALPHA,
	})
	gangWait = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace:      "kubenexus",
		Name:           "gang_wait_seconds",
		Help:           "Time from a gang's creation (its PodGroup's, else the member's) to its quorum being placed, by tenant tier and workload class.",
		Buckets:        metrics.ExponentialBuckets(1, 2.5, 14), // 1 s to ~1.7 days
		StabilityLevel: metrics.ALPHA,
	}, []string{"tenant_tier", "workload_class"})
	registerMetrics sync.Once
)

// RegisterMetrics adds the plugin's metrics to the scheduler's registry (once).
func RegisterMetrics() {
	registerMetrics.Do(func() {
		legacyregistry.MustRegister(gangRejections, unreservedMembers, gangsScheduled, gangWait)
	})
}
