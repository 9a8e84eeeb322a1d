// Package bindingbackpressure keeps the scheduling loop from running ahead of the API
// server. kube-scheduler starts a binding goroutine for every pod it places and never
// waits for it; when scheduling cycles are cheaper than bindings — gang members whose
// plan was made once, a busy API server — bindings pile up: each holds a goroutine, the
// assumed copy of its pod, its cycle state and an HTTP/2 stream, and the API server
// queues them. Placing pods faster than they can be bound does not bind them sooner.
//
// The plugin counts the pods released by Permit whose binding has not ended (reserved,
// minus those waiting at Permit, until PostBind or Unreserve), and a scheduling cycle
// whose pod would exceed maxBindingsInFlight waits at Permit until a binding ends. A
// pod waiting for its gang is not counted, so a gang never waits for itself. The wait
// is bounded (maxWait): a binding that never reports its end cannot stop scheduling.
package bindingbackpressure

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/scheduler/apis/config"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/names"
)

// Name is the plugin's registered name.
const Name = names.BindingBackpressure

const (
	// maxWait bounds one cycle's wait.
	maxWait = 5 * time.Second
	// staleAfter drops a pod the plugin never heard of again: longer than the
	// framework's longest Permit wait (15 minutes) plus a binding.
	staleAfter = 16 * time.Minute
)

// Plugin is the BindingBackpressure plugin.
type Plugin struct {
	limit   int
	maxWait time.Duration
	// waiting counts the pods waiting at Permit (the framework's waiting-pods map).
	waiting func() int
	now     func() time.Time

	mu sync.Mutex
	// reserved are the pods between Reserve and the end of their binding.
	reserved map[types.UID]time.Time
	// slots holds one token per binding request in flight (Bind); binding holds the
	// pods that took one.
	slots   chan struct{}
	binding map[types.UID]bool
	// ended is closed and replaced when a binding ends while a cycle waits.
	ended   chan struct{}
	waiters int
	// swept is when stale pods were last dropped.
	swept time.Time
}

var (
	_ fwk.ReservePlugin  = &Plugin{}
	_ fwk.PermitPlugin   = &Plugin{}
	_ fwk.PostBindPlugin = &Plugin{}
	_ fwk.BindPlugin     = &Plugin{}
)

// New builds the plugin.
func New(_ context.Context, obj runtime.Object, h fwk.Handle) (*Plugin, error) {
	args, err := config.DecodeBindingBackpressureArgs(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	registerMetricsOnce()
	waiting := func() int {
		n := 0
		h.IterateOverWaitingPods(func(fwk.WaitingPod) { n++ })
		return n
	}
	return newPlugin(int(*args.MaxBindingsInFlight), waiting, time.Now), nil
}

func newPlugin(limit int, waiting func() int, now func() time.Time) *Plugin {
	return &Plugin{limit: limit, maxWait: maxWait, waiting: waiting, now: now, reserved: map[types.UID]time.Time{}, ended: make(chan struct{}),
		slots: make(chan struct{}, limit), binding: map[types.UID]bool{}}
}

// Name returns the plugin's name.
func (pl *Plugin) Name() string { return Name }

// Reserve counts the pod from now until its binding ends.
func (pl *Plugin) Reserve(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) *fwk.Status {
	pl.mu.Lock()
	pl.reserved[pod.UID] = pl.now()
	pl.mu.Unlock()
	return nil
}

// Unreserve ends the count of a pod rejected or whose binding failed.
func (pl *Plugin) Unreserve(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) {
	pl.end(pod.UID)
}

// PostBind ends the count of a bound pod.
func (pl *Plugin) PostBind(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) {
	pl.end(pod.UID)
}

// Bind takes a binding slot, waiting in the pod's binding goroutine while
// maxBindingsInFlight binding requests are in flight, and passes the pod on to the
// next binder. A gang released at once so reaches the API server a slot at a time.
func (pl *Plugin) Bind(ctx context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) *fwk.Status {
	select {
	case pl.slots <- struct{}{}:
	case <-ctx.Done():
		return fwk.AsStatus(fmt.Errorf("waiting for a binding slot: %w", ctx.Err()))
	}
	pl.mu.Lock()
	pl.binding[pod.UID] = true
	pl.mu.Unlock()
	return fwk.NewStatus(fwk.Skip)
}

func (pl *Plugin) end(uid types.UID) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.binding[uid] {
		delete(pl.binding, uid)
		<-pl.slots
	}
	if _, ok := pl.reserved[uid]; !ok {
		return
	}
	delete(pl.reserved, uid)
	if pl.waiters > 0 {
		close(pl.ended)
		pl.ended = make(chan struct{})
	}
}

// Permit waits, holding the scheduling loop, while maxBindingsInFlight bindings are
// in flight; then it lets the pod through. It never rejects.
func (pl *Plugin) Permit(ctx context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) (*fwk.Status, time.Duration) {
	ended, over := pl.over(pod.UID)
	if !over {
		return nil, 0
	}
	start := pl.now()
	deadline := time.NewTimer(pl.maxWait)
	defer deadline.Stop()
	for ; over; ended, over = pl.over(pod.UID) {
		select {
		case <-ended:
		case <-deadline.C:
			pl.stopWaiting()
			klog.FromContext(ctx).V(2).Info("Bindings still in flight after the longest wait; scheduling on", "pod", klog.KObj(pod), "limit", pl.limit, "waited", pl.maxWait)
			observeWait(pl.now().Sub(start))
			return nil, 0
		case <-ctx.Done():
			pl.stopWaiting()
			return nil, 0
		}
		pl.stopWaiting()
	}
	observeWait(pl.now().Sub(start))
	return nil, 0
}

// over reports whether the pod's binding would exceed the limit; if so the caller
// is registered as waiting and gets the channel closed when a binding ends.
func (pl *Plugin) over(self types.UID) (<-chan struct{}, bool) {
	pl.mu.Lock()
	n := len(pl.reserved)
	if _, ok := pl.reserved[self]; ok {
		n--
	}
	if n < pl.limit {
		pl.mu.Unlock()
		return nil, false
	}
	pl.dropStaleLocked()
	pl.mu.Unlock()
	// Pods waiting at Permit are reserved but not binding. The framework's lock is
	// taken outside ours: Unreserve of a rejected waiting pod runs with neither held.
	waiting := pl.waiting()
	pl.mu.Lock()
	defer pl.mu.Unlock()
	n = len(pl.reserved) - waiting
	if _, ok := pl.reserved[self]; ok {
		n--
	}
	inFlight.Set(float64(max(n, 0)))
	if n < pl.limit {
		return nil, false
	}
	pl.waiters++
	return pl.ended, true
}

func (pl *Plugin) stopWaiting() {
	pl.mu.Lock()
	pl.waiters--
	pl.mu.Unlock()
}

// dropStaleLocked forgets pods reserved longer ago than any Permit wait and binding
// can last: whatever happened to them, they are not binding any more.
func (pl *Plugin) dropStaleLocked() {
	now := pl.now()
	if now.Sub(pl.swept) < time.Minute {
		return
	}
	pl.swept = now
	cutoff := now.Add(-staleAfter)
	for uid, t := range pl.reserved {
		if t.Before(cutoff) {
			delete(pl.reserved, uid)
		}
	}
}
