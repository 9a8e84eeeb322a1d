package bindingbackpressure

import (
	"runtime/debug"
	"sync"

	"k8s.io/klog/v2"
)

// Pods the scheduler holds between Reserve and the end of their binding (gang
// members waiting at Permit for the rest of their gang, pods waiting for a binding
// slot) pin their assumed copy, cycle state, queued-pod copy and binding goroutine
// until they are bound: about 17 KB of heap and an 8 KB stack each, measured with
// 1000 members of one gang waiting. With the collector's default headroom (GOGC=100)
// the heap grows to twice what is live before a collection, so a 1000-member gang
// costs the process some 35 MiB more than the same pods bound one by one. While
// holdHigh pods or more are held the plugin halves the collector's headroom over the
// live heap, and gives it back when they are down to holdLow: collections run more
// often only while most of the heap is pinned anyway. Plain pods never reach it
// with the default maxBindingsInFlight (64): the scheduling loop waits at Permit
// while that many are in Bind.
const (
	holdHigh = 256
	holdLow  = 128
)

// heldPods counts the pods held by every instance of the plugin (one per profile)
// and sets the collector's target from the count. The GC percent it restores is the
// one the process started with (GOGC, 100 by default); with the collector off
// (GOGC=off) it changes nothing.
type heldPods struct {
	mu      sync.Mutex
	n       int
	lowered bool
	base    int
	// setGCPercent is debug.SetGCPercent; tests replace it.
	setGCPercent func(int) int
}

// processHeld is the process's count, made when the first plugin instance is.
var processHeld = sync.OnceValue(func() *heldPods { return newHeldPods(debug.SetGCPercent) })

func newHeldPods(set func(int) int) *heldPods {
	// SetGCPercent returns the previous value: read it and put it back.
	base := set(100)
	set(base)
	return &heldPods{base: base, setGCPercent: set}
}

// add counts d more held pods (d < 0: fewer).
func (h *heldPods) add(d int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n += d
	heldGauge.Set(float64(h.n))
	switch {
	case h.base <= 0:
	case !h.lowered && h.n >= holdHigh:
		h.lowered = true
		h.setGCPercent(h.base / 2)
		klog.V(2).InfoS("Many pods held until bound: collecting garbage sooner", "heldPods", h.n, "gcPercent", h.base/2)
	case h.lowered && h.n <= holdLow:
		h.lowered = false
		h.setGCPercent(h.base)
		klog.V(2).InfoS("Held pods bound: garbage collection back to its configured target", "heldPods", h.n, "gcPercent", h.base)
	}
}
