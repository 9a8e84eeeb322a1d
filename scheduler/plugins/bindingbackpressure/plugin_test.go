package bindingbackpressure

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
)

func pod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name)}}
}

// permitAsync runs Permit in a goroutine and returns a channel closed when it returns.
func permitAsync(pl *Plugin, p *corev1.Pod) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if st, _ := pl.Permit(context.Background(), nil, p, "n"); !st.IsSuccess() {
			panic("Permit rejected: " + st.Message())
		}
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

func TestPermitWaitsForABindingToEnd(t *testing.T) {
	pl := newPlugin(2, func() int { return 0 }, time.Now)
	ctx := context.Background()
	a, b, c := pod("a"), pod("b"), pod("c")
	for _, p := range []*corev1.Pod{a, b} {
		pl.Reserve(ctx, nil, p, "n")
		if st, _ := pl.Permit(ctx, nil, p, "n"); !st.IsSuccess() {
			t.Fatalf("Permit %s: %v", p.Name, st)
		}
	}
	pl.Reserve(ctx, nil, c, "n")
	done := permitAsync(pl, c)
	if returned(done, 100*time.Millisecond) {
		t.Fatal("the third pod's cycle went on with 2 bindings in flight and a limit of 2")
	}
	pl.PostBind(ctx, nil, a, "n")
	if !returned(done, 2*time.Second) {
		t.Fatal("the cycle still waits after a binding ended")
	}
}

func TestUnreserveEndsTheWaitAndUnknownPodsChangeNothing(t *testing.T) {
	pl := newPlugin(1, func() int { return 0 }, time.Now)
	ctx := context.Background()
	pl.Reserve(ctx, nil, pod("a"), "n")
	pl.Unreserve(ctx, nil, pod("never-reserved"), "n")
	pl.PostBind(ctx, nil, pod("never-reserved"), "n")
	pl.Reserve(ctx, nil, pod("b"), "n")
	done := permitAsync(pl, pod("b"))
	if returned(done, 100*time.Millisecond) {
		t.Fatal("ending pods that were never reserved freed a binding")
	}
	pl.Unreserve(ctx, nil, pod("a"), "n")
	if !returned(done, 2*time.Second) {
		t.Fatal("the cycle still waits after the binding pod was unreserved")
	}
}

func TestPodsWaitingAtPermitAreNotInFlight(t *testing.T) {
	var waiting atomic.Int32
	pl := newPlugin(2, func() int { return int(waiting.Load()) }, time.Now)
	ctx := context.Background()
	// Ten members of a gang are reserved and wait for their gang at Permit.
	for i := range 10 {
		p := pod(string(rune('a' + i)))
		pl.Reserve(ctx, nil, p, "n")
		if !returned(permitAsync(pl, p), time.Second) {
			t.Fatalf("member %d waited for bindings while %d members only wait for their gang", i, i)
		}
		waiting.Add(1)
	}
}

func TestTheWaitIsBounded(t *testing.T) {
	pl := newPlugin(1, func() int { return 0 }, time.Now)
	pl.maxWait = 50 * time.Millisecond
	ctx := context.Background()
	pl.Reserve(ctx, nil, pod("stuck"), "n")
	pl.Reserve(ctx, nil, pod("b"), "n")
	if !returned(permitAsync(pl, pod("b")), 2*time.Second) {
		t.Fatal("a binding that never ends stopped scheduling")
	}
}

func TestStalePodsAreForgotten(t *testing.T) {
	now := time.Now()
	clock := func() time.Time { return now }
	pl := newPlugin(1, func() int { return 0 }, clock)
	ctx := context.Background()
	pl.Reserve(ctx, nil, pod("lost"), "n")
	now = now.Add(staleAfter + time.Minute)
	pl.Reserve(ctx, nil, pod("b"), "n")
	if !returned(permitAsync(pl, pod("b")), time.Second) {
		t.Fatal("a pod reserved longer ago than any Permit wait and binding still counts")
	}
}

func TestBindTakesASlotUntilTheBindingEnds(t *testing.T) {
	pl := newPlugin(2, func() int { return 0 }, time.Now)
	ctx := context.Background()
	for _, name := range []string{"a", "b"} {
		if st := pl.Bind(ctx, nil, pod(name), "n"); st.Code() != fwk.Skip {
			t.Fatalf("Bind %s = %v, want Skip (the default binder binds)", name, st)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		pl.Bind(ctx, nil, pod("c"), "n")
	}()
	if returned(done, 100*time.Millisecond) {
		t.Fatal("a third binding request started with 2 in flight and a limit of 2")
	}
	pl.Unreserve(ctx, nil, pod("a"), "n") // a failed binding gives its slot back
	if !returned(done, 2*time.Second) {
		t.Fatal("the binding still waits after one ended")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if st := pl.Bind(cancelled, nil, pod("d"), "n"); st.Code() != fwk.Error {
		t.Errorf("Bind with no slot and a cancelled context = %v, want an error", st)
	}
}
