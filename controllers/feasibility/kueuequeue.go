package feasibility

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kube-nexus/kubenexus/api/topology"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
)

// kueueQueue reads Kueue's queues into a Waiters: what each ClusterQueue holds and
// until when, and the Workloads waiting for quota whose pods KubeNexus will schedule.
type kueueQueue struct {
	cfg         *v1alpha1.KubeNexusConfig
	nsLabels    map[string]map[string]string
	queueLabels map[string]map[string]string
	classValue  map[string]int32
}

func (k *kueueQueue) read(ctx context.Context, r client.Reader, c *Cluster, out *Waiters, pods []corev1.Pod) error {
	// A reader that may not see Kueue's queues (a MultiKueue worker's kubeconfig
	// may only reach its Workloads and jobs) forecasts without them.
	var cqs kueue.ClusterQueueList
	if err := r.List(ctx, &cqs); err != nil {
		if NotServed(err) || apierrors.IsForbidden(err) {
			return nil
		}
		return fmt.Errorf("listing Kueue ClusterQueues: %w", err)
	}
	var cohorts kueue.CohortList
	if err := r.List(ctx, &cohorts); err != nil && !NotServed(err) {
		if apierrors.IsForbidden(err) {
			return nil
		}
		return fmt.Errorf("listing Kueue Cohorts: %w", err)
	}
	var lqs kueue.LocalQueueList
	if err := r.List(ctx, &lqs); err != nil && !NotServed(err) {
		if apierrors.IsForbidden(err) {
			return nil
		}
		return fmt.Errorf("listing Kueue LocalQueues: %w", err)
	}
	queueOf := make(map[types.NamespacedName]string, len(lqs.Items))
	for i := range lqs.Items {
		queueOf[client.ObjectKeyFromObject(&lqs.Items[i])] = string(lqs.Items[i].Spec.ClusterQueue)
	}
	q := NewQuotas(cqs.Items, cohorts.Items)
	out.Quotas = q
	gangsOf := map[types.NamespacedName][]int{}
	for i, wl := range out.Workload {
		if wl != nil {
			gangsOf[*wl] = append(gangsOf[*wl], i)
		}
	}
	ends := runningEnds(pods)
	scope, err := k.cfg.Spec.Webhook.NamespaceScope()
	if err != nil {
		scope = v1alpha1.DefaultWebhookScope()
	}
	// Admitted Workloads whose pods all run are forecast to run again if preempted:
	// their gangs are held after the queue and the Workloads waiting for quota.
	var again []*kueue.Workload
	var againW []*QuotaWorkload
	preempts := q.Preempts()
	for i := range out.Workloads {
		wl := &out.Workloads[i]
		key := client.ObjectKeyFromObject(wl)
		if apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadFinished) {
			continue
		}
		w := &QuotaWorkload{Name: key, Priority: ptrValue(wl.Spec.Priority), Queued: queuedAt(wl), Runtime: RuntimeOf(wl)}
		if a := wl.Status.Admission; a != nil {
			w.ClusterQueue, w.Usage, w.Gangs = string(a.ClusterQueue), usageOf(a), gangsOf[key]
			if len(w.Gangs) == 0 {
				w.Ends = admittedEnds(wl, ends[key], w.Runtime)
			}
			if e := ends[key]; e != nil {
				w.Running = e.pods
			}
			q.Hold(w)
			if preempts && len(w.Gangs) == 0 && len(w.Running) > 0 && k.ours(wl, scope) {
				again, againW = append(again, wl), append(againW, w)
			}
			continue
		}
		if wl.Spec.Active != nil && !*wl.Spec.Active {
			continue
		}
		w.ClusterQueue = queueOf[types.NamespacedName{Namespace: wl.Namespace, Name: string(wl.Spec.QueueName)}]
		sets := PodSetsOf(wl)
		need := QuotaNeed(sets)
		w.Request = make(map[corev1.ResourceName]int64, len(need))
		for name, v := range need {
			w.Request[name] = v.MilliValue()
		}
		if k.ours(wl, scope) && w.ClusterQueue != "" {
			w.Gangs = []int{len(out.Ahead)}
			out.Held = append(out.Held, w)
			out.Workload = append(out.Workload, &key)
			out.Ahead = append(out.Ahead, Ahead{Name: key.String(), Workload: k.workloadOf(wl, sets, w.ClusterQueue, c),
				Runtime: w.Runtime, Priority: k.podPriority(wl), Quota: w})
		}
		q.Wait(w)
	}
	for i, wl := range again {
		w := againW[i]
		w.Again = []int{len(out.Ahead)}
		out.Workload = append(out.Workload, nil) // running: it carries no estimate
		out.Ahead = append(out.Ahead, Ahead{Name: w.Name.String(), Workload: k.workloadOf(wl, PodSetsOf(wl), w.ClusterQueue, c),
			Runtime: w.Runtime, Priority: k.podPriority(wl), Quota: w})
	}
	return nil
}

