// Package estimatedstart keeps kubenexus.io/estimated-start on the PodGroups and
// Kueue Workloads of the gangs waiting in KubeNexus's queue: when each would start,
// forecast for the whole queue at once (feasibility.Cluster.ForecastQueue).
package estimatedstart

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/controllers/feasibility"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
)

// +kubebuilder:rbac:groups=scheduling.kubenexus.io,resources=podgroups,verbs=patch
// Workloads are updated where Kueue serves only v1beta1 (kueuecompat.Client).
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=workloads,verbs=patch;update
// The forecast plays Kueue's queues.
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=clusterqueues;localqueues;cohorts,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses,verbs=get;list;watch

// Unknown is the annotation's value when the forecast gives no start: the gang fits
// nowhere, or gangs with no runtime bound hold the room it needs for good.
const Unknown = "unknown"

// DefaultInterval is how often the estimates are refreshed unless told otherwise.
const DefaultInterval = 30 * time.Second

// slack is how far an estimate may drift before the annotation is rewritten: finer
// changes are not worth a write.
const slack = time.Minute

var (
	refreshSeconds = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "kubenexus_estimated_start_refresh_seconds",
		Help: "How long the last refresh of the kubenexus.io/estimated-start annotations took (reading the cache, forecasting the whole queue, writing).",
	})
	gangsForecast = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "kubenexus_estimated_start_gangs",
		Help: "Gangs and pods waiting in KubeNexus's queue, and Kueue Workloads waiting for quota whose pods KubeNexus will schedule, at the last refresh of the estimated starts.",
	})
)

// Estimator refreshes the estimates every Interval, or every four times as long as
// the last refresh took when that is longer: the forecast costs a few seconds at a
// thousand pending gangs, and never takes more than a fifth of a core.
type Estimator struct {
	Client   client.Client
	Interval time.Duration
	Log      logr.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// NeedLeaderElection: one manager replica writes the annotations.
func (e *Estimator) NeedLeaderElection() bool { return true }

var registerOnce sync.Once

// Register adds the estimator's metrics to the controller-runtime registry (once).
func Register() {
	registerOnce.Do(func() { ctrlmetrics.Registry.MustRegister(refreshSeconds, gangsForecast) })
}

// Start refreshes until ctx ends.
func (e *Estimator) Start(ctx context.Context) error {
	for {
		began := time.Now()
		if err := e.Refresh(ctx); err != nil && ctx.Err() == nil {
			e.Log.Error(err, "refreshing the estimated starts")
		}
		took := time.Since(began)
		refreshSeconds.Set(took.Seconds())
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(max(e.Interval, 4*took)):
		}
	}
}

func (e *Estimator) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// target is an object that carries an estimate.
type target struct {
	workload bool
	key      types.NamespacedName
}

// Refresh forecasts the whole queue once and brings every annotation up to date:
// set on the PodGroup (KubeNexus's) of each gang that waits, and on the Kueue
// Workload its pods were started for (the latest estimate of its pods); removed
// from those that no longer wait.
func (e *Estimator) Refresh(ctx context.Context) error {
	c, pods, err := feasibility.Read(ctx, e.Client)
	if err != nil {
		return fmt.Errorf("reading the cluster: %w", err)
	}
	w, err := feasibility.ReadWaiters(ctx, e.Client, c, pods)
	if err != nil {
		return err
	}
	gangsForecast.Set(float64(len(w.Ahead)))
	want := map[target]string{}
	if len(w.Ahead) > 0 {
		want = e.forecast(c, w)
	}
	// An object that cannot be written now is left for the next refresh.
	var errs []error
	for i := range w.PodGroups {
		errs = append(errs, e.keep(ctx, &w.PodGroups[i], want, target{key: client.ObjectKeyFromObject(&w.PodGroups[i])}))
	}
	for i := range w.Workloads {
		errs = append(errs, e.keep(ctx, &w.Workloads[i], want, target{workload: true, key: client.ObjectKeyFromObject(&w.Workloads[i])}))
	}
	return errors.Join(errs...)
}

// forecast is the estimate each PodGroup and Workload of a waiting gang should carry.
func (e *Estimator) forecast(c *feasibility.Cluster, w *feasibility.Waiters) map[target]string {
	starts := c.ForecastQueue(w.Ahead, w.Quotas, e.now())
	want := map[target]string{}
	latest := map[target]placement.Start{}
	for i := range w.Ahead {
		if i < len(w.Queue) {
			if q := w.Queue[i]; q.Key != nil && q.PodGroup != nil {
				want[target{key: types.NamespacedName{Namespace: q.Key.Namespace, Name: q.Key.Name}}] = Value(starts[i])
			}
		}
		if w.Workload[i] != nil {
			t := target{workload: true, key: *w.Workload[i]}
			if s, seen := latest[t]; !seen || s.OK && (!starts[i].OK || starts[i].At.After(s.At)) {
				latest[t] = starts[i]
			}
		}
	}
	for t, s := range latest {
		want[t] = Value(s)
	}
	return want
}

// Value is the annotation's value for a forecast start: the time (RFC 3339, UTC) or
// Unknown.
func Value(s placement.Start) string {
	if !s.OK {
		return Unknown
	}
	return s.At.UTC().Format(time.RFC3339)
}

// keep brings obj's annotation to want[t]: set when it differs by more than slack
// (or between a time and Unknown), removed when t no longer waits.
func (e *Estimator) keep(ctx context.Context, obj client.Object, want map[target]string, t target) error {
	has, set := obj.GetAnnotations()[v1alpha1.AnnotationEstimatedStart]
	value, waits := want[t]
	switch {
	case !waits && !set, waits && set && near(has, value):
		return nil
	}
	before := obj.DeepCopyObject().(client.Object)
	annotations := obj.GetAnnotations()
	if waits {
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[v1alpha1.AnnotationEstimatedStart] = value
	} else {
		delete(annotations, v1alpha1.AnnotationEstimatedStart)
	}
	obj.SetAnnotations(annotations)
	if err := e.Client.Patch(ctx, obj, client.MergeFrom(before)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("writing %s on %s: %w", v1alpha1.AnnotationEstimatedStart, t.key, err)
	}
	return nil
}

// near reports whether two values say the same within slack.
func near(a, b string) bool {
	if a == b {
		return true
	}
	ta, errA := time.Parse(time.RFC3339, a)
	tb, errB := time.Parse(time.RFC3339, b)
	if errA != nil || errB != nil {
		return false
	}
	d := ta.Sub(tb)
	return d < slack && d > -slack
}
