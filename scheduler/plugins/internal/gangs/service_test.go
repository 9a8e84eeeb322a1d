package gangs

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	testutil "github.com/kube-nexus/kubenexus/test/util"
)

func member(name, group string, prio int32) *corev1.Pod {
	return testutil.MakePod(name, "ns").PodGroup(group).UID(name).Priority(prio).SchedulerName("kubenexus-scheduler").Obj()
}

func TestServiceCountsMembers(t *testing.T) {
	x := NewService("kubenexus-scheduler", time.Now)
	key := gang.Key{Namespace: "ns", Name: "g"}

	gated := member("g-0", "g", 0)
	gated.Spec.SchedulingGates = nil
	x.Upsert(gated)
	second := member("g-1", "g", 0)
	second.Spec.SchedulingGates = append(second.Spec.SchedulingGates, gatedBy("kueue.x-k8s.io/admission"))
	x.Upsert(second)
	if e := x.Get(key); e == nil || e.Ungated != 1 || len(e.Members) != 2 {
		t.Fatalf("after one ungated and one gated member: %+v", e)
	}

	// The other system lifts its gate.
	lifted := second.DeepCopy()
	lifted.Spec.SchedulingGates = nil
	x.Upsert(lifted)
	if e := x.Get(key); e.Ungated != 2 {
		t.Fatalf("ungated = %d after the gate was lifted, want 2", e.Ungated)
	}

	// Binding shows up as assigned and clears the reservation.
	x.Get(key).Assumed.Insert(lifted.UID)
	bound := lifted.DeepCopy()
	bound.Spec.NodeName = "n1"
	x.Upsert(bound)
	if e := x.Get(key); e.Assigned.Len() != 1 || e.Assumed.Has(bound.UID) || e.Placed() != 1 {
		t.Fatalf("after binding: assigned=%v assumed=%v placed=%d", e.Assigned, e.Assumed, e.Placed())
	}

	// A pod moved to another gang leaves the first.
	moved := gated.DeepCopy()
	moved.Labels["scheduling.x-k8s.io/pod-group"] = "h"
	x.Upsert(moved)
	if e := x.Get(key); e.Ungated != 1 || len(e.Members) != 1 {
		t.Fatalf("after a member moved away: ungated=%d members=%d", e.Ungated, len(e.Members))
	}

	// Deleting the last member forgets the gang.
	x.Remove(bound)
	if e := x.Get(key); e != nil {
		t.Fatalf("gang still indexed after its last member was deleted: %+v", e)
	}

	// Pods of other schedulers are not indexed.
	other := member("o-0", "o", 0)
	other.Spec.SchedulerName = "default-scheduler"
	x.Upsert(other)
	if e := x.Get(gang.Key{Namespace: "ns", Name: "o"}); e != nil {
		t.Fatal("indexed a pod of another scheduler")
	}
}

func gatedBy(name string) corev1.PodSchedulingGate { return corev1.PodSchedulingGate{Name: name} }

func TestServiceHeldMembers(t *testing.T) {
	x := NewService("kubenexus-scheduler", time.Now)
	var changes []MemberChange
	x.OnChange(func(c MemberChange) { changes = append(changes, c) })

	a, b := member("h-0", "h", 0), member("h-1", "h", 0)
	x.Hold(a.UID) // PreEnqueue turned a away before the index saw it
	x.Upsert(a)
	x.Upsert(b)
	if len(changes) != 2 || changes[0].Ungated != 1 || changes[1].Ungated != 2 {
		t.Fatalf("changes = %+v, want two arrivals counting 1 then 2 ungated members", changes)
	}
	x.Upsert(b) // an update that changes no membership reports nothing
	if len(changes) != 2 {
		t.Fatalf("an unchanged member was reported again: %+v", changes[2:])
	}
	if !x.Release(a.UID) || x.Release(a.UID) {
		t.Fatal("release must report a held member once")
	}

	x.Hold(a.UID)
	bound := a.DeepCopy()
	bound.Spec.NodeName = "n1"
	x.Upsert(bound)
	if x.Release(a.UID) {
		t.Fatal("a bound member is still held")
	}
	x.Hold(b.UID)
	x.Remove(b)
	if x.Release(b.UID) {
		t.Fatal("a deleted member is still held")
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
		key, done, isMember := memo.of(first, gang.Of, completes)
		if key != (gang.Key{Namespace: "ns", Name: "a"}) || !done || !isMember {
			t.Fatalf("a-9: gang %v completes %v member %v, want ns/a, true, true", key, done, isMember)
		}
	}
	if calls != 1 {
		t.Errorf("quorum judged %d times for one added pod, want once", calls)
	}
	updated := first.DeepCopy() // an update is a new object: judged again
	if _, _, _ = memo.of(updated, gang.Of, completes); calls != 2 {
		t.Errorf("quorum judged %d times after an update, want 2", calls)
	}
	solo := testutil.MakePod("solo", "ns").Obj()
	if _, done, isMember := memo.of(solo, gang.Of, completes); isMember || done || calls != 2 {
		t.Errorf("a pod of no gang: member %v completes %v (%d judgements), want neither and no judgement", isMember, done, calls)
	}
}

