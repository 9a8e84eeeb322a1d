package gangpreemption

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/plugintest"
	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/schedtest"
)

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
		name string
		// deleted: the victim is deleted (the informer drops it); caughtUp: the
		// scheduler's cache has caught up (the snapshot drops it too).
		deleted, caughtUp bool
		wantMsg, wantNode string
	}{
		{"the victim still runs", false, false,
			"waiting for 1 preempted pod(s) to terminate", "n1"},
		{"deleted, the snapshot not caught up", true, false,
			"waiting for 1 preempted pod(s) to terminate", "n1"},
		{"gone from both: the member takes the room", true, true,
			"waiting for 1 member(s) to take the room preemption made", "n1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl, s := newPlugin(t, "", []runtime.Object{node, victim, neighbour, member})
			preempted(t, pl, "gang ns/high", []*corev1.Pod{member}, []string{"n1"}, []*corev1.Pod{victim})
			if tc.deleted {
				deleted(t, s, victim)
			}
			if tc.caughtUp {
				s.Env.SyncSnapshot(t)
			}
			msg, node, dropped := pl.waiting("gang ns/high", member)
			if msg != tc.wantMsg || node != tc.wantNode || dropped != nil {
				t.Errorf("waiting: %q on %q (dropped %d claims), want %q on %q", msg, node, len(dropped), tc.wantMsg, tc.wantNode)
			}
		})
	}
}

// A victim that was waiting at Permit (assumed on n1, never bound) is rejected, not
// deleted: it goes back to the queue unbound. It holds no room, so the members must
// not wait for it to terminate — it never will (the preemptor waited out its whole
// grace, seen on a loaded machine when the lower gang was tried first).
func TestWaitingNotForAVictimRejectedAtPermit(t *testing.T) {
	node := testutil.MakeNode("n1").Capacity("cpu", "4").Obj()
	pending := testutil.MakePod("low-0", "ns").UID("low-0").Req("cpu", "4").Obj()
	member := testutil.MakePod("high-0", "ns").UID("high-0").Req("cpu", "4").Obj()
	pl, _ := newPlugin(t, "", []runtime.Object{node, pending, member})
	assumed := pending.DeepCopy()
	assumed.Spec.NodeName = "n1" // as the snapshot held it when it was chosen
	preempted(t, pl, "gang ns/high", []*corev1.Pod{member}, []string{"n1"}, []*corev1.Pod{assumed})
	msg, node1, _ := pl.waiting("gang ns/high", member)
	if want := "waiting for 1 member(s) to take the room preemption made"; msg != want || node1 != "n1" {
		t.Errorf("waiting: %q on %q, want %q on n1", msg, node1, want)
	}
	// The hint that brings the members back: the scheduler reports the forgotten
	// assumed pod as an assigned pod's deletion.
	if hint, err := pl.isSchedulableAfterVictimGone(klog.Background(), member, assumed, nil); err != nil || hint != fwk.Queue {
		t.Errorf("hint after the victim was rejected at Permit: %v %v, want Queue", hint, err)
	}
}

// nominated lists the pods the scheduler's nominator holds on nodes, by name.
func nominated(s *plugintest.Services, nodes ...string) map[string]string {
	out := map[string]string{}
	for _, n := range nodes {
		for _, pi := range s.Env.Handle.NominatedPodsForNode(n) {
			out[pi.GetPod().Name] = n
		}
	}
	return out
}