// ours reports whether the Workload's pods will be KubeNexus's: their template
// names its scheduler, or names none (or the default one) in a namespace the
// webhook gives KubeNexus.
func (k *kueueQueue) ours(wl *kueue.Workload, scope labels.Selector) bool {
	for _, ps := range wl.Spec.PodSets {
		switch ps.Template.Spec.SchedulerName {
		case k.cfg.Spec.Scheduler.SchedulerName:
		case "", corev1.DefaultSchedulerName:
			if !scope.Matches(labels.Set(k.nsLabels[wl.Namespace])) {
				return false
			}
		default:
			return false
		}
	}
	return len(wl.Spec.PodSets) > 0
}

// workloadOf is the Workload's pods as the forecast plans them once admitted: its
// pod sets and the tenant tier of its namespace, or of its ClusterQueue when the
// KubeNexusConfig says so.
func (k *kueueQueue) workloadOf(wl *kueue.Workload, sets []PodSet, cq string, c *Cluster) *Workload {
	tierLabels := k.nsLabels[wl.Namespace]
	if l := k.queueLabels[cq]; workload.HasTier(l) {
		tierLabels = l
	}
	w := &Workload{PodSets: sets, ClusterQueue: cq, Tenant: workload.TierOf(workload.Namespace{Labels: tierLabels}, "")}
	for i := range w.PodSets {
		ps := &w.PodSets[i]
		// A required domain the pods' own annotations ask the scheduler for, when
		// Kueue's TAS does not.
		if ps.RequiredTopology == "" && len(ps.Slices) == 0 {
			pod := &corev1.Pod{ObjectMeta: ps.Template.ObjectMeta, Spec: ps.Template.Spec}
			pod.Namespace = wl.Namespace
			if pol, ok, err := topology.PolicyOf(pod, nil, c.Levels); err == nil && ok && pol.Required {
				ps.RequiredTopology = pol.LevelsWith(c.Levels)[pol.Level].NodeLabel
			}
		}
	}
	return w
}

// podPriority is the priority its pods will have in KubeNexus's queue: their
// template's PriorityClass value (0 without one).
func (k *kueueQueue) podPriority(wl *kueue.Workload) int32 {
	var p int32
	for i, ps := range wl.Spec.PodSets {
		v := k.classValue[ps.Template.Spec.PriorityClassName]
		if ps.Template.Spec.Priority != nil {
			v = *ps.Template.Spec.Priority
		}
		if i == 0 || v < p {
			p = v
		}
	}
	return p
}

// queuedAt is when the Workload entered its queue as Kueue orders it: when an
// admission check last evicted it, else its creation.
func queuedAt(wl *kueue.Workload) time.Time {
	if c := apimeta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadEvicted); c != nil && c.Reason == kueue.WorkloadEvictedByAdmissionCheck {
		return c.LastTransitionTime.Time
	}
	return wl.CreationTimestamp.Time
}

// usageOf is what an admission holds, by flavor and resource.
func usageOf(a *kueue.Admission) map[FlavorResource]int64 {
	out := map[FlavorResource]int64{}
	for _, psa := range a.PodSetAssignments {
		for name, q := range psa.ResourceUsage {
			if f, ok := psa.Flavors[name]; ok {
				out[FlavorResource{string(f), name}] += q.MilliValue()
			}
		}
	}
	return out
}

// podEnds is what the pods started for one Workload say of its end: the latest end
// of its running pods, whether one runs without a bound, whether one ran.
type podEnds struct {
	latest    time.Time
	unbounded bool
	running   bool
	finished  bool
	// pods are the running pods, with the room each holds.
	pods []RunningPod
}

// runningEnds reads the pods started for each Kueue Workload.
func runningEnds(pods []corev1.Pod) map[types.NamespacedName]*podEnds {
	out := map[types.NamespacedName]*podEnds{}
	for i := range pods {
		p := &pods[i]
		name := p.Annotations[v1alpha1.AnnotationKueueWorkload]
		if name == "" {
			continue
		}
		key := types.NamespacedName{Namespace: p.Namespace, Name: name}
		e := out[key]
		if e == nil {
			e = &podEnds{}
			out[key] = e
		}
		switch {
		case workload.Finished(p):
			e.finished = true
		case p.Spec.NodeName != "":
			e.running = true
			room := map[corev1.ResourceName]int64{corev1.ResourcePods: 1000}
			for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
				room[name] += q.MilliValue()
			}
			e.pods = append(e.pods, RunningPod{Pod: types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, Node: p.Spec.NodeName, Requests: room})
			if d, ok := workload.RuntimeBound(p); ok {
				if end := workload.Ends(p, d); end.After(e.latest) {
					e.latest = end
				}
			} else {
				e.unbounded = true
			}
		}
	}
	return out
}

// admittedEnds is when an admitted Workload none of whose pods wait frees its
// quota: when its running pods end; at once when they all finished (its creation,
// a moment past); its runtime after its quota was reserved when it has no pods yet;
// never (zero) when unknown.
func admittedEnds(wl *kueue.Workload, e *podEnds, runtime time.Duration) time.Time {
	switch {
	case e != nil && e.running:
		if e.unbounded {
			return time.Time{}
		}
		return e.latest
	case e != nil && e.finished:
		return wl.CreationTimestamp.Time
	case runtime > 0:
		if c := apimeta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadQuotaReserved); c != nil {
			return c.LastTransitionTime.Add(runtime)
		}
		return wl.CreationTimestamp.Add(runtime)
	}
	return time.Time{}
}

func ptrValue(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}
