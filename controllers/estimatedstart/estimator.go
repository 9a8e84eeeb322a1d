// Package estimatedstart keeps kubenexus.io/estimated-start on the PodGroups and
// Kueue Workloads of the gangs waiting in KubeNexus's queue: when each would start,
// forecast for the whole queue at once (feasibility.Cluster.ForecastQueue).
package estimatedstart

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/controllers/feasibility"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
)

// +kubebuilder:rbac:groups=scheduling.kubenexus.io,resources=podgroups,verbs=patch
// Workloads are updated where Kueue serves only v1beta1 (kueuecompat.Client).
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=workloads,verbs=patch;update
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
		Help: "Gangs and pods waiting in KubeNexus's queue at the last refresh of the estimated starts.",
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
	scheduler, err := e.schedulerName(ctx)
	if err != nil {
		return err
	}
	var pgs v1alpha1.PodGroupList
	if err := e.Client.List(ctx, &pgs); err != nil {
		return fmt.Errorf("listing PodGroups: %w", err)
	}
	var wls kueue.WorkloadList
	if err := e.Client.List(ctx, &wls); err != nil && !feasibility.NotServed(err) {
		return fmt.Errorf("listing Kueue Workloads: %w", err)
	}
	gangValue, err := e.gangValues(ctx, pgs.Items)
	if err != nil {
		return err
	}
	queue := feasibility.Queue(pods, func(s string) bool { return s == scheduler }, gangValue)
	gangsForecast.Set(float64(len(queue)))
	want := map[target]string{}
	if len(queue) > 0 {
		if want, err = e.forecast(ctx, c, queue, pgs.Items, wls.Items); err != nil {
			return err
		}
	}
	// An object that cannot be written now is left for the next refresh.
	var errs []error
	for i := range pgs.Items {
		errs = append(errs, e.keep(ctx, &pgs.Items[i], want, target{key: client.ObjectKeyFromObject(&pgs.Items[i])}))
	}
	for i := range wls.Items {
		errs = append(errs, e.keep(ctx, &wls.Items[i], want, target{workload: true, key: client.ObjectKeyFromObject(&wls.Items[i])}))
	}
	return errors.Join(errs...)
}

