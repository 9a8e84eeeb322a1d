package feasibility

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/api/topology"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
)

// Gang is what Decide and the forecast read of pods with one fate: a gang's members,
// or one pod placed alone.
type Gang struct {
	// Key is the gang's (nil: a pod placed alone); PodGroup its KubeNexus PodGroup
	// (nil: none, or the gang is of another gang API).
	Key      *gang.Key
	PodGroup *v1alpha1.PodGroup
	// Members are its pods; Pending those waiting for a node (not gated, finished
	// or being deleted).
	Members []corev1.Pod
	Pending []*corev1.Pod
}

// Waiting reports a pod that waits in the scheduler's queue for a node.
func Waiting(p *corev1.Pod) bool {
	return p.Spec.NodeName == "" && p.DeletionTimestamp == nil && !workload.Finished(p) && !gang.IsGated(p)
}

// Runtime is how long the gang runs once started: the longest runtime bound of its
// pending members, 0 when one of them has none.
func (g *Gang) Runtime() time.Duration {
	var runtime time.Duration
	for _, p := range g.Pending {
		d, ok := workload.RuntimeBound(p)
		if !ok {
			return 0
		}
		runtime = max(runtime, d)
	}
	return runtime
}

// WorkloadOf is what Decide places for the gang: need of its pending pods grouped by
// shape, the tenant tier tierLabels carry, the topology its policy gives (required
// level, slices, sub-groups) and the nodes its placed members anchor the plan to.
func (c *Cluster) WorkloadOf(g *Gang, need int, tierLabels map[string]string, clusterQueue string) *Workload {
	w := &Workload{Tenant: workload.TierOf(workload.Namespace{Labels: tierLabels}, ""), ClusterQueue: clusterQueue}
	if g.Key != nil {
		// Room its own ResourceReservations hold is the gang's to use.
		w.Gang = &types.NamespacedName{Namespace: g.Key.Namespace, Name: g.Key.Name}
	}
	var (
		pol      topology.Policy
		polKnown bool
	)
	if g.Key != nil && len(g.Pending) > 0 {
		if p, ok, err := topology.PolicyOf(g.Pending[0], g.PodGroup, c.Levels); err == nil && ok {
			pol, polKnown = p, true
		}
	}
	idx := map[string]int{}
	for _, p := range g.Pending[:min(need, len(g.Pending))] {
		sig := signature(p)
		if len(pol.GroupLayers()) > 0 {
			// Sub-groups plan each role apart, as the scheduler does.
			sig += "/" + string(workload.RoleOf(p))
		}
		i, ok := idx[sig]
		if !ok {
			i = len(w.PodSets)
			idx[sig] = i
			w.PodSets = append(w.PodSets, PodSet{Name: p.Name, Template: corev1.PodTemplateSpec{ObjectMeta: p.ObjectMeta, Spec: p.Spec}})
		}
		w.PodSets[i].Count++
	}
	if g.Key == nil {
		return w
	}
	if polKnown {
		levels := pol.LevelsWith(c.Levels)
		for i := range w.PodSets {
			if pol.Required {
				w.PodSets[i].RequiredTopology = levels[pol.Level].NodeLabel
			}
			w.PodSets[i].Slices = SliceLayers(pol, c.Levels)
			// A role kept in one domain of its own (a sub-group) or of its set's, as
			// the scheduler's plan keeps it.
			role := string(workload.RoleOf(&corev1.Pod{ObjectMeta: w.PodSets[i].Template.ObjectMeta}))
			for _, sg := range pol.GroupLayers() {
				if sg.Role != role {
					continue
				}
				w.PodSets[i].Role = role
				if sg.Level != topology.NoLevel {
					w.PodSets[i].GroupTopology = levels[sg.Level].NodeLabel
				}
				if sg.Set != "" {
					w.PodSets[i].Set, w.PodSets[i].SetTopology = sg.Set, levels[sg.SetLevel].NodeLabel
				}
			}
		}
	}
	// Its members already running anchor the plan, as in the scheduler's.
	for i := range g.Members {
		if p := &g.Members[i]; p.Spec.NodeName != "" && !workload.Finished(p) {
			w.PlacedOn = append(w.PlacedOn, p.Spec.NodeName)
		}
	}
	return w
}

