package bindingbackpressure

import (
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var (
	inFlight = metrics.NewGauge(&metrics.GaugeOpts{
		Name:           "kubenexus_bindings_in_flight",
		Help:           "Pods in the binding step: holding one of the maxBindingsInFlight binding slots or waiting for one.",
		StabilityLevel: metrics.ALPHA,
	})
	waitSeconds = metrics.NewHistogram(&metrics.HistogramOpts{
		Name:           "kubenexus_binding_backpressure_wait_seconds",
		Help:           "How long scheduling cycles waited at Permit for bindings in flight to end (cycles that waited).",
		Buckets:        metrics.ExponentialBuckets(0.001, 4, 8),
		StabilityLevel: metrics.ALPHA,
	})
	heldGauge = metrics.NewGauge(&metrics.GaugeOpts{
		Name:           "kubenexus_pods_held",
		Help:           "Pods between Reserve and the end of their binding: gang members waiting at Permit, pods waiting for or holding a binding slot.",
		StabilityLevel: metrics.ALPHA,
	})
	registerMetrics sync.Once
)

// registerMetricsOnce adds the plugin's metrics to the scheduler's registry.
func registerMetricsOnce() {
	registerMetrics.Do(func() { legacyregistry.MustRegister(inFlight, waitSeconds, heldGauge) })
}

func observeWait(d time.Duration) { waitSeconds.Observe(d.Seconds()) }
