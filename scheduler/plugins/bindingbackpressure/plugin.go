// Package bindingbackpressure keeps the scheduler from running ahead of the API
// server. kube-scheduler starts a binding goroutine for every pod it places and never
// waits for it; when scheduling cycles are cheaper than bindings — gang members whose
// plan was made once, a busy API server — bindings pile up: each holds a goroutine,
// the assumed copy of its pod, its cycle state and an HTTP/2 stream, and the API server
// queues them. Placing pods faster than they can be bound does not bind them sooner.
//
// The plugin's Bind runs before DefaultBinder (the operator names it at bind): it
// takes one of maxBindingsInFlight slots, waiting for one in the pod's binding
// goroutine, and passes the pod on; the slot comes back at PostBind or Unreserve. So
// a gang released at once reaches the API server a slot at a time. Its Permit holds
// the scheduling loop while maxBindingsInFlight pods are in Bind (holding a slot or
// waiting for one). Pods waiting at Permit for their gang, or in PreBind (volume
// provisioning, DRA) are not in Bind: a gang never waits for itself, and slow
// provisioning does not slow other pods. The loop's wait is bounded (maxWait).
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

// maxWait bounds one scheduling cycle's wait.
const maxWait = 5 * time.Second

// Plugin is the BindingBackpressure plugin.
type Plugin struct {
	limit   int
	maxWait time.Duration
	now     func() time.Time
	// slots holds one token per binding request in flight.
	slots chan struct{}

	mu sync.Mutex
	// binding are the pods in Bind: true once they hold a slot.
	binding map[types.UID]bool
	// ended is closed and replaced when a binding ends while a cycle waits.
	ended   chan struct{}
	waiters int
	// held are the pods from Reserve to the end of their binding, counted in
	// count (heldpods.go).
	held  map[types.UID]struct{}
	count *heldPods
}

var (
	_ fwk.ReservePlugin  = &Plugin{}
	_ fwk.PermitPlugin   = &Plugin{}
	_ fwk.BindPlugin     = &Plugin{}
	_ fwk.PostBindPlugin = &Plugin{}
)

// New builds the plugin.
func New(_ context.Context, obj runtime.Object, _ fwk.Handle) (*Plugin, error) {
	args, err := config.DecodeBindingBackpressureArgs(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	registerMetricsOnce()
	return newPlugin(int(*args.MaxBindingsInFlight), time.Now), nil
}

func newPlugin(limit int, now func() time.Time) *Plugin {
	return &Plugin{limit: limit, maxWait: maxWait, now: now, slots: make(chan struct{}, limit),
		binding: map[types.UID]bool{}, ended: make(chan struct{}), held: map[types.UID]struct{}{}, count: processHeld()}
}

// Name returns the plugin's name.
func (pl *Plugin) Name() string { return Name }

// Reserve counts the pod as held until its binding ends (heldpods.go); binding
// slots are counted from Bind on.
func (pl *Plugin) Reserve(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) *fwk.Status {
	pl.mu.Lock()
	_, again := pl.held[pod.UID]
	pl.held[pod.UID] = struct{}{}
	pl.mu.Unlock()
	if !again {
		pl.count.add(1)
	}
	return nil
}

// Unreserve ends the binding of a pod whose binding failed (or that never reached
// Bind: then there is no slot to give back).
func (pl *Plugin) Unreserve(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) {
	pl.end(pod.UID)
}

// PostBind ends the binding of a bound pod.
func (pl *Plugin) PostBind(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) {
	pl.end(pod.UID)
}

// Bind takes a binding slot, waiting in the pod's binding goroutine while
// maxBindingsInFlight binding requests are in flight, and passes the pod on to the
// next binder.
func (pl *Plugin) Bind(ctx context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) *fwk.Status {
	pl.mu.Lock()
	pl.binding[pod.UID] = false
	n := len(pl.binding)
	pl.mu.Unlock()
	inFlight.Set(float64(n))
	select {
	case pl.slots <- struct{}{}:
	case <-ctx.Done():
		return fwk.AsStatus(fmt.Errorf("waiting for a binding slot: %w", ctx.Err()))
	}
	pl.mu.Lock()
	if _, ok := pl.binding[pod.UID]; ok {
		pl.binding[pod.UID] = true
	} else {
		<-pl.slots // ended meanwhile
	}
	pl.mu.Unlock()
	return fwk.NewStatus(fwk.Skip)
}

// end forgets a pod held since Reserve and gives back its binding slot, if any.
func (pl *Plugin) end(uid types.UID) {
	pl.mu.Lock()
	_, held := pl.held[uid]
	delete(pl.held, uid)
	holds, binding := pl.binding[uid]
	if binding {
		delete(pl.binding, uid)
		if holds {
			<-pl.slots
		}
		if pl.waiters > 0 {
			close(pl.ended)
			pl.ended = make(chan struct{})
		}
	}
	n := len(pl.binding)
	pl.mu.Unlock()
	if binding {
		inFlight.Set(float64(n))
	}
	if held {
		pl.count.add(-1)
	}
}

// Permit holds the scheduling loop while maxBindingsInFlight pods are in Bind, at
// most maxWait; then it lets the pod through. It never rejects.
func (pl *Plugin) Permit(ctx context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) (*fwk.Status, time.Duration) {
	ended, over := pl.over()
	if !over {
		return nil, 0
	}
	start := pl.now()
	deadline := time.NewTimer(pl.maxWait)
	defer deadline.Stop()
	for ; over; ended, over = pl.over() {
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

// over reports whether maxBindingsInFlight pods are in Bind; if so the caller is
// registered as waiting and gets the channel closed when a binding ends.
func (pl *Plugin) over() (<-chan struct{}, bool) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if len(pl.binding) < pl.limit {
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
