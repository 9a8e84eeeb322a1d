package gangpreemption

import (
	"context"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedutil "k8s.io/kubernetes/pkg/scheduler/util"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/gangs"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/podobj"
)

// markerPrefix starts the message of the DisruptionTarget condition GangPreemption
// puts on a victim before evicting it. The mark is what is evicted: a victim
// marked but not evicted yet (the scheduler stopped in between) is evicted by the
// next scheduler, with the rest of its gang.
const markerPrefix = "KubeNexus GangPreemption"

// shedMarker starts the mark of a member shed from a gang that runs above its
// minimum: it goes alone, its gang is not expanded to.
const shedMarker = markerPrefix + ": shed from gang "

// markOf is the message a victim of unit u is marked with.
func markOf(u *unit, message string) string {
	if u.shed == nil {
		return message
	}
	return shedMarker + u.shed.whole.gang.String() + ", which keeps running; " + strings.TrimPrefix(message, markerPrefix+": ")
}

// shedMark reports whether the pod's mark says it was shed from its gang.
func shedMark(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && strings.HasPrefix(c.Message, shedMarker) {
			return true
		}
	}
	return false
}

// evictionWorkers is how many Eviction API calls run at once (kube-scheduler's
// preemption deletes its victims 16 at a time too): one at a time, a gang's members
// waited for the evictions of every gang chosen before theirs.
const evictionWorkers = 16

// evictor marks victims and evicts the marked pods through the Eviction API.
type evictor struct {
	// gangs files pods under their gang (a CompositePodGroup's for its PodGroups').
	gangs  *gangs.Service
	cs     kubernetes.Interface
	pods   corelisters.PodLister
	handle fwk.Handle
	queue  workqueue.TypedRateLimitingInterface[types.NamespacedName]
	// ours are the victims this process marked (uid): their whole unit is queued
	// already, so their mark needs no expansion to the gang.
	ours sync.Map
	// evicted are the victims whose eviction the API server accepted (uid), until
	// the informer sees them deleted: updates that arrive in between (the mark, the
	// deletion timestamp) queue neither them nor their gang again. Without it a
	// victim was evicted again, and each update listed the victim's namespace to
	// expand its gang.
	evicted sync.Map
}

// marked reports whether GangPreemption chose the pod as a victim.
func marked(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == corev1.PodReasonPreemptionByScheduler && strings.HasPrefix(c.Message, markerPrefix) {
			return true
		}
	}
	return false
}

func startEvictor(ctx context.Context, h fwk.Handle, members *gangs.Service) (*evictor, error) {
	informers := h.SharedInformerFactory()
	e := &evictor{
		gangs:  members,
		cs:     h.ClientSet(),
		pods:   informers.Core().V1().Pods().Lister(),
		handle: h,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName](),
			workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "kubenexus-evictions"}),
	}
	onPod := func(obj any) {
		p := podobj.From(obj)
		if p == nil || !marked(p) || p.DeletionTimestamp != nil || p.Spec.NodeName == "" {
			return
		}
		if _, done := e.evicted.Load(p.UID); done {
			return
		}
		if _, mine := e.ours.Load(p.UID); mine {
			e.queue.Add(types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
			return
		}
		e.enqueueUnit(p)
	}
	if _, err := informers.Core().V1().Pods().Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    onPod,
		UpdateFunc: func(_, newObj any) { onPod(newObj) },
		DeleteFunc: func(obj any) {
			if p := podobj.From(obj); p != nil {
				e.evicted.Delete(p.UID)
				e.ours.Delete(p.UID)
			}
		},
	}); err != nil {
		return nil, fmt.Errorf("watching pods: %w", err)
	}
	go func() {
		<-ctx.Done()
		e.queue.ShutDown()
	}()
	for range evictionWorkers {
		go func() {
			for e.next(ctx) {
			}
		}()
	}
	return e, nil
}

