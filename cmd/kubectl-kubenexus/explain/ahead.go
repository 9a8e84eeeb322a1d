package explain

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/controllers/feasibility"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
)

// The start line counts the gangs queued ahead: KubeNexus's queue (Coscheduling's
// QueueSort) orders gangs by priority, then by when each was first seen, then by
// name; a gang that does not fit does not hold back the ones behind it. The forecast
// (feasibility.Cluster.Forecast) starts each gang ahead when room frees, holding its
// room for its runtime bound.

// queueKey places a gang in KubeNexus's queue: its priority, the creation of its
// earliest member, its key. Starvation aging is not applied.
type queueKey struct {
	priority int32
	first    time.Time
	key      gang.Key
}

func (a queueKey) before(b queueKey) bool {
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	if !a.first.Equal(b.first) {
		return a.first.Before(b.first)
	}
	return a.key.Namespace < b.key.Namespace || a.key.Namespace == b.key.Namespace && a.key.Name < b.key.Name
}

// queueKeyOf places the group in the queue: a gang whose PodGroup names a
// PriorityClass by that class's value capped at its lowest pending member's own
// priority, else by its first pending member's priority.
func queueKeyOf(st *state, k gang.Key, g *group) queueKey {
	q := queueKey{key: k, priority: corev1helpers.PodPriority(g.pending[0])}
	for i := range g.members {
		if c := g.members[i].CreationTimestamp.Time; q.first.IsZero() || c.Before(q.first) {
			q.first = c
		}
	}
	if st.gangValue == nil || g.key == nil {
		return q
	}
	if v := st.gangValue(k); v != nil {
		q.priority = *v
		for _, p := range g.pending {
			q.priority = min(q.priority, corev1helpers.PodPriority(p))
		}
	}
	return q
}

// groupKeyOf is the key a pod is queued under: its gang's, else its own.
func groupKeyOf(p *corev1.Pod) (gang.Key, bool) {
	if m, ok, err := gang.Of(p); err == nil && ok {
		return m.Key, true
	}
	return gang.Key{Namespace: p.Namespace, Name: p.Name}, false
}

// aheadOf returns the gangs (and pods placed one by one) waiting for the same
// scheduler that KubeNexus's queue orders before g, in that order, each with its
// pending members as a Workload and its runtime: the longest runtime bound of its
// pending members, 0 when one of them has none.
func (e *Explainer) aheadOf(ctx context.Context, st *state, g *group) ([]feasibility.Ahead, error) {
	own, _ := groupKeyOf(g.pending[0])
	if g.key != nil {
		own = *g.key
	}
	target := queueKeyOf(st, own, g)
	scheduler := g.schedulerName()
	type waiting struct {
		g  *group
		qk queueKey
	}
	mine := make(map[gang.Key]bool, len(g.members))
	for i := range g.members {
		mine[gang.Key{Namespace: g.members[i].Namespace, Name: g.members[i].Name}] = true
	}
	byKey := map[gang.Key]*group{}
	for i := range st.pods {
		p := &st.pods[i]
		if p.Spec.SchedulerName != scheduler || mine[gang.Key{Namespace: p.Namespace, Name: p.Name}] {
			continue
		}
		k, isGang := groupKeyOf(p)
		if k == own {
			continue
		}
		w := byKey[k]
		if w == nil {
			w = &group{}
			if isGang {
				w.key = &k
			}
			byKey[k] = w
		}
		w.members = append(w.members, *p)
		if p.Spec.NodeName == "" && p.DeletionTimestamp == nil && !workload.Finished(p) && !gang.IsGated(p) {
			w.pending = append(w.pending, p)
		}
	}
	var queue []waiting
	for k, w := range byKey {
		if len(w.pending) == 0 {
			continue
		}
		if qk := queueKeyOf(st, k, w); qk.before(target) {
			queue = append(queue, waiting{w, qk})
		}
	}
	if len(queue) == 0 {
		return nil, nil
	}
	namespaces, err := e.namespaces(ctx, st)
	if err != nil {
		return nil, err
	}
	sort.Slice(queue, func(i, j int) bool { return queue[i].qk.before(queue[j].qk) })
	out := make([]feasibility.Ahead, 0, len(queue))
	for _, q := range queue {
		w := q.g
		w.ns = namespaces[q.qk.key.Namespace]
		if w.key != nil {
			w.pg = st.podGroups[*w.key]
		}
		var runtime time.Duration
		for _, p := range w.pending {
			d, ok := workload.RuntimeBound(p)
			if !ok {
				runtime = 0
				break
			}
			runtime = max(runtime, d)
		}
		out = append(out, feasibility.Ahead{Name: q.qk.key.String(), Workload: w.workload(st, len(w.pending)), Runtime: runtime})
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
