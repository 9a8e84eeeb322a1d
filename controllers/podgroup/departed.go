package podgroup

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kube-nexus/kubenexus/api/gang"
)

// departedTTL is how long the last state of a deleted member is remembered.
const departedTTL = 2 * time.Minute

// departed remembers the last state of members that were deleted while bound. A
// member evicted from a node whose kubelet (or kwok) confirms the deletion at
// once is often gone from the cache by the time its gang is reconciled — both
// events folded into one reconcile — and the reconcile must still see that it was
// lost, where, and why (its DisruptionTarget condition): without it the loss reads
// as a plain deletion, whose room is not held.
type departed struct {
	mu   sync.Mutex
	pods map[gang.Key][]departedPod
	// unexplainedSince is when a gang was first seen short of members with no
	// cause shown.
	unexplainedSince map[gang.Key]time.Time
	// swept is when every gang's expired records were last dropped (a gang whose
	// PodGroup is gone is never reconciled again to drop its own).
	swept time.Time
}

// settleDelay is how long a loss with no cause shown waits before it is taken
// for a plain deletion: the informer removes a deleted pod from the cache before
// it tells the handler that notes its last state, and a reconcile in between sees
// the member gone without a trace.
const settleDelay = 2 * time.Second

// unexplained returns how long to wait before a loss of the gang with no cause
// shown is taken for a plain deletion: settleDelay from the first time it was seen,
// then 0.
func (d *departed) unexplained(key gang.Key, now time.Time) time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.unexplainedSince == nil {
		d.unexplainedSince = map[gang.Key]time.Time{}
	}
	since, ok := d.unexplainedSince[key]
	if !ok || now.Sub(since) > 10*settleDelay { // none, or one whole again since
		d.unexplainedSince[key] = now
		return settleDelay
	}
	if wait := since.Add(settleDelay).Sub(now); wait > 0 {
		return wait
	}
	delete(d.unexplainedSince, key)
	return 0
}

type departedPod struct {
	pod *corev1.Pod
	at  time.Time
}

// note records a member deleted while bound and not finished.
func (d *departed) note(p *corev1.Pod, now time.Time) {
	if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded {
		return
	}
	m, ok, err := gang.Of(p)
	if err != nil || !ok {
		return
	}
	last := p.DeepCopy()
	if last.DeletionTimestamp == nil {
		last.DeletionTimestamp = &metav1.Time{Time: now}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pods == nil {
		d.pods = map[gang.Key][]departedPod{}
	}
	if now.Sub(d.swept) >= departedTTL {
		for key := range d.pods {
			d.prune(key, now)
		}
		for key, since := range d.unexplainedSince {
			if now.Sub(since) > 10*settleDelay {
				delete(d.unexplainedSince, key)
			}
		}
		d.swept = now
	}
	last.ManagedFields = nil
	d.pods[m.Key] = append(d.prune(m.Key, now), departedPod{pod: last, at: now})
}

// of returns the members of the gang deleted within departedTTL that present (the
// members the cache holds) does not hold any more.
func (d *departed) of(key gang.Key, present []corev1.Pod, now time.Time) []corev1.Pod {
	d.mu.Lock()
	defer d.mu.Unlock()
	kept := d.prune(key, now)
	if len(kept) == 0 {
		return nil
	}
	uids := make(map[types.UID]bool, len(present))
	for i := range present {
		uids[present[i].UID] = true
	}
	var out []corev1.Pod
	for _, dp := range kept {
		if !uids[dp.pod.UID] {
			out = append(out, *dp.pod)
		}
	}
	return out
}

// forget drops what is remembered of the gang: a repair started or ended on it.
func (d *departed) forget(key gang.Key) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.pods, key)
	delete(d.unexplainedSince, key)
}

// prune drops the gang's expired records and returns the others; d.mu is held.
func (d *departed) prune(key gang.Key, now time.Time) []departedPod {
	all := d.pods[key]
	kept := all[:0]
	for _, dp := range all {
		if now.Sub(dp.at) < departedTTL {
			kept = append(kept, dp)
		}
	}
	if len(kept) == 0 {
		delete(d.pods, key)
		return nil
	}
	d.pods[key] = kept
	return kept
}

// podEvents enqueues the PodGroup of a pod's gang, and remembers a member
// deleted while bound.
func (r *Reconciler) podEvents() handler.EventHandler {
	enqueue := enqueueGang()
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue.Create(ctx, e, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue.Update(ctx, e, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if p, ok := e.Object.(*corev1.Pod); ok {
				r.departed.note(p, r.Now())
			}
			enqueue.Delete(ctx, e, q)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue.Generic(ctx, e, q)
		},
	}
}
