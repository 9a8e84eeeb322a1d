package resourcefragmentation

import (
	"math"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/dragpus"
)

// tracker follows the profile's GPU pods: those waiting for a node (queued) and a
// decaying count of arrivals, per class of shape (GPUs, and CPU and memory rounded up
// to steps, so that a few tasks that need a large node are not averaged away among
// many small ones). It is fed by the shared pod informer; the scheduling cycle only
// reads it.
type tracker struct {
	scheduler string
	gpus      []corev1.ResourceName
	// dra reads the GPU requests of pods' ResourceClaims (nil: not read).
	dra      *dragpus.View
	halfLife time.Duration
	now      func() time.Time

	mu     sync.Mutex
	queued map[types.UID]shape
	// unresolved are pods whose ResourceClaims the scheduler's caches did not have
	// when the pods arrived (a claim made just before its pod): their shapes are
	// read again at the next snapshot, and they count then.
	unresolved map[types.UID]*corev1.Pod
	// waiting sums the queued pods per class (weight counts them).
	waiting map[class]sums
	// arrivals are the decayed arrival weights per class, with CPU and memory summed
	// under the same weights.
	arrivals map[class]sums
	decayed  time.Time
}

// shape is what a GPU pod asks for — whole GPUs, or a share of one in thousandths
// (a ResourceClaim for part of a shared or partitioned GPU) — and the GPU models it
// may use ("" for any; else the sorted models joined by "|").
type shape struct {
	gpus, share, milliCPU, memory int64
	models                        string
}

// isGPU reports whether the shape asks for a GPU or a share of one.
func (sh shape) isGPU() bool { return sh.gpus > 0 || sh.share > 0 }

// class groups shapes: the same GPUs (or share) and GPU models, CPU in steps of 8
// cores and memory in steps of 64 GiB (rounded up).
type class struct {
	gpus, share, cpuStep, memStep int64
	models                        string
}

const (
	cpuStep = 8000     // milli-CPU
	memStep = 64 << 30 // bytes
)

func classOf(sh shape) class {
	return class{gpus: sh.gpus, share: sh.share, cpuStep: (sh.milliCPU + cpuStep - 1) / cpuStep, memStep: (sh.memory + memStep - 1) / memStep, models: sh.models}
}

// sums accumulates weights and weighted CPU and memory of one class.
type sums struct{ weight, milliCPU, memory float64 }

func (s *sums) add(sh shape, w float64) {
	s.weight += w
	s.milliCPU += w * float64(sh.milliCPU)
	s.memory += w * float64(sh.memory)
}

func newTracker(scheduler string, gpus []corev1.ResourceName, halfLifeSeconds int32) *tracker {
	return &tracker{scheduler: scheduler, gpus: gpus, halfLife: time.Duration(halfLifeSeconds) * time.Second, now: time.Now,
		queued: map[types.UID]shape{}, unresolved: map[types.UID]*corev1.Pod{}, waiting: map[class]sums{}, arrivals: map[class]sums{}}
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
				delete(t.unresolved, p.UID)
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
	sh, found := t.shapeFound(p)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.record(p, sh, found, added)
}

// record counts a pod of shape sh (callers hold mu); a pod whose claims were not
// found waits in unresolved.
func (t *tracker) record(p *corev1.Pod, sh shape, found, added bool) {
	if _, was := t.unresolved[p.UID]; was {
		delete(t.unresolved, p.UID)
		added = true // its arrival was not counted yet
	}
	if !found {
		if p.DeletionTimestamp == nil && !workload.Finished(p) {
			t.unresolved[p.UID] = p
		}
		return
	}
	if !sh.isGPU() {
		return
	}
	waiting := p.Spec.NodeName == "" && !workload.Finished(p) && p.DeletionTimestamp == nil
	t.unqueue(p.UID)
	if waiting {
		t.queued[p.UID] = sh
		s := t.waiting[classOf(sh)]
		s.add(sh, 1)
		t.waiting[classOf(sh)] = s
	}
	if added && waiting {
		t.decay()
		a := t.arrivals[classOf(sh)]
		a.add(sh, 1)
		t.arrivals[classOf(sh)] = a
	}
}

