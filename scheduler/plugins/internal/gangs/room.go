package gangs

import (
	"sort"
	"time"

	"github.com/kube-nexus/kubenexus/api/gang"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
)

// Gangs refused for want of room while holding nothing (Gang.UntilRoom) wait only
// until room frees. Then the first of them in queue order are activated together, so
// that the scheduler's queue (Coscheduling's QueueSort) tries them in its own order:
// left to kube-scheduler's per-pod backoff, which grows with every failed attempt to
// 10 s, the gang that arrived last (the shortest backoff) took the room first and the
// oldest waited longest.

// maxWoken caps the gangs one wake activates: the head of the queue, which the room
// serves first; the rest keep their backoff, lifted for each when the scheduler next
// tries one of its members (RoomEpoch).
const maxWoken = 64

// wakeDelay gathers the room freed in one burst (a gang's members ending together)
// into one wake.
const wakeDelay = 50 * time.Millisecond

// RoomEpoch is the count of moments room may have freed (Gang.RoomEpoch).
func (s *Service) RoomEpoch() uint64 { return s.roomEpoch.Load() }

// RoomFreed notes that room may have freed, and schedules a wake of the gangs
// waiting for it.
func (s *Service) RoomFreed() {
	s.roomEpoch.Add(1)
	if s.wakeQueued.CompareAndSwap(false, true) {
		delay := wakeDelay
		if s.wakeAfter > 0 {
			delay = s.wakeAfter
		}
		time.AfterFunc(delay, s.wakeForRoom)
	}
}

// wakeForRoom ends the backoff of the first maxWoken gangs waiting for room, in
// queue order (priority, then first seen, then key), and activates their pending
// members, and those of every gang that yielded to them (YieldsForRoom): nothing
// else brings a yielded gang back, for it was not rejected.
func (s *Service) wakeForRoom() {
	// Cleared under the lock: YieldsForRoom reads it under the lock too, so a gang
	// that yields is seen by this wake or yields to the next.
	s.mu.Lock()
	s.wakeQueued.Store(false)
	s.mu.Unlock()
	epoch, now := s.RoomEpoch(), s.now()
	// Most passes find no gang waiting for room: look under the read lock first.
	s.mu.RLock()
	var queue []*Gang
	for _, e := range s.gangs {
		if e.Yielded || e.waitsForRoom(epoch, now) {
			queue = append(queue, e)
		}
	}
	sort.Slice(queue, func(i, j int) bool { return queue[i].ahead(queue[j]) })
	s.mu.RUnlock()
	if len(queue) == 0 {
		return
	}
	pods := map[string]*corev1.Pod{}
	woken := 0
	s.mu.Lock()
	for _, g := range queue {
		if s.gangs[g.Key] != g {
			continue // gone
		}
		switch {
		case g.Yielded:
			g.Yielded = false
		case woken < maxWoken && g.waitsForRoom(epoch, now):
			woken++
			g.BackoffUntil, g.UntilRoom = time.Time{}, false
		default:
			continue // tried meanwhile, or beyond the head of the queue
		}
		for k, p := range g.Pending() {
			pods[k] = p
		}
	}
	s.mu.Unlock()
	s.activatePods(pods)
}

// YieldsForRoom reports whether the gang should let the gangs ahead of it that wait
// for room be tried first: room has freed and their wake is pending, and one of them,
// not tried since, is ahead of it in queue order. kube-scheduler's own queueing
// hints move a gang that failed once straight back to the active queue when room
// frees, while one that failed more often sits out a longer per-pod backoff: without
// yielding, the gang that arrived last took the room (make bench-eta). Starvation
// aging is not weighed.
func (s *Service) YieldsForRoom(key gang.Key) bool {
	if !s.wakeQueued.Load() {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	me := s.gangs[key]
	switch {
	case !s.wakeQueued.Load():
		return false // the wake has run (or is running): nothing would bring it back
	case me == nil, s.now().Before(me.RoomMadeUntil):
		return false // room freed for it by preemption is its own
	case me.Placed() > 0:
		// A running gang's replacement or extra member: the room it left is its
		// own, and members waiting at Permit would time out while it yielded.
		return false
	}
	epoch, now := s.RoomEpoch(), s.now()
	for _, e := range s.gangs {
		if e != me && e.waitsForRoom(epoch, now) && e.ahead(me) {
			// It has not tried the room that freed: the wake takes it too, after them.
			me.Yielded = true
			return true
		}
	}
	return false
}

// waitsForRoom reports a gang backing off only until room frees, refused before room
// last freed (epoch): one refused since has seen that room. A gang preemption is
// making room for (RoomMadeUntil) waits for its victims, not for any room: woken
// before they are gone, it would preempt again elsewhere.
func (e *Gang) waitsForRoom(epoch uint64, now time.Time) bool {
	return e.UntilRoom && !e.BackoffUntil.IsZero() && e.RoomEpoch != epoch && !now.Before(e.RoomMadeUntil)
}

// queuePriority is the priority the gang is queued at: its PodGroup's class capped
// at its members' (QueuePriority), else a member's own.
func (e *Gang) queuePriority() int32 {
	if v, ok := e.QueuePriority(); ok {
		return v
	}
	for _, p := range e.Members {
		return corev1helpers.PodPriority(p)
	}
	return 0
}

// ahead reports whether e is queued ahead of o: higher priority, then first seen,
// then key (Coscheduling's QueueSort without starvation aging).
func (e *Gang) ahead(o *Gang) bool {
	if a, b := e.queuePriority(), o.queuePriority(); a != b {
		return a > b
	}
	if !e.FirstSeen.Equal(o.FirstSeen) {
		return e.FirstSeen.Before(o.FirstSeen)
	}
	return e.Key.Namespace < o.Key.Namespace || e.Key.Namespace == o.Key.Namespace && e.Key.Name < o.Key.Name
}

// RoomMadeFor notes that preemption made room for the gang, its own until until: the
// gang does not yield it (YieldsForRoom).
func (s *Service) RoomMadeFor(key gang.Key, until time.Time) {
	s.mu.Lock()
	if e := s.gangs[key]; e != nil {
		e.RoomMadeUntil = until
	}
	s.mu.Unlock()
}
