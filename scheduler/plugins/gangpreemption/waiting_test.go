package gangpreemption

import (
	"fmt"
	"maps"
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
	pl.commit("gang ns/high", members[0], s, &choice{victims: []*unit{{key: "pod ns/low-0", pods: []*corev1.Pod{victim}}}, nodes: []int{0, 1, 2}})
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