// Every member the room was made for is nominated to its node at once (the pod
// whose PostFilter chose, by its result): other gangs' members must not take that
// room. A preemption given up clears the nominations of its unbound members.
func TestCommitNominatesEveryMemberAndForgettingClears(t *testing.T) {
	kube := []runtime.Object{testutil.MakeNode("n0").Capacity("cpu", "4").Obj(), testutil.MakeNode("n1").Capacity("cpu", "4").Obj(), testutil.MakeNode("n2").Capacity("cpu", "4").Obj()}
	var members []*corev1.Pod
	for i := range 3 {
		members = append(members, testutil.MakePod(fmt.Sprintf("high-%d", i), "ns").UID(fmt.Sprintf("high-%d", i)).Req("cpu", "4").Obj())
		kube = append(kube, members[i])
	}
	victim := testutil.MakePod("low-0", "ns").UID("low-0").Node("n0").Req("cpu", "4").Obj() // gone already
	// The shortest grace there is: the test waits for it to pass.
	pl, s := newPlugin(t, `{"victimGraceSeconds": 1}`, kube)
	preempted(t, pl, "gang ns/high", members, []string{"n0", "n1", "n2"}, []*corev1.Pod{victim})
	if got, want := nominated(s, "n0", "n1", "n2"), map[string]string{"high-1": "n1", "high-2": "n2"}; !maps.Equal(got, want) {
		t.Fatalf("nominations %v, want %v (high-0 is nominated by its PostFilter result)", got, want)
	}
	s.Env.Nominate(members[0], "n0") // the PostFilter result

	// While the grace lasts, the members are waited for; once it passed the
	// preemption is given up.
	var dropped []claim
	schedtest.WaitFor(t, "the grace to pass", func() bool {
		var msg string
		msg, _, dropped = pl.waiting("gang ns/high", members[0])
		return msg == ""
	})
	pl.unnominate(dropped)
	if got := nominated(s, "n0", "n1", "n2"); len(got) != 0 {
		t.Errorf("after the preemption was given up: nominations %v, want all of high-0, high-1, high-2 cleared", got)
	}
}

// Another gang's preemption evicted more than its members need (two pods for one
// member, as when the cheapest set spans two gangs): the surplus is free room on
// the way. A gang that fits only with it must be told which pods it waits for
// (waitsFor), so that it claims the room — refusing it with "preemption would not
// help" sent it into its gang backoff while its room was coming. Each victim's room
// counts once, also when two preemptions wait for it.
func TestRoomLeftOverByAnotherPreemption(t *testing.T) {
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
			kube := []runtime.Object{a, c}
			for _, n := range nodes {
				kube = append(kube, n)
			}
			for _, p := range append(b, snapshot...) {
				kube = append(kube, p)
			}
			pl, _ := newPlugin(t, "", kube)
			preempted(t, pl, "gang ns/a", []*corev1.Pod{a}, []string{"n0"}, victims)
			if tc.alsoClaimed {
				preempted(t, pl, "pod ns/c", []*corev1.Pod{c}, []string{"n1"}, victims[1:])
			}

			claimed, evicting, _ := pl.claimed("gang ns/b")
			infos, err := pl.handle.SnapshotSharedLister().NodeInfos().List()
			if err != nil {
				t.Fatal(err)
			}
			s := pl.newSearch(infos, b, claimed, nil)
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

	pl, s := newPlugin(t, "", []runtime.Object{node, member, plain, other, victims[0], victims[1]})
	if _, st := pl.PreFilter(context.Background(), nil, member, nil); st.Code() != fwk.Skip {
		t.Fatalf("no preemption in flight: PreFilter %v, want Skip", st)
	}
	preempted(t, pl, "gang ns/high", []*corev1.Pod{member}, []string{"n1"}, victims)

	if _, st := pl.PreFilter(context.Background(), nil, member, nil); st.Code() != fwk.UnschedulableAndUnresolvable || st.Message() != msgVictimsLeft {
		t.Errorf("member while its victims run: PreFilter %v, want UnschedulableAndUnresolvable %q", st, msgVictimsLeft)
	}
	if _, st := pl.PreFilter(context.Background(), nil, plain, nil); st.Code() != fwk.Skip {
		t.Errorf("a pod with no preemption of its own: PreFilter %v, want Skip", st)
	}

	hint := func(gone *corev1.Pod) fwk.QueueingHint {
		t.Helper()
		deleted(t, s, gone)
		h, err := pl.isSchedulableAfterVictimGone(klog.Background(), member, gone, nil)
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
	s.Env.SyncSnapshot(t) // the scheduler's cache catches up
	if _, st := pl.PreFilter(context.Background(), nil, member, nil); st.Code() != fwk.Skip {
		t.Errorf("victims gone: PreFilter %v, want Skip (the member goes to its room)", st)
	}
}
