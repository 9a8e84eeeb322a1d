package gangs

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-nexus/kubenexus/api/gang"
)

// When room frees, the gangs waiting only for room are woken in queue order — higher
// priority first, then the first seen — at most maxWoken of them; a gang in backoff
// for another reason is not.
func TestRoomFreedWakesTheHeadOfTheQueue(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	now := t0
	s := NewService("kubenexus-scheduler", func() time.Time { return now })
	var mu sync.Mutex
	var woken []string
	done := make(chan struct{}, 1)
	s.adm.activate = func(pods map[string]*corev1.Pod) {
		mu.Lock()
		for k := range pods {
			woken = append(woken, k)
		}
		mu.Unlock()
		done <- struct{}{}
	}
	// maxWoken+4 gangs of one member seen a second apart, the last but one at a
	// higher priority and the last backing off after a Permit timeout.
	n := maxWoken + 4
	high, timedOut := n-2, n-1
	for i := range n {
		now = t0.Add(time.Duration(i) * time.Second)
		prio := int32(0)
		if i == high {
			prio = 100
		}
		name := fmt.Sprintf("g%02d", i)
		s.Upsert(member(name+"-0", name, prio))
		e := s.Get(gang.Key{Namespace: "ns", Name: name})
		e.BackoffUntil, e.UntilRoom = now.Add(time.Hour), i != timedOut
	}
	s.RoomFreed()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("no gang was woken")
	}
	mu.Lock()
	defer mu.Unlock()
	sort.Strings(woken)
	want := []string{fmt.Sprintf("ns/g%02d-0", high)}
	for i := range maxWoken - 1 {
		want = append(want, fmt.Sprintf("ns/g%02d-0", i))
	}
	sort.Strings(want)
	if !slices.Equal(woken, want) {
		t.Fatalf("woken %v, want %v", woken, want)
	}
	for i, wantBackoff := range map[int]bool{0: false, high: false, maxWoken - 1: true, timedOut: true} {
		e := s.Get(gang.Key{Namespace: "ns", Name: fmt.Sprintf("g%02d", i)})
		if got := !e.BackoffUntil.IsZero(); got != wantBackoff {
			t.Errorf("g%02d: backing off %v, want %v", i, got, wantBackoff)
		}
	}
}

// While room has freed and the wake is pending, a gang yields to the gangs ahead of
// it that wait for room and were not tried since; never to one tried since, nor once
// the wake has run.
func TestYieldsForRoom(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	now := t0
	s := NewService("kubenexus-scheduler", func() time.Time { return now })
	s.wakeAfter = 2 * time.Second // the checks before the wake run well within it
	woke := activations(s)
	s.Upsert(member("old-0", "old", 0))
	now = t0.Add(time.Minute)
	s.Upsert(member("new-0", "new", 0))
	oldKey, newKey := gang.Key{Namespace: "ns", Name: "old"}, gang.Key{Namespace: "ns", Name: "new"}
	old := s.Get(oldKey)
	old.BackoffUntil, old.UntilRoom = now.Add(time.Hour), true
	if s.YieldsForRoom(newKey) {
		t.Fatal("yields with no room freed")
	}
	s.RoomFreed()
	if !s.YieldsForRoom(newKey) || s.YieldsForRoom(oldKey) {
		t.Errorf("room freed: new yields %v (want true), old yields %v (want false)", s.YieldsForRoom(newKey), s.YieldsForRoom(oldKey))
	}
	// Room preemption made for it is its own.
	s.RoomMadeFor(newKey, now.Add(time.Minute))
	if s.YieldsForRoom(newKey) {
		t.Error("yields room preemption made for it")
	}
	s.RoomMadeFor(newKey, time.Time{})
	s.Lock()
	old.RoomEpoch = s.RoomEpoch() // old was tried since, and refused again
	s.Unlock()
	if s.YieldsForRoom(newKey) {
		t.Error("yields to a gang tried since room freed")
	}
	s.Lock()
	old.RoomEpoch = 0
	s.Unlock()
	if !s.YieldsForRoom(newKey) {
		t.Fatal("does not yield to a gang not tried since room freed")
	}
	// The wake brings back the gang ahead and, after it, the gang that yielded: it
	// was never rejected, and nothing else would.
	select {
	case names := <-woke:
		if want := []string{"ns/new-0", "ns/old-0"}; !slices.Equal(names, want) {
			t.Errorf("the wake activated %v, want %v", names, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the wake did not run")
	}
	if s.YieldsForRoom(newKey) {
		t.Error("yields after the wake ran")
	}
	if e := s.Get(newKey); e.Yielded {
		t.Error("still marked as yielded after the wake")
	}
}

// A gang preemption is making room for waits for its victims: room freed elsewhere
// neither wakes it nor ends its backoff (woken early, it could preempt a second time,
// elsewhere). Once the room made for it is no longer its own, it waits for room like
// the others.
func TestRoomFreedLeavesAGangWaitingForItsVictims(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	now := t0
	s := NewService("kubenexus-scheduler", func() time.Time { return now })
	woke := activations(s)
	s.Upsert(member("preemptor-0", "preemptor", 100))
	s.Upsert(member("other-0", "other", 0))
	preemptor, other := s.Get(gang.Key{Namespace: "ns", Name: "preemptor"}), s.Get(gang.Key{Namespace: "ns", Name: "other"})
	for _, e := range []*Gang{preemptor, other} {
		e.BackoffUntil, e.UntilRoom = now.Add(time.Hour), true
	}
	s.RoomMadeFor(preemptor.Key, now.Add(time.Minute))
	wake := func() []string {
		t.Helper()
		s.RoomFreed()
		select {
		case names := <-woke:
			return names
		case <-time.After(10 * time.Second):
			t.Fatal("the wake did not run")
			return nil
		}
	}
	if got, want := wake(), []string{"ns/other-0"}; !slices.Equal(got, want) {
		t.Errorf("room freed while preemption makes room for preemptor: woken %v, want %v", got, want)
	}
	s.RLock()
	backingOff := !preemptor.BackoffUntil.IsZero()
	s.RUnlock()
	if !backingOff {
		t.Error("room freed elsewhere ended the backoff of the gang waiting for its victims")
	}
	now = t0.Add(2 * time.Minute)
	if got, want := wake(), []string{"ns/preemptor-0"}; !slices.Equal(got, want) {
		t.Errorf("room freed after the room made for it lapsed: woken %v, want %v", got, want)
	}
}

// activations receives the keys of the pods each wake activates, sorted.
func activations(s *Service) chan []string {
	woke := make(chan []string, 2)
	s.adm.activate = func(pods map[string]*corev1.Pod) {
		var names []string
		for k := range pods {
			names = append(names, k)
		}
		sort.Strings(names)
		woke <- names
	}
	return woke
}