// forecast is the estimate each PodGroup and Workload of a waiting gang should carry.
func (e *Estimator) forecast(ctx context.Context, c *feasibility.Cluster, queue []*feasibility.InQueue, pgs []v1alpha1.PodGroup, wls []kueue.Workload) (map[target]string, error) {
	var nss corev1.NamespaceList
	if err := e.Client.List(ctx, &nss); err != nil {
		return nil, fmt.Errorf("listing namespaces: %w", err)
	}
	nsLabels := make(map[string]map[string]string, len(nss.Items))
	for i := range nss.Items {
		nsLabels[nss.Items[i].Name] = nss.Items[i].Labels
	}
	pgByKey := make(map[gang.Key]*v1alpha1.PodGroup, len(pgs))
	for i := range pgs {
		pgByKey[gang.Key{Namespace: pgs[i].Namespace, Name: pgs[i].Name}] = &pgs[i]
	}
	admittedBy := make(map[types.NamespacedName]string, len(wls))
	for i := range wls {
		if a := wls[i].Status.Admission; a != nil {
			admittedBy[client.ObjectKeyFromObject(&wls[i])] = string(a.ClusterQueue)
		}
	}
	queueLabels, err := e.queueLabels(ctx, c)
	if err != nil {
		return nil, err
	}
	ahead := make([]feasibility.Ahead, len(queue))
	wlOf := make([]*types.NamespacedName, len(queue))
	for i, q := range queue {
		if q.Key != nil {
			q.PodGroup = pgByKey[*q.Key]
		}
		labels := nsLabels[q.Name.Namespace]
		cq := ""
		if name := q.Pending[0].Annotations[v1alpha1.AnnotationKueueWorkload]; name != "" {
			k := types.NamespacedName{Namespace: q.Name.Namespace, Name: name}
			if by, ok := admittedBy[k]; ok {
				wlOf[i], cq = &k, by
				// The tier comes from the admitting ClusterQueue's label when the
				// KubeNexusConfig says so, as the scheduler reads it.
				if l := queueLabels[cq]; workload.HasTier(l) {
					labels = l
				}
			}
		}
		ahead[i] = feasibility.Ahead{Name: q.Name.String(), Workload: c.WorkloadOf(&q.Gang, len(q.Pending), labels, cq), Runtime: q.Runtime()}
	}
	starts := c.ForecastQueue(ahead, e.now())
	want := map[target]string{}
	latest := map[target]placement.Start{}
	for i, q := range queue {
		if q.Key != nil && q.PodGroup != nil {
			want[target{key: types.NamespacedName{Namespace: q.Key.Namespace, Name: q.Key.Name}}] = Value(starts[i])
		}
		if wlOf[i] != nil {
			t := target{workload: true, key: *wlOf[i]}
			if s, seen := latest[t]; !seen || s.OK && (!starts[i].OK || starts[i].At.After(s.At)) {
				latest[t] = starts[i]
			}
		}
	}
	for t, s := range latest {
		want[t] = Value(s)
	}
	return want, nil
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

// schedulerName is the name KubeNexus's pods ask for: the KubeNexusConfig's.
func (e *Estimator) schedulerName(ctx context.Context) (string, error) {
	var configs v1alpha1.KubeNexusConfigList
	if err := e.Client.List(ctx, &configs); err != nil {
		return "", fmt.Errorf("reading the KubeNexusConfig: %w", err)
	}
	sort.Slice(configs.Items, func(i, j int) bool { return configs.Items[i].Name < configs.Items[j].Name })
	for _, k := range configs.Items {
		if k.Name == v1alpha1.DefaultConfigName && k.Spec.Scheduler.SchedulerName != "" {
			return k.Spec.Scheduler.SchedulerName, nil
		}
	}
	return v1alpha1.DefaultSchedulerName, nil
}

// gangValues is the value of the PriorityClass each KubeNexus PodGroup names (nil:
// none, or the class does not exist).
func (e *Estimator) gangValues(ctx context.Context, pgs []v1alpha1.PodGroup) (func(gang.Key) *int32, error) {
	var classes schedulingv1.PriorityClassList
	if err := e.Client.List(ctx, &classes); err != nil {
		return nil, fmt.Errorf("listing PriorityClasses: %w", err)
	}
	value := make(map[string]int32, len(classes.Items))
	for _, pc := range classes.Items {
		value[pc.Name] = pc.Value
	}
	byGang := map[gang.Key]int32{}
	for i := range pgs {
		if v, ok := value[pgs[i].Spec.PriorityClassName]; ok {
			byGang[gang.Key{Namespace: pgs[i].Namespace, Name: pgs[i].Name}] = v
		}
	}
	return func(k gang.Key) *int32 {
		if v, ok := byGang[k]; ok {
			return &v
		}
		return nil
	}, nil
}

// queueLabels are the ClusterQueues' labels by name when the KubeNexusConfig takes
// tenant tiers from them (nil otherwise).
func (e *Estimator) queueLabels(ctx context.Context, c *feasibility.Cluster) (map[string]map[string]string, error) {
	if !c.TierFromClusterQueue {
		return nil, nil
	}
	var cqs kueue.ClusterQueueList
	if err := e.Client.List(ctx, &cqs); err != nil && !feasibility.NotServed(err) {
		return nil, fmt.Errorf("listing Kueue ClusterQueues: %w", err)
	}
	out := make(map[string]map[string]string, len(cqs.Items))
	for i := range cqs.Items {
		out[cqs.Items[i].Name] = cqs.Items[i].Labels
	}
	return out, nil
}