// enqueueUnit queues a marked pod and, when it is in a gang and was not shed from
// it, every bound member of its gang: a gang is evicted whole, also when only some
// members were marked.
func (e *evictor) enqueueUnit(p *corev1.Pod) {
	e.queue.Add(types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
	key, ok := e.gangOf(p)
	if !ok || shedMark(p) {
		return
	}
	pods, err := e.pods.Pods(p.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, m := range pods {
		if k, ok := e.gangOf(m); ok && k == key && m.Spec.NodeName != "" && m.DeletionTimestamp == nil {
			e.queue.Add(types.NamespacedName{Namespace: m.Namespace, Name: m.Name})
		}
	}
}

// evict marks the victims (in the background: the scheduling cycle does not wait
// for the API) and queues them for eviction. Every victim is marked before any is
// evicted.
func (e *evictor) evict(us []*unit, message string, preemptor *corev1.Pod) {
	go func() {
		ctx := context.Background()
		var wg sync.WaitGroup
		for _, u := range us {
			for _, p := range u.pods {
				// A member waiting at Permit is not bound: rejecting it frees its
				// node, and the pod stays to be scheduled again.
				if wp := e.handle.GetWaitingPod(p.UID); wp != nil {
					wp.Reject(Name, message)
					continue
				}
				e.ours.Store(p.UID, true)
				wg.Add(1)
				go func() {
					defer wg.Done()
					e.mark(ctx, p, markOf(u, message))
					if r := e.handle.EventRecorder(); r != nil {
						if u.shed != nil || u.moved {
							r.Eventf(p, preemptor, corev1.EventTypeNormal, "Preempted", "Preempting", "%s; %s", message, u.describe())
						} else {
							r.Eventf(p, preemptor, corev1.EventTypeNormal, "Preempted", "Preempting", "%s; %s is evicted whole", message, u.describe())
						}
					}
				}()
			}
		}
		wg.Wait()
		for _, u := range us {
			for _, p := range u.pods {
				e.queue.Add(types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
			}
		}
	}()
}

// mark adds the DisruptionTarget condition that names the preemptor.
func (e *evictor) mark(ctx context.Context, p *corev1.Pod, message string) {
	cur, err := e.pods.Pods(p.Namespace).Get(p.Name)
	if err != nil || cur.UID != p.UID {
		return
	}
	status := cur.Status.DeepCopy()
	cond := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: corev1.PodReasonPreemptionByScheduler,
		Message: message, LastTransitionTime: metav1.Now()}
	replaced := false
	for i := range status.Conditions {
		if status.Conditions[i].Type == corev1.DisruptionTarget {
			status.Conditions[i], replaced = cond, true
		}
	}
	if !replaced {
		status.Conditions = append(status.Conditions, cond)
	}
	// The Eviction API rewrites DisruptionTarget's reason; this one says to the
	// gang's repair (scheduler and manager) that the room went to a preemptor.
	marked := corev1.PodCondition{Type: v1alpha1.PodConditionPreempted, Status: corev1.ConditionTrue, Reason: corev1.PodReasonPreemptionByScheduler,
		Message: message, LastTransitionTime: cond.LastTransitionTime}
	found := false
	for i := range status.Conditions {
		if status.Conditions[i].Type == marked.Type {
			status.Conditions[i], found = marked, true
		}
	}
	if !found {
		status.Conditions = append(status.Conditions, marked)
	}
	if err := schedutil.PatchPodStatus(ctx, e.cs, cur.Name, cur.Namespace, &cur.Status, status); err != nil && !apierrors.IsNotFound(err) {
		klog.FromContext(ctx).V(2).Info("Marking a preemption victim failed; evicting it anyway", "pod", klog.KObj(p), "err", err)
	}
}

func (e *evictor) next(ctx context.Context) bool {
	key, shutdown := e.queue.Get()
	if shutdown {
		return false
	}
	defer e.queue.Done(key)
	p, err := e.pods.Pods(key.Namespace).Get(key.Name)
	// Only bound pods are evicted; a victim waiting at Permit was rejected instead.
	if err != nil || p.DeletionTimestamp != nil || p.Spec.NodeName == "" {
		e.queue.Forget(key)
		return true
	}
	if _, done := e.evicted.Load(p.UID); done {
		e.queue.Forget(key)
		return true
	}
	// A victim marked by a scheduler that stopped before evicting it (or by an
	// older one) gets the condition the Eviction API leaves alone.
	if !hasCondition(p, v1alpha1.PodConditionPreempted) {
		message := "KubeNexus GangPreemption"
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.DisruptionTarget && c.Message != "" {
				message = c.Message
			}
		}
		e.mark(ctx, p, message)
	}
	ev := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}},
	}
	err = e.cs.PolicyV1().Evictions(p.Namespace).Evict(ctx, ev)
	switch {
	case err == nil:
		evictions.WithLabelValues("Evicted").Inc()
		e.evicted.Store(p.UID, true)
		e.ours.Delete(p.UID)
		e.queue.Forget(key)
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		e.ours.Delete(p.UID)
		e.queue.Forget(key)
	default:
		// 429: a PodDisruptionBudget does not allow it now; retried with backoff.
		evictions.WithLabelValues("Retried").Inc()
		klog.FromContext(ctx).V(2).Info("Evicting a preemption victim; retrying", "pod", klog.KObj(p), "err", err)
		e.queue.AddRateLimited(key)
	}
	return true
}

// Metrics served on the scheduler's /metrics endpoint.
var (
	preemptions = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "kubenexus",
		Subsystem:      "gang_preemption",
		Name:           "attempts_total",
		Help:           "PostFilter runs that chose victims (Evicting), found none (NoVictims), or claimed the room pods evicted for other preemptors leave beyond their needs (Adopted).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	victimUnits = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "kubenexus",
		Subsystem:      "gang_preemption",
		Name:           "victims_total",
		Help:           "Units chosen for eviction: whole gangs, single pods, or members shed from a gang that runs above its minimum (kind shed).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"kind"})
	evictions = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "kubenexus",
		Subsystem:      "gang_preemption",
		Name:           "evictions_total",
		Help:           "Eviction API calls for victims: Evicted, or Retried (refused, e.g. by a PodDisruptionBudget).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	registerMetrics sync.Once
)

// RegisterMetrics adds the plugin's metrics to the scheduler's registry (once).
func RegisterMetrics() {
	registerMetrics.Do(func() {
		legacyregistry.MustRegister(preemptions, victimUnits, evictions)
	})
}

// hasCondition reports whether the pod has the condition t, True.
func hasCondition(p *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
