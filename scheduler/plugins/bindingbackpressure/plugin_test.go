package bindingbackpressure

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	testutil "github.com/kube-nexus/kubenexus/test/util"
)

func pod(name string) *corev1.Pod {
	return testutil.MakePod(name, "").UID(name).Obj()
}

// async runs f in a goroutine and returns a channel closed when it returns.
func async(f func()) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	return done
}

func returned(ch <-chan struct{}, within time.Duration) bool {
	select {
	case <-ch:
		return true
	case <-time.After(within):
		return false
	}
}

// permit runs Permit for p in a goroutine; it must let the pod through.
func permit(t *testing.T, pl *Plugin, p *corev1.Pod) <-chan struct{} {
	return async(func() {
		if st, _ := pl.Permit(context.Background(), nil, p, "n"); !st.IsSuccess() {
			t.Errorf("Permit %s: %v", p.Name, st)
		}
	})
}

// bind runs Bind for p in a goroutine; it must hand the pod on (Skip).
func bind(t *testing.T, pl *Plugin, p *corev1.Pod) <-chan struct{} {
	return async(func() {
		if st := pl.Bind(context.Background(), nil, p, "n"); st.Code() != fwk.Skip {
			t.Errorf("Bind %s = %v, want Skip (the default binder binds)", p.Name, st)
		}
	})
}

func TestBindTakesASlotUntilTheBindingEnds(t *testing.T) {
	pl := newPlugin(2, time.Now)
	ctx := context.Background()
	for _, name := range []string{"a", "b"} {
		if !returned(bind(t, pl, pod(name)), time.Second) {
			t.Fatalf("Bind %s waited with a free slot", name)
		}
	}
	third := bind(t, pl, pod("c"))
	if returned(third, 100*time.Millisecond) {
		t.Fatal("a third binding request started with 2 in flight and a limit of 2")
	}
	pl.Unreserve(ctx, nil, pod("a"), "n") // a failed binding gives its slot back
	if !returned(third, 2*time.Second) {
		t.Fatal("the binding still waits after one ended")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if st := pl.Bind(cancelled, nil, pod("d"), "n"); st.Code() != fwk.Error {
		t.Errorf("Bind with no slot and a cancelled context = %v, want an error", st)
	}
	pl.Unreserve(ctx, nil, pod("d"), "n") // as the framework does after the error
	pl.PostBind(ctx, nil, pod("b"), "n")
	if !returned(bind(t, pl, pod("e")), time.Second) {
		t.Error("a slot given back by PostBind was not taken")
	}
}

func TestPermitWaitsWhileTheBindingStepIsFull(t *testing.T) {
	pl := newPlugin(2, time.Now)
	ctx := context.Background()
	for _, name := range []string{"a", "b"} {
		<-bind(t, pl, pod(name))
	}
	waiting := permit(t, pl, pod("c"))
	if returned(waiting, 100*time.Millisecond) {
		t.Fatal("the next pod's cycle went on with 2 bindings in flight and a limit of 2")
	}
	pl.PostBind(ctx, nil, pod("a"), "n")
	if !returned(waiting, 2*time.Second) {
		t.Fatal("the cycle still waits after a binding ended")
	}
	// Pods waiting for a slot count too: a gang released at once holds the loop.
	pl.PostBind(ctx, nil, pod("b"), "n")
	for _, name := range []string{"g0", "g1", "g2"} {
		bind(t, pl, pod(name))
	}
	time.Sleep(50 * time.Millisecond)
	if returned(permit(t, pl, pod("next")), 100*time.Millisecond) {
		t.Error("the loop went on while three pods of a released gang were in the binding step")
	}
}

func TestPodsBeforeBindDoNotHoldTheLoop(t *testing.T) {
	// Reserved pods waiting for their gang at Permit, or in PreBind (volume
	// provisioning), have not reached Bind: however many, the loop goes on.
	pl := newPlugin(1, time.Now)
	ctx := context.Background()
	for _, name := range []string{"member-0", "member-1", "provisioning"} {
		pl.Reserve(ctx, nil, pod(name), "n")
		if !returned(permit(t, pl, pod(name)), time.Second) {
			t.Fatalf("Permit of %s waited with no pod in the binding step", name)
		}
	}
	// And ending pods that never reached Bind frees nothing.
	<-bind(t, pl, pod("a"))
	pl.Unreserve(ctx, nil, pod("member-0"), "n")
	if returned(bind(t, pl, pod("b")), 100*time.Millisecond) {
		t.Error("unreserving a pod that never reached Bind gave a slot away")
	}
}

func TestTheLoopsWaitIsBounded(t *testing.T) {
	pl := newPlugin(1, time.Now)
	pl.maxWait = 50 * time.Millisecond
	<-bind(t, pl, pod("stuck"))
	if !returned(permit(t, pl, pod("b")), 2*time.Second) {
		t.Fatal("a binding that never ends stopped scheduling")
	}
}

// gcPercents records what a heldPods sets the collector to.
type gcPercents struct{ current, sets int }

func (g *gcPercents) set(p int) int {
	prev := g.current
	g.current = p
	g.sets++
	return prev
}

func TestManyHeldPodsHalveTheCollectorsHeadroomUntilTheyAreBound(t *testing.T) {
	gc := &gcPercents{current: 100}
	pl := newPlugin(64, time.Now)
	pl.count = newHeldPods(gc.set)
	ctx := context.Background()
	pods := make([]*corev1.Pod, holdHigh)
	for i := range pods {
		pods[i] = pod(fmt.Sprintf("p%d", i))
		pl.Reserve(ctx, nil, pods[i], "n")
		pl.Reserve(ctx, nil, pods[i], "n") // counted once
		if want := 100; i < holdHigh-1 && gc.current != want {
			t.Fatalf("GC percent %d with %d pods held, want %d", gc.current, i+1, want)
		}
	}
	if gc.current != 50 {
		t.Fatalf("GC percent %d with %d pods held, want 50", gc.current, holdHigh)
	}
	// A pod that was never reserved (a Reserve plugin before this one failed) is not
	// subtracted.
	pl.Unreserve(ctx, nil, pod("never-reserved"), "n")
	for i := 0; i < holdHigh-holdLow; i++ {
		if gc.current != 50 {
			t.Fatalf("GC percent %d with %d pods held, want 50 until %d", gc.current, holdHigh-i, holdLow)
		}
		if i%2 == 0 {
			pl.PostBind(ctx, nil, pods[i], "n")
		} else {
			pl.Unreserve(ctx, nil, pods[i], "n")
		}
	}
	if gc.current != 100 {
		t.Fatalf("GC percent %d with %d pods held, want 100 again", gc.current, holdLow)
	}
	if got := pl.count.n; got != holdLow {
		t.Fatalf("held %d, want %d", got, holdLow)
	}
}

func TestTheCollectorTurnedOffStaysOff(t *testing.T) {
	gc := &gcPercents{current: -1}
	h := newHeldPods(gc.set)
	sets := gc.sets
	h.add(holdHigh * 2)
	h.add(-holdHigh * 2)
	if gc.current != -1 || gc.sets != sets {
		t.Fatalf("GC percent %d after %d sets, want -1 untouched", gc.current, gc.sets-sets)
	}
}
