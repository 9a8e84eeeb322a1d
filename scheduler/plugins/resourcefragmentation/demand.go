package resourcefragmentation

import (
	"math"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-nexus/kubenexus/scheduler/placement"
)

// tracker follows the profile's GPU pods: those waiting for a node (queued) and a
// decaying count of arrivals per size. It is fed by the shared pod informer; the
// scheduling cycle only reads it.
type tracker struct {
	scheduler string
	gpus      []corev1.ResourceName
	halfLife  time.Duration
	now       func() time.Time

	mu       sync.Mutex
	queued   map[types.UID]int64
	perSize  map[int64]int // queued pods per size
	arrivals map[int64]float64
	decayed  time.Time
}

func newTracker(scheduler string, gpus []corev1.ResourceName, halfLifeSeconds int32) *tracker {
	return &tracker{scheduler: scheduler, gpus: gpus, halfLife: time.Duration(halfLifeSeconds) * time.Second, now: time.Now,
		queued: map[types.UID]int64{}, perSize: map[int64]int{}, arrivals: map[int64]float64{}}
}

func (t *tracker) handler() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if p, ok := obj.(*corev1.Pod); ok {
				t.observe(p, true)
			}
		},
		UpdateFunc: func(_, obj any) {
			if p, ok := obj.(*corev1.Pod); ok {
				t.observe(p, false)
			}
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				t.mu.Lock()
				t.unqueue(p.UID)
				t.mu.Unlock()
			}
		},
	}
}

// observe records a pod of this profile that asks for GPUs: queued while it has no
// node and is not finished; a new one also counts as an arrival.
func (t *tracker) observe(p *corev1.Pod, added bool) {
	if p.Spec.SchedulerName != t.scheduler {
		return
	}
	k := gpusOf(p, t.gpus)
	if k == 0 {
		return
	}
	waiting := p.Spec.NodeName == "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed && p.DeletionTimestamp == nil
	t.mu.Lock()
	defer t.mu.Unlock()
	t.unqueue(p.UID)
	if waiting {
		t.queued[p.UID] = k
		t.perSize[k]++
	}
	if added && waiting {
		t.decay()
		t.arrivals[k]++
	}
}

// unqueue forgets a queued pod (callers hold mu).
func (t *tracker) unqueue(uid types.UID) {
	if k, ok := t.queued[uid]; ok {
		delete(t.queued, uid)
		if t.perSize[k]--; t.perSize[k] <= 0 {
			delete(t.perSize, k)
		}
	}
}

// decay ages the arrival counts to now (callers hold mu).
func (t *tracker) decay() {
	now := t.now()
	if !t.decayed.IsZero() {
		f := math.Exp2(-now.Sub(t.decayed).Seconds() / t.halfLife.Seconds())
		for k, v := range t.arrivals {
			if v *= f; v < 1e-3 {
				delete(t.arrivals, k)
			} else {
				t.arrivals[k] = v
			}
		}
	}
	t.decayed = now
}

// snapshot returns the demand (queued pods count one each, arrivals their decayed
// count) and the queued pods per size, leaving out the pod being scheduled.
func (t *tracker) snapshot(self types.UID) (placement.Demand, map[int64]int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.decay()
	demand := placement.Demand{}
	queued := map[int64]int{}
	for k, n := range t.perSize {
		if sk, ok := t.queued[self]; ok && sk == k {
			n--
		}
		if n > 0 {
			queued[k] = n
			demand[k] = float64(n)
		}
	}
	for k, v := range t.arrivals {
		demand[k] += v
	}
	return demand, queued
}
