package explain

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/controllers/feasibility"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
)

// The start line counts the gangs queued ahead: KubeNexus's queue (Coscheduling's
// QueueSort) orders gangs by priority, then by when each was first seen, then by
// name; a gang that does not fit does not hold back the ones behind it. The forecast
// (feasibility.Cluster.Forecast) starts each gang ahead when room frees, holding its
// room for its runtime bound.

// place puts the group in KubeNexus's queue (feasibility.Place) under its key: its
// gang's, else its first pending pod's.
func place(st *state, g *group) *feasibility.InQueue {
	own, _ := feasibility.QueueKey(g.pending[0])
	if g.key != nil {
		own = *g.key
	}
	return feasibility.Place(own, feasibility.Gang{Key: g.key, Members: g.members, Pending: g.pending}, st.gangValue, st.cluster.StarvationAgingSeconds)
}

// aheadOf returns the gangs (and pods placed one by one) waiting for the same
// scheduler that KubeNexus's queue orders before g, in that order, each with its
// pending members as a Workload and its runtime (feasibility.Gang.Runtime).
func (e *Explainer) aheadOf(ctx context.Context, st *state, g *group) ([]feasibility.Ahead, error) {
	target := place(st, g)
	scheduler := g.schedulerName()
	mine := make(map[gang.Key]bool, len(g.members))
	for i := range g.members {
		mine[gang.Key{Namespace: g.members[i].Namespace, Name: g.members[i].Name}] = true
	}
	var queue []*feasibility.InQueue
	for _, q := range feasibility.Queue(st.pods, func(s string) bool { return s == scheduler }, st.gangValue, st.cluster.StarvationAgingSeconds, st.composites) {
		if !q.Before(target) {
			break
		}
		if q.Name == target.Name || q.Key == nil && mine[q.Name] {
			continue
		}
		queue = append(queue, q)
	}
	if len(queue) == 0 {
		return nil, nil
	}
	namespaces, err := e.namespaces(ctx, st)
	if err != nil {
		return nil, err
	}
	out := make([]feasibility.Ahead, 0, len(queue))
	for _, q := range queue {
		w := &group{key: q.Key, members: q.Members, pending: q.Pending, ns: namespaces[q.Name.Namespace]}
		if w.key != nil {
			w.pg = st.podGroups[*w.key]
			if w.pg == nil && w.key.Composite {
				if pg, err := e.podGroup(ctx, *w.key); err == nil {
					w.pg = pg // the tree read as one gang
				}
			}
		}
		out = append(out, feasibility.Ahead{Name: q.Name.String(), Workload: w.workload(st, len(w.pending)), Runtime: q.Runtime()})
	}
	return out, nil
}

// namespaces lists the namespaces once per explanation, by name.
func (e *Explainer) namespaces(ctx context.Context, st *state) (map[string]*corev1.Namespace, error) {
	if st.namespaceObjects != nil {
		return st.namespaceObjects, nil
	}
	var list corev1.NamespaceList
	if err := e.Client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("reading namespaces: %w", err)
	}
	st.namespaceObjects = make(map[string]*corev1.Namespace, len(list.Items))
	for i := range list.Items {
		st.namespaceObjects[list.Items[i].Name] = &list.Items[i]
	}
	return st.namespaceObjects, nil
}

// forecast is when the group would start behind the gangs queued ahead of it in
// KubeNexus's queue (nil when none is ahead, they cannot be read, or its pods are
// kube-scheduler's).
func (e *Explainer) forecast(ctx context.Context, st *state, g *group, w *feasibility.Workload) *queueForecast {
	if g.schedulerName() == corev1.DefaultSchedulerName {
		return nil // kube-scheduler's queue is not KubeNexus's
	}
	ahead, err := e.aheadOf(ctx, st, g)
	if err != nil || len(ahead) == 0 {
		return nil
	}
	f := st.cluster.Forecast(w, ahead, st.now)
	return &queueForecast{Forecast: f, queued: len(ahead)}
}

// queueForecast is a forecast and how many gangs were queued ahead.
type queueForecast struct {
	placement.Forecast
	queued int
}

// quotaStartLine is the start line of a Workload waiting for quota whose pods
// KubeNexus will schedule: the forecast of Kueue's queues played with KubeNexus's
// (feasibility.Quotas, Cluster.ForecastQueue), as the manager keeps it in
// kubenexus.io/estimated-start. False when it is not in that forecast (its pods are
// another scheduler's, or its LocalQueue leads to no ClusterQueue).
func (e *Explainer) quotaStartLine(ctx context.Context, st *state, wl *kueue.Workload) (Line, bool) {
	w, err := feasibility.ReadWaiters(ctx, e.Client, st.cluster, st.pods)
	if err != nil || w.Quotas == nil {
		return Line{}, false
	}
	key := client.ObjectKeyFromObject(wl)
	i := slices.IndexFunc(w.Held, func(h *feasibility.QuotaWorkload) bool { return h.Name == key })
	if i < 0 {
		return Line{}, false
	}
	s := st.cluster.ForecastQueue(w.Ahead, w.Quotas, st.now)[len(w.Queue)+i]
	return quotaStart(s, w.Held[i].ClusterQueue, st.now), true
}

// quotaStart is the start line of a Workload waiting for quota in ClusterQueue cq
// from its forecast (s).
func quotaStart(s placement.Start, cq string, now time.Time) Line {
	l := Line{Layer: LayerStart, Verdict: Unknown}
	assumes := "running workloads end at their runtime bounds, those admitted before it run to theirs"
	switch {
	case s.OK:
		l.Verdict = Waiting
		l.Text = fmt.Sprintf("earliest %s (in %s): ClusterQueue %s admits it %s; assumes %s",
			s.At.UTC().Format(time.RFC3339), max(s.At.Sub(now).Round(time.Second), 0), cq, when(s.Admitted, now), assumes)
	case !s.Admitted.IsZero():
		l.Text = fmt.Sprintf("ClusterQueue %s admits it %s, but no start can be given for its pods", cq, when(s.Admitted, now))
		if len(s.Unbounded) > 0 {
			l.Text += fmt.Sprintf(": %s would start first with no runtime bound (spec.activeDeadlineSeconds or %s)", join(s.Unbounded), v1alpha1.LabelKueueMaxExecTime)
		}
	default:
		l.Text = fmt.Sprintf("no time can be given: ClusterQueue %s is not forecast to admit it (the quota it needs is held by workloads with no runtime bound, is more than the queue and its cohort can lend, or the queue is stopped)", cq)
	}
	return l
}

// when is "now" or "at <time> (in <duration>)".
func when(t, now time.Time) string {
	if !t.After(now) {
		return "now"
	}
	return fmt.Sprintf("at %s (in %s)", t.UTC().Format(time.RFC3339), t.Sub(now).Round(time.Second))
}
