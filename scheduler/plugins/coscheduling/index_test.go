package coscheduling

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/gangview"
	testutil "github.com/kube-nexus/kubenexus/test/util"
)

func TestIndexCountsMembers(t *testing.T) {
	pl := newTestPlugin()
	x := pl.index
	key := gang.Key{Namespace: "ns", Name: "g"}

	gated := member("g-0", "g", 0)
	gated.Spec.SchedulingGates = nil
	x.upsert(gated)
	second := member("g-1", "g", 0)
	second.Spec.SchedulingGates = append(second.Spec.SchedulingGates, gatedBy("kueue.x-k8s.io/admission"))
	x.upsert(second)
	if e := x.get(key); e == nil || e.ungated != 1 || len(e.members) != 2 {
		t.Fatalf("after one ungated and one gated member: %+v", e)
	}

	// The other system lifts its gate.
	lifted := second.DeepCopy()
	lifted.Spec.SchedulingGates = nil
	x.upsert(lifted)
	if e := x.get(key); e.ungated != 2 {
		t.Fatalf("ungated = %d after the gate was lifted, want 2", e.ungated)
	}

	// Binding shows up as assigned and clears the reservation.
	x.get(key).assumed.Insert(lifted.UID)
	bound := lifted.DeepCopy()
	bound.Spec.NodeName = "n1"
	x.upsert(bound)
	if e := x.get(key); e.assigned.Len() != 1 || e.assumed.Has(bound.UID) || e.placed() != 1 {
		t.Fatalf("after binding: assigned=%v assumed=%v placed=%d", e.assigned, e.assumed, e.placed())
	}

	// A pod moved to another gang leaves the first.
	moved := gated.DeepCopy()
	moved.Labels["scheduling.x-k8s.io/pod-group"] = "h"
	x.upsert(moved)
	if e := x.get(key); e.ungated != 1 || len(e.members) != 1 {
		t.Fatalf("after a member moved away: ungated=%d members=%d", e.ungated, len(e.members))
	}

	// Deleting the last member forgets the gang.
	x.remove(bound)
	if e := x.get(key); e != nil {
		t.Fatalf("gang still indexed after its last member was deleted: %+v", e)
	}

	// Pods of other schedulers are not indexed.
	other := member("o-0", "o", 0)
	other.Spec.SchedulerName = "default-scheduler"
	x.upsert(other)
	if e := x.get(gang.Key{Namespace: "ns", Name: "o"}); e != nil {
		t.Fatal("indexed a pod of another scheduler")
	}
}

func gatedBy(name string) corev1.PodSchedulingGate { return corev1.PodSchedulingGate{Name: name} }

func TestIndexHeldMembers(t *testing.T) {
	x := newPodIndex("kubenexus-scheduler", newTestPlugin().now)
	var changes []memberChange
	x.onChange = func(c memberChange) { changes = append(changes, c) }

	a, b := member("h-0", "h", 0), member("h-1", "h", 0)
	x.hold(a.UID) // PreEnqueue turned a away before the index saw it
	x.upsert(a)
	x.upsert(b)
	if len(changes) != 2 || changes[0].ungated != 1 || changes[1].ungated != 2 {
		t.Fatalf("changes = %+v, want two arrivals counting 1 then 2 ungated members", changes)
	}
	x.upsert(b) // an update that changes no membership reports nothing
	if len(changes) != 2 {
		t.Fatalf("an unchanged member was reported again: %+v", changes[2:])
	}
	if !x.release(a.UID) || x.release(a.UID) {
		t.Fatal("release must report a held member once")
	}

	x.hold(a.UID)
	bound := a.DeepCopy()
	bound.Spec.NodeName = "n1"
	x.upsert(bound)
	if x.release(a.UID) {
		t.Fatal("a bound member is still held")
	}
	x.hold(b.UID)
	x.remove(b)
	if x.release(b.UID) {
		t.Fatal("a deleted member is still held")
	}
}