// signature tells pods with the same placement needs apart from others: requests,
// node selector, affinity, tolerations and whether they may borrow.
func signature(p *corev1.Pod) string {
	requests := map[string]string{}
	for i, c := range p.Spec.Containers {
		for name, q := range c.Resources.Requests {
			requests[fmt.Sprintf("%d/%s", i, name)] = q.String()
		}
	}
	raw, _ := json.Marshal(struct {
		Requests     map[string]string
		NodeSelector map[string]string
		Affinity     *corev1.Affinity
		Tolerations  []corev1.Toleration
		Preemptible  string
	}{requests, p.Spec.NodeSelector, p.Spec.Affinity, p.Spec.Tolerations, p.Labels[v1alpha1.LabelPreemptible]})
	return string(raw)
}

// InQueue is a gang where KubeNexus's queue (Coscheduling's QueueSort) places it:
// by priority — aged, with starvation aging on, by one point per Aging seconds
// between when its earliest member was created and a fixed epoch, as the queue
// sort ages a gang by when it first saw it —, then by that creation, then by key.
type InQueue struct {
	Gang
	Name     gang.Key
	Priority int32
	First    time.Time
	Aging    int32
}

// effective is the priority the queue compares.
func (a *InQueue) effective() float64 { return workload.AgedPriority(a.Priority, a.First, a.Aging) }

// Before reports whether a is queued ahead of b.
func (a *InQueue) Before(b *InQueue) bool {
	if pa, pb := a.effective(), b.effective(); pa != pb {
		return pa > pb
	}
	if !a.First.Equal(b.First) {
		return a.First.Before(b.First)
	}
	return a.Name.Namespace < b.Name.Namespace || a.Name.Namespace == b.Name.Namespace && a.Name.Name < b.Name.Name
}

// Place puts g in the queue under name: a gang whose PodGroup names a PriorityClass
// (gangValue: that class's value, nil for none) at that value capped at its lowest
// pending member's own priority, else at its first pending member's priority, aged
// by aging seconds a point (0: no aging). g must have a pending member.
func Place(name gang.Key, g Gang, gangValue func(gang.Key) *int32, aging int32) *InQueue {
	q := &InQueue{Gang: g, Name: name, Priority: corev1helpers.PodPriority(g.Pending[0]), Aging: aging}
	for i := range g.Members {
		if c := g.Members[i].CreationTimestamp.Time; q.First.IsZero() || c.Before(q.First) {
			q.First = c
		}
	}
	if gangValue == nil || g.Key == nil {
		return q
	}
	if v := gangValue(name); v != nil {
		q.Priority = *v
		for _, p := range g.Pending {
			q.Priority = min(q.Priority, corev1helpers.PodPriority(p))
		}
	}
	return q
}

// QueueKey is the key a pod is queued under (its gang's, else its own) and whether
// that is a gang's.
func QueueKey(p *corev1.Pod) (gang.Key, bool) {
	if m, ok, err := gang.Of(p); err == nil && ok {
		return m.Key, true
	}
	return gang.Key{Namespace: p.Namespace, Name: p.Name}, false
}

// Queue is the queue of the scheduler ours names, in its order: the pods listed
// grouped under their queue keys, each group with a member waiting for a node —
// the members of a Kubernetes PodGroup that composites maps to its
// CompositePodGroup tree's gang (CompositeGangs) under that gang's key. PodGroup of
// a gang is left for the caller to fill.
func Queue(pods []corev1.Pod, ours func(scheduler string) bool, gangValue func(gang.Key) *int32, aging int32, composites map[gang.Key]gang.Key) []*InQueue {
	byKey := map[gang.Key]*Gang{}
	for i := range pods {
		p := &pods[i]
		if !ours(p.Spec.SchedulerName) {
			continue
		}
		k, isGang := QueueKey(p)
		if root, in := composites[k]; in && isGang {
			k = root
		}
		g := byKey[k]
		if g == nil {
			g = &Gang{}
			if isGang {
				g.Key = &k
			}
			byKey[k] = g
		}
		g.Members = append(g.Members, *p)
		if Waiting(p) {
			g.Pending = append(g.Pending, p)
		}
	}
	out := make([]*InQueue, 0, len(byKey))
	for k, g := range byKey {
		if len(g.Pending) > 0 {
			out = append(out, Place(k, *g, gangValue, aging))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}