// empty reports whether no GPU pod waits and none arrived lately.
func (t *tracker) empty() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.waiting) == 0 && len(t.arrivals) == 0
}

// unqueue forgets a queued pod (callers hold mu).
func (t *tracker) unqueue(uid types.UID) {
	sh, ok := t.queued[uid]
	if !ok {
		return
	}
	delete(t.queued, uid)
	c := classOf(sh)
	s := t.waiting[c]
	s.add(sh, -1)
	if s.weight < 0.5 {
		delete(t.waiting, c)
	} else {
		t.waiting[c] = s
	}
}

// decay ages the arrival counts to now (callers hold mu).
func (t *tracker) decay() {
	now := t.now()
	if !t.decayed.IsZero() {
		f := math.Exp2(-now.Sub(t.decayed).Seconds() / t.halfLife.Seconds())
		for c, v := range t.arrivals {
			v.weight, v.milliCPU, v.memory = v.weight*f, v.milliCPU*f, v.memory*f
			if v.weight < 1e-3 {
				delete(t.arrivals, c)
			} else {
				t.arrivals[c] = v
			}
		}
	}
	t.decayed = now
}

// snapshot returns the demand (queued pods count one each, arrivals their decayed
// weight; one shape per class, with the class's weighted mean CPU and memory) and the
// queued pods per GPU count, leaving out the pod being scheduled.
func (t *tracker) snapshot(self types.UID) (placement.Demand, map[int64]int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range t.unresolved {
		if sh, found := t.shapeFound(p); found {
			t.record(p, sh, true, true)
		}
	}
	t.decay()
	total := map[class]sums{}
	queued := map[int64]int{}
	for c, s := range t.waiting {
		if sh, ok := t.queued[self]; ok && classOf(sh) == c {
			s.add(sh, -1)
		}
		if n := int(s.weight + 0.5); n > 0 {
			if c.gpus > 0 {
				queued[c.gpus] += n
			}
			total[c] = s
		}
	}
	for c, a := range t.arrivals {
		s := total[c]
		s.weight, s.milliCPU, s.memory = s.weight+a.weight, s.milliCPU+a.milliCPU, s.memory+a.memory
		total[c] = s
	}
	demand := make(placement.Demand, 0, len(total))
	for c, s := range total {
		if s.weight <= 0 {
			continue
		}
		demand = append(demand, placement.Need{GPUs: c.gpus, Share: c.share, Weight: s.weight, MilliCPU: int64(s.milliCPU / s.weight), Memory: int64(s.memory / s.weight), Models: splitModels(c.models)})
	}
	return demand, queued
}

// shape is what the pod asks for: its GPU resources (shapeOf), else the GPUs or
// share of one its ResourceClaims ask for (dragpus.View.Shape); the zero shape for a pod
// that asks for neither.
func (t *tracker) shape(pod *corev1.Pod) shape {
	sh, _ := t.shapeFound(pod)
	return sh
}

// shapeFound is shape, and false when some claim of the pod is not in the
// scheduler's caches yet.
func (t *tracker) shapeFound(pod *corev1.Pod) (shape, bool) {
	sh := shapeOf(pod, t.gpus)
	if sh.gpus > 0 || t.dra == nil || len(pod.Spec.ResourceClaims) == 0 {
		return sh, true
	}
	reqs, found := t.dra.Requests(pod, true)
	if len(reqs) == 0 {
		return sh, found
	}
	sh = cpuShapeOf(pod)
	sh.models = modelsKey(workload.RequiredGPUModels(pod))
	sh.gpus, sh.share = t.dra.Shape(reqs)
	return sh, true
}

// modelsKey is the key of a pod's allowed GPU models (workload.RequiredGPUModels):
// "" for any, "|" for none, else the models joined by "|".
func modelsKey(models []string) string {
	switch {
	case models == nil:
		return ""
	case len(models) == 0:
		return "|"
	}
	return strings.Join(models, "|")
}

// splitModels is the inverse of modelsKey.
func splitModels(key string) []string {
	switch key {
	case "":
		return nil
	case "|":
		return []string{}
	}
	return strings.Split(key, "|")
}