// fakePodGroups is an object cache that has or has not synced, with no PodGroups.
// fakePodGroups is the KubeNexus object cache: the PodGroups of pgs.
type fakePodGroups struct {
	synced bool
	pgs    map[gang.Key]*v1alpha1.PodGroup
}

func (f *fakePodGroups) PodGroup(k gang.Key) *v1alpha1.PodGroup   { return f.pgs[k] }
func (f *fakePodGroups) Synced() bool                             { return f.synced }
func (fakePodGroups) CompositeOf(string, string) (gang.Key, bool) { return gang.Key{}, false }

// Until the object cache has synced, Admit holds every member (it must not read
// PodGroups on the queue's path) and says why; the sync lets them all in.
func TestAdmitHoldsMembersUntilTheCacheSyncs(t *testing.T) {
	s := NewService("kubenexus-scheduler", time.Now)
	s.ScheduleWhole()
	cache := &fakePodGroups{}
	var activated []string
	s.adm.pgs = cache
	s.adm.activate = func(pods map[string]*corev1.Pod) {
		for k := range pods {
			activated = append(activated, k)
		}
	}
	m := member("c-0", "c", 0)
	if st := s.Admit(context.Background(), m); st.Code() != fwk.UnschedulableAndUnresolvable || st.Message() != ErrReasonWaitingForCache {
		t.Fatalf("before the sync: status %v, want held for the cache", st)
	}
	if !s.WaitsForCache(m) {
		t.Fatal("the member is not recorded as waiting for the cache")
	}
	cache.synced = true
	s.activateHeldForCache()
	if len(activated) != 1 || activated[0] != "ns/c-0" || s.WaitsForCache(m) {
		t.Fatalf("after the sync: activated %v, still waiting %v; want ns/c-0 let in", activated, s.WaitsForCache(m))
	}
	// After the sync a member whose PodGroup does not exist goes on to PreFilter,
	// which says so where the user sees it.
	if st := s.Admit(context.Background(), m); st != nil {
		t.Errorf("after the sync, a member of a PodGroup that does not exist: status %v, want it let through", st)
	}
}

// The profile's second PreEnqueue (Coscheduling's) lets in the pod object the first
// (ProfileClassifier's) has just admitted without a second look, once; any other
// call decides afresh.
func TestReadmitTakesTheFirstAdmission(t *testing.T) {
	s := NewService("kubenexus-scheduler", time.Now)
	s.ScheduleWhole()
	labelled := func(name string) *corev1.Pod {
		return testutil.MakePod(name, "ns").UID(name).SchedulerName("kubenexus-scheduler").
			Label("pod-group.scheduling.kubenexus.io/name", "pair").Label("pod-group.scheduling.kubenexus.io/min-available", "2").Obj()
	}
	a, b := labelled("pair-0"), labelled("pair-1")
	s.Upsert(a)
	if st := s.Admit(context.Background(), a); st.Code() != fwk.UnschedulableAndUnresolvable {
		t.Fatalf("alone: Admit %v, want held", st)
	}
	if st := s.Readmit(context.Background(), a); st.Code() != fwk.UnschedulableAndUnresolvable {
		t.Fatalf("alone: Readmit %v, want held (nothing was admitted)", st)
	}
	s.Upsert(b)
	if st := s.Admit(context.Background(), a); st != nil {
		t.Fatalf("with its quorum: Admit %v, want let in", st)
	}
	s.Remove(b) // the quorum goes between the two PreEnqueues
	if st := s.Readmit(context.Background(), a); st != nil {
		t.Errorf("Readmit right after Admit let it in: %v, want let in without a second look", st)
	}
	if st := s.Readmit(context.Background(), a); st.Code() != fwk.UnschedulableAndUnresolvable {
		t.Errorf("a second Readmit: %v, want decided afresh (held: the quorum is gone)", st)
	}
}
