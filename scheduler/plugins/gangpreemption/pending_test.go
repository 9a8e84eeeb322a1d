package gangpreemption

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"

	testutil "github.com/kube-nexus/kubenexus/test/util"
)

// A member of a gang whose victims are still there is held back in PreFilter as
// Pending (no plan, no Filter pass), and comes back, without backoff, when the last
// victim is deleted — not at the deletion of another victim or of an unrelated
// pod. Pods without a preemption in flight are skipped.
func TestMembersWaitForTheirVictimsAsPending(t *testing.T) {
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

	if _, st := pl.PreFilter(context.Background(), nil, member, nil); st.Code() != fwk.Pending || st.Message() != msgVictimsLeft {
		t.Errorf("member while its victims run: PreFilter %v, want Pending %q", st, msgVictimsLeft)
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
	if _, st := pl.PreFilter(context.Background(), nil, member, nil); st.Code() != fwk.Pending {
		t.Errorf("victims still in the snapshot: PreFilter %v, want Pending", st)
	}
	pl.handle = waitHandle{informers: inf, snapshot: schedcache.NewSnapshot([]*corev1.Pod{other}, []*corev1.Node{node})}
	if _, st := pl.PreFilter(context.Background(), nil, member, nil); st.Code() != fwk.Skip {
		t.Errorf("victims gone: PreFilter %v, want Skip (the member goes to its room)", st)
	}
}