// Node events skip the members that wait for their gang's quorum or for the object
// cache, and count again for a member once a check found its quorum (PreEnqueue and
// PreFilter let it go) or the cache synced.
func TestNodeEventsSkipMembersWaitingForQuorumOrCache(t *testing.T) {
	pl := newTestPlugin()
	waiting, cached, placeable := member("w-0", "w", 0), member("c-0", "c", 0), member("p-0", "p", 0)
	pl.index.hold(waiting.UID)
	pl.cacheWait = map[string]*corev1.Pod{"ns/c-0": cached}
	hint := func(p *corev1.Pod) fwk.QueueingHint {
		h, err := pl.isSchedulableAfterNodeChange(klog.Background(), p, nil, testutil.MakeNode("n").Obj())
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		return h
	}
	for _, c := range []struct {
		pod  *corev1.Pod
		want fwk.QueueingHint
	}{{waiting, fwk.QueueSkip}, {cached, fwk.QueueSkip}, {placeable, fwk.Queue}} {
		if got := hint(c.pod); got != c.want {
			t.Errorf("%s: hint %v, want %v", c.pod.Name, got, c.want)
		}
	}
	pl.index.release(waiting.UID)
	pl.cacheWait = nil
	if hint(waiting) != fwk.Queue || hint(cached) != fwk.Queue {
		t.Errorf("after the quorum and the sync: hints %v and %v, want Queue for both", hint(waiting), hint(cached))
	}
}

// The member-added hint runs once per waiting pod for the same added pod: what the
// added pod brings (its gang, whether it completes the quorum) is worked out once
// per pod object, and again for the next one.
func TestAddedMemoJudgesEachAddedPodOnce(t *testing.T) {
	var memo addedMemo
	calls := 0
	completes := func(m gang.Membership, _ *corev1.Pod) bool {
		calls++
		return m.Key.Name == "a"
	}
	first := member("a-9", "a", 0)
	for range 1000 {
		key, done, isMember := memo.of(first, completes)
		if key != (gang.Key{Namespace: "ns", Name: "a"}) || !done || !isMember {
			t.Fatalf("a-9: gang %v completes %v member %v, want ns/a, true, true", key, done, isMember)
		}
	}
	if calls != 1 {
		t.Errorf("quorum judged %d times for one added pod, want once", calls)
	}
	updated := first.DeepCopy() // an update is a new object: judged again
	if _, _, _ = memo.of(updated, completes); calls != 2 {
		t.Errorf("quorum judged %d times after an update, want 2", calls)
	}
	if _, done, isMember := memo.of(plain("solo", 0), completes); isMember || done || calls != 2 {
		t.Errorf("a pod of no gang: member %v completes %v (%d judgements), want neither and no judgement", isMember, done, calls)
	}
}

type profileHandle struct{ fwk.Handle }

func (profileHandle) ProfileName() string { return "kubenexus-scheduler" }

// With ProfileClassifier running the hold, Coscheduling's own PreEnqueue lets every
// pod in without reading anything (this plugin has no object cache: a read would
// panic), a member lacking its quorum included.
func TestPreEnqueuePassesWhenProfileClassifierHolds(t *testing.T) {
	pl := newTestPlugin()
	pl.handle = profileHandle{}
	pl.gangs = &gangview.Registry{}
	pl.gangs.TakeGate("kubenexus-scheduler")
	lone := testutil.MakePod("a-1", "ns").Label("pod-group.scheduling.kubenexus.io/name", "a").Label("pod-group.scheduling.kubenexus.io/min-available", "3").Obj()
	lone.Spec.SchedulerName = "kubenexus-scheduler"
	if st := pl.PreEnqueue(context.Background(), lone); st != nil {
		t.Errorf("with ProfileClassifier holding: status %v, want the pod let in", st)
	}
	if pl.gangs.GateTaken("other-profile") {
		t.Error("another profile's Coscheduling would skip its hold too")
	}
}
