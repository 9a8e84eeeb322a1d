package gangpreemption

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/utils/ptr"

	"github.com/kube-nexus/kubenexus/scheduler/apis/config"
	testutil "github.com/kube-nexus/kubenexus/test/util"
)

// waitHandle is the part of the framework handle waiting reads: the pod informer
// and the cycle's snapshot.
type waitHandle struct {
	fwk.Handle
	informers informers.SharedInformerFactory
	snapshot  fwk.SharedLister
}

func (h waitHandle) SharedInformerFactory() informers.SharedInformerFactory { return h.informers }
func (h waitHandle) SnapshotSharedLister() fwk.SharedLister                 { return h.snapshot }

// TestWaitingUntilTheSnapshotLetsTheVictimsGo: the informer drops an evicted pod
// before the scheduler's cache does. In that window the victim's room is not free
// in the snapshot yet; the gang must keep waiting for it, not judge the room taken
// and evict another gang (seen as two gangs evicted for one, on a loaded machine).
func TestWaitingUntilTheSnapshotLetsTheVictimsGo(t *testing.T) {
	node := testutil.MakeNode("n1").Capacity("cpu", "4").Obj()
	victim := testutil.MakePod("low-a-0", "ns").UID("low-a-0").Node("n1").Req("cpu", "2").Obj()
	neighbour := testutil.MakePod("low-b-0", "ns").UID("low-b-0").Node("n1").Req("cpu", "2").Obj()
	member := testutil.MakePod("high-0", "ns").UID("high-0").Req("cpu", "2").Obj()

	for _, tc := range []struct {
		name               string
		informer, snapshot []*corev1.Pod
		wantMsg, wantNode  string
	}{
		{"the victim still runs", []*corev1.Pod{victim, neighbour, member}, []*corev1.Pod{victim, neighbour},
			"waiting for 1 preempted pod(s) to terminate", "n1"},
		{"deleted, the snapshot not caught up", []*corev1.Pod{neighbour, member}, []*corev1.Pod{victim, neighbour},
			"waiting for 1 preempted pod(s) to terminate", "n1"},
		{"gone from both: the member takes the room", []*corev1.Pod{neighbour, member}, []*corev1.Pod{neighbour},
			"waiting for 1 member(s) to take the room preemption made", "n1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inf := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
			store := inf.Core().V1().Pods().Informer().GetStore()
			for _, p := range tc.informer {
				if err := store.Add(p); err != nil {
					t.Fatal(err)
				}
			}
			pl := &Plugin{
				handle:   waitHandle{informers: inf, snapshot: schedcache.NewSnapshot(tc.snapshot, []*corev1.Node{node})},
				inflight: map[string]*preemption{},
			}
			pl.inflight["gang ns/high"] = &preemption{
				victims: []*corev1.Pod{victim},
				claims:  []claim{{pod: member, node: "n1", req: map[corev1.ResourceName]int64{corev1.ResourceCPU: 2000}}},
				until:   time.Now().Add(time.Minute),
			}
			msg, node, dropped := pl.waiting("gang ns/high", member)
			if msg != tc.wantMsg || node != tc.wantNode || dropped != nil {
				t.Errorf("waiting: %q on %q (dropped %d claims), want %q on %q", msg, node, len(dropped), tc.wantMsg, tc.wantNode)
			}
		})
	}
}

// nominations records what the plugin tells the scheduler's nominator.
type nominations struct {
	waitHandle
	got map[string]string // pod name -> node ("": cleared)
}

func (h *nominations) AddNominatedPod(_ klog.Logger, pi fwk.PodInfo, ni *fwk.NominatingInfo) {
	h.got[pi.GetPod().Name] = ni.NominatedNodeName
}

