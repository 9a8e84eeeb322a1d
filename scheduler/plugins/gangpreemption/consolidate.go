package gangpreemption

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/nodefree"
)

// Consolidation: a gang (or a pod) that preemption cannot place, and that the
// fleet's free room holds in total but not in one piece, gets a whole place by
// moving the fewest running pods that may move (workload.MayMove, past their
// minimum runtime, their PodDisruptionBudgets kept) — each evicted to be recreated
// by its controller on a node where the plan found its replacement fits
// (placement.Consolidate) — within the domain its topology policy requires. The
// room is claimed and its members nominated as for a preemption, so the moved pods'
// replacements do not take it back. Budgets: at most maxEvictionsPerGang pods for
// one gang, maxEvictionsPerHour across gangs.

// moveLog counts the pods moved in the last hour.
type moveLog struct {
	mu    sync.Mutex
	times []time.Time
}

// room says whether n more pods may move now within perHour, and if so records them.
func (l *moveLog) room(n int, perHour int32, now time.Time) (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	kept := l.times[:0]
	for _, t := range l.times {
		if now.Sub(t) < time.Hour {
			kept = append(kept, t)
		}
	}
	l.times = kept
	if len(l.times)+n > int(perHour) {
		return len(l.times), false
	}
	for range n {
		l.times = append(l.times, now)
	}
	return len(l.times), true
}

// movables returns the running pods that may move for the preemptor, as units of
// one pod each (their cost: GPU-seconds since their last checkpoint).
func (pl *Plugin) movables(running []*corev1.Pod, prof workload.Profile, prio int32, priority priorityFunc, now time.Time) []*unit {
	c := pl.args.Consolidation
	chosen := pl.chosen()
	describe, done := pl.profiles.scan(pl.gpuNames)
	defer done()
	var out []*unit
	for _, p := range running {
		if p.DeletionTimestamp != nil || chosen[p.UID] || marked(p) {
			continue
		}
		v := describe(p)
		// The cheap refusals first: this runs over every running pod.
		if !v.prof.Preemptible && !*c.CheckpointedPods || !workload.RecreatedElsewhere(p) {
			continue
		}
		vp := v.prof
		vp.Tier = pl.tenantTierOf(p)
		vprio := priority(p, v.gang)
		ckpt := v.ckpt
		if !ckpt.Declared() && *c.CheckpointedPods && len(p.Annotations) > 0 {
			ckpt, _ = workload.CheckpointingOf(p)
		}
		if !workload.MayMove(prof, prio, vp, vprio, ckpt, *c.CheckpointedPods, *pl.args.PreemptServicesForBatch) ||
			inMinRuntime(p, pl.tenantTierOf, prof, now) {
			continue
		}
		seconds := 0.0
		if v.gpus > 0 {
			seconds = float64(v.gpus) * v.ckpt.Lost(workload.StartOf(p), now).Seconds()
		}
		out = append(out, &unit{key: v.key, pods: []*corev1.Pod{p}, priority: vprio, gpuSeconds: seconds, podSeconds: []float64{seconds}, moved: true})
	}
	return out
}

// consolidate plans and starts a consolidation for the members of search s; ok
// is false when there is none to make, with why (for the pod's status).
func (pl *Plugin) consolidate(ctx context.Context, pod *corev1.Pod, prof workload.Profile, owner string, prio int32, s *search, movers []*unit) (*fwk.PostFilterResult, *fwk.Status, string) {
	c := pl.args.Consolidation
	bins := make([]placement.Bin, len(s.nodes))
	for i, n := range s.nodes {
		bins[i] = placement.Bin{Name: n.obj.Name, Free: n.free}
	}
	wants := make([]placement.Want, len(s.members))
	for i, m := range s.members {
		wants[i] = placement.Want{Req: m.req, Eligible: m.eligible}
	}
	ms := make([]placement.Movable, len(movers))
	for i, u := range movers {
		ms[i] = placement.Movable{Bin: s.byName[u.pods[0].Spec.NodeName], Req: nodefree.Requests(u.pods[0]), Cost: u.gpuSeconds,
			HomesOf: func() map[int]bool { return homesOf(s, u.pods[0]) }}
	}
	allow := func(set []int) bool {
		budget := maps.Clone(s.budget)
		for _, i := range set {
			if !s.allowed(movers[i], budget) {
				return false
			}
		}
		return true
	}
	if placement.ShortInTotal(bins, wants) {
		return nil, nil, fmt.Sprintf("the free room of the nodes is short of its %d member(s) in total: moving pods cannot make it", len(wants))
	}
	plan := placement.Consolidate(bins, wants, ms, s.scopes, allow)
	if plan == nil {
		return nil, nil, "no set of pods that may move (labelled preemptible, of a priority and tier not above its own) makes one whole place for them"
	}
	if n := len(plan.Moved); n > int(*c.MaxEvictionsPerGang) {
		return nil, nil, fmt.Sprintf("one whole place needs %d pods moved, over spec.plugins.gangPreemption.consolidation.maxEvictionsPerGang (%d)", n, *c.MaxEvictionsPerGang)
	}
	if used, ok := pl.moves.room(len(plan.Moved), *c.MaxEvictionsPerHour, time.Now()); !ok {
		return nil, nil, fmt.Sprintf("one whole place needs %d pods moved; %d moved in the last hour, and spec.plugins.gangPreemption.consolidation.maxEvictionsPerHour is %d", len(plan.Moved), used, *c.MaxEvictionsPerHour)
	}
	var units []*unit
	var victims []*corev1.Pod
	for k, i := range plan.Moved {
		u := movers[i]
		u.movedTo = s.nodes[plan.To[k]].obj.Name
		units = append(units, u)
		victims = append(victims, u.pods...)
		victimUnits.WithLabelValues("moved").Inc()
	}
	preemptions.WithLabelValues("Consolidating").Inc()
	pl.commit(owner, pod, s, plan.At, victims)

	who := fmt.Sprintf("%s %s/%s (priority %d)", strings.SplitN(owner, " ", 2)[0], pod.Namespace, ownerName(pod, prof), prio)
	places := map[string]bool{}
	for _, ni := range plan.At {
		places[s.nodes[ni].obj.Name] = true
	}
	note := fmt.Sprintf("consolidating: moving %s (%.1f GPU-hours since their last checkpoints) to place %d member(s) of %s in one piece on %s",
		summary(units), plan.Cost/3600, len(s.members), who, strings.Join(sortedKeys(places), ", "))
	klog.FromContext(ctx).V(2).Info("GangPreemption", "preemptor", klog.KObj(pod), "moved", len(victims), "decision", note)
	pl.record(pod, prof, corev1.EventTypeNormal, "Consolidating", "Preempting", note)
	pl.evictor.evict(units, fmt.Sprintf("%s: moved to make one whole place for %s", markerPrefix, who), pod)
	return nominate(s.nodes[plan.At[0]].obj.Name), fwk.NewStatus(fwk.Success, note), ""
}

// homesOf is the nodes a moved pod's replacement may run on (its node selector,
// required affinity and tolerations; not a cordoned node): asked only for the pods
// a plan moves.
func homesOf(s *search, p *corev1.Pod) map[int]bool {
	out := map[int]bool{}
	for ni, n := range s.nodes {
		if !n.obj.Spec.Unschedulable && placement.Eligible(p, n.obj) {
			out[ni] = true
		}
	}
	return out
}