// Every member the room was made for is nominated to its node at once (the pod
// whose PostFilter chose, by its result): other gangs' members must not take that
// room. A preemption given up clears the nominations of its unbound members.
func TestCommitNominatesEveryMemberAndForgettingClears(t *testing.T) {
	nodes := []*corev1.Node{testutil.MakeNode("n0").Capacity("cpu", "4").Obj(), testutil.MakeNode("n1").Capacity("cpu", "4").Obj(), testutil.MakeNode("n2").Capacity("cpu", "4").Obj()}
	var members []*corev1.Pod
	for i := range 3 {
		members = append(members, testutil.MakePod(fmt.Sprintf("high-%d", i), "ns").UID(fmt.Sprintf("high-%d", i)).Req("cpu", "4").Obj())
	}
	victim := testutil.MakePod("low-0", "ns").UID("low-0").Node("n0").Req("cpu", "4").Obj()
	s := cluster(3, nil, members)
	for i, n := range nodes {
		s.nodes[i].obj = n
	}
	h := &nominations{waitHandle: waitHandle{informers: informers.NewSharedInformerFactory(fake.NewClientset(), 0), snapshot: schedcache.NewSnapshot(nil, nodes)}, got: map[string]string{}}
	pl := &Plugin{handle: h, inflight: map[string]*preemption{}, args: &config.GangPreemptionArgs{VictimGraceSeconds: ptr.To[int32](120)}}
	pl.commit("gang ns/high", members[0], s, []int{0, 1, 2}, []*corev1.Pod{victim})
	if want := map[string]string{"high-1": "n1", "high-2": "n2"}; !maps.Equal(h.got, want) {
		t.Fatalf("nominations %v, want %v (high-0 is nominated by its PostFilter result)", h.got, want)
	}

	pl.inflight["gang ns/high"].until = time.Now().Add(-time.Second) // the grace passed
	_, _, dropped := pl.waiting("gang ns/high", members[0])
	pl.unnominate(dropped)
	if want := map[string]string{"high-0": "", "high-1": "", "high-2": ""}; !maps.Equal(h.got, want) {
		t.Errorf("after the preemption was given up: nominations %v, want all cleared %v", h.got, want)
	}
}

// Another gang's preemption evicted more than its members need (two pods for one
// member, as when the cheapest set spans two gangs): the surplus is free room on
// the way. A gang that fits only with it must be told which pods it waits for
// (waitsFor), so that it claims the room — refusing it with "preemption would not
// help" sent it into its gang backoff while its room was coming. Each victim's room
// counts once, also when two preemptions wait for it.
func TestRoomLeftOverByAnotherPreemption(t *testing.T) {
	cpu8 := map[corev1.ResourceName]int64{corev1.ResourceCPU: 8000}
	for _, tc := range []struct {
		name string
		// alsoClaimed: a second preemption (c) holds n1's room, waiting for low-1.
		alsoClaimed bool
		// freeNow: a fifth node, free now, so that b fits without waiting.
		freeNow   bool
		wantFit   bool
		wantGoing []string // nil: nothing to wait for (b fits now, or not at all)
	}{
		{name: "the surplus of A's eviction", wantFit: true, wantGoing: []string{"low-1"}},
		{name: "the surplus already claimed by another", alsoClaimed: true, wantFit: false},
		{name: "room free now as well: nothing to wait for", freeNow: true, wantFit: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// n0 and n1 each hold one pod evicted for gang A, whose one member claims
			// n0; n2 holds a pod that stays; n3 is free now.
			var nodes []*corev1.Node
			for i := range 4 {
				nodes = append(nodes, testutil.MakeNode(fmt.Sprintf("n%d", i)).Capacity("cpu", "8").Obj())
			}
			if tc.freeNow {
				nodes = append(nodes, testutil.MakeNode("n4").Capacity("cpu", "8").Obj())
			}
			victims := []*corev1.Pod{
				testutil.MakePod("low-0", "ns").UID("low-0").Node("n0").Req("cpu", "8").Obj(),
				testutil.MakePod("low-1", "ns").UID("low-1").Node("n1").Req("cpu", "8").Obj(),
			}
			snapshot := append([]*corev1.Pod{testutil.MakePod("stays", "ns").UID("stays").Node("n2").Req("cpu", "8").Obj()}, victims...)
			a := testutil.MakePod("a-0", "ns").UID("a-0").Req("cpu", "8").Obj()
			c := testutil.MakePod("c", "ns").UID("c").Req("cpu", "8").Obj()
			b := []*corev1.Pod{
				testutil.MakePod("b-0", "ns").UID("b-0").Req("cpu", "8").Obj(),
				testutil.MakePod("b-1", "ns").UID("b-1").Req("cpu", "8").Obj(),
			}
			inf := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
			for _, p := range append(append([]*corev1.Pod{a, c}, b...), snapshot...) {
				if err := inf.Core().V1().Pods().Informer().GetStore().Add(p); err != nil {
					t.Fatal(err)
				}
			}
			pl := &Plugin{
				handle:   waitHandle{informers: inf, snapshot: schedcache.NewSnapshot(snapshot, nodes)},
				pdbs:     inf.Policy().V1().PodDisruptionBudgets().Lister(),
				inflight: map[string]*preemption{},
			}
			until := time.Now().Add(time.Minute)
			pl.inflight["gang ns/a"] = &preemption{victims: victims, claims: []claim{{pod: a, node: "n0", req: cpu8}}, until: until}
			if tc.alsoClaimed {
				pl.inflight["pod ns/c"] = &preemption{victims: victims[1:], claims: []claim{{pod: c, node: "n1", req: cpu8}}, until: until}
			}

			claimed, evicting, _ := pl.claimed("gang ns/b")
			infos, err := pl.handle.SnapshotSharedLister().NodeInfos().List()
			if err != nil {
				t.Fatal(err)
			}
			s := pl.newSearch(infos, b, claimed)
			at := s.place(nil, nil)
			if (at != nil) != tc.wantFit {
				t.Fatalf("b's two members placed: %v, want %v", at != nil, tc.wantFit)
			}
			if at == nil {
				return
			}
			var going []string
			for _, p := range s.waitsFor(at, evicting) {
				going = append(going, p.Name)
			}
			if !slices.Equal(going, tc.wantGoing) {
				t.Errorf("b waits for %v, want %v", going, tc.wantGoing)
			}
		})
	}
}

// A member of a gang whose victims are still there is held back in PreFilter (no
// plan, no Filter pass), and is queued again when the last victim is deleted — not
// at the deletion of another victim or of an unrelated pod. Pods without a
// preemption in flight are skipped.
func TestMembersWaitForTheirVictims(t *testing.T) {
	node := testutil.MakeNode("n1").Capacity("cpu", "8").Obj()
	victims := []*corev1.Pod{
		testutil.MakePod("low-0", "ns").UID("low-0").Node("n1").Req("cpu", "4").Obj(),
		testutil.MakePod("low-1", "ns").UID("low-1").Node("n1").Req("cpu", "4").Obj(),
	}
	other := testutil.MakePod("other", "ns").UID("other").Node("n1").Obj()
	member := testutil.MakePod("high-1", "ns").UID("high-1").PodGroup("high").Obj()
	plain := testutil.MakePod("plain", "ns").UID("plain").Obj()

	inf := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	store := inf.Core().V1().Pods().Informer().GetStore()
	for _, p := range append([]*corev1.Pod{member, plain, other}, victims...) {
		if err := store.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	pl := &Plugin{
		handle:   waitHandle{informers: inf, snapshot: schedcache.NewSnapshot(append([]*corev1.Pod{other}, victims...), []*corev1.Node{node})},
		inflight: map[string]*preemption{},
	}
	if _, st := pl.PreFilter(context.Background(), nil, member, nil); st.Code() != fwk.Skip {
		t.Fatalf("no preemption in flight: PreFilter %v, want Skip", st)
	}
	pl.inflight["gang ns/high"] = &preemption{victims: victims, claims: []claim{{pod: member, node: "n1"}}, until: time.Now().Add(time.Minute)}

	if _, st := pl.PreFilter(context.Background(), nil, member, nil); st.Code() != fwk.UnschedulableAndUnresolvable || st.Message() != msgVictimsLeft {
		t.Errorf("member while its victims run: PreFilter %v, want UnschedulableAndUnresolvable %q", st, msgVictimsLeft)
	}
	if _, st := pl.PreFilter(context.Background(), nil, plain, nil); st.Code() != fwk.Skip {
		t.Errorf("a pod with no preemption of its own: PreFilter %v, want Skip", st)
	}

	hint := func(deleted *corev1.Pod) fwk.QueueingHint {
		t.Helper()
		if err := store.Delete(deleted); err != nil {
			t.Fatal(err)
		}
		h, err := pl.isSchedulableAfterVictimGone(klog.Background(), member, deleted, nil)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	if h := hint(other); h != fwk.QueueSkip {
		t.Errorf("an unrelated pod deleted: %v, want QueueSkip", h)
	}
	if h := hint(victims[0]); h != fwk.QueueSkip {
		t.Errorf("one of two victims deleted: %v, want QueueSkip", h)
	}
	if h := hint(victims[1]); h != fwk.Queue {
		t.Errorf("the last victim deleted: %v, want Queue", h)
	}
	// Gone from the informer; until the snapshot drops them too, the member waits.
	if _, st := pl.PreFilter(context.Background(), nil, member, nil); st.Code() != fwk.UnschedulableAndUnresolvable {
		t.Errorf("victims still in the snapshot: PreFilter %v, want UnschedulableAndUnresolvable", st)
	}
	pl.handle = waitHandle{informers: inf, snapshot: schedcache.NewSnapshot([]*corev1.Pod{other}, []*corev1.Node{node})}
	if _, st := pl.PreFilter(context.Background(), nil, member, nil); st.Code() != fwk.Skip {
		t.Errorf("victims gone: PreFilter %v, want Skip (the member goes to its room)", st)
	}
}
