package coscheduling

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	testutil "github.com/kube-nexus/kubenexus/test/util"
)

// Node events skip the members that wait for their gang's quorum, and count again
// for a member once a check found its quorum (PreEnqueue and PreFilter let it go).
func TestNodeEventsSkipMembersWaitingForQuorum(t *testing.T) {
	pl := newTestPlugin(t, "")
	waiting, placeable := member("w-0", "w", 0), member("p-0", "p", 0)
	pl.index.Hold(waiting.UID)
	hint := func(p *corev1.Pod) fwk.QueueingHint {
		h, err := pl.isSchedulableAfterNodeChange(klog.Background(), p, nil, testutil.MakeNode("n").Obj())
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		return h
	}
	if got := hint(waiting); got != fwk.QueueSkip {
		t.Errorf("%s: hint %v, want QueueSkip", waiting.Name, got)
	}
	if got := hint(placeable); got != fwk.Queue {
		t.Errorf("%s: hint %v, want Queue", placeable.Name, got)
	}
	pl.index.Release(waiting.UID)
	if got := hint(waiting); got != fwk.Queue {
		t.Errorf("after the quorum: hint %v, want Queue", got)
	}
}

// Coscheduling runs the gang admission itself: a member lacking its quorum is held
// (in a profile with ProfileClassifier, that plugin holds it first).
func TestPreEnqueueHoldsAMemberWithoutItsQuorum(t *testing.T) {
	pl := newTestPlugin(t, "")
	lone := testutil.MakePod("a-1", "ns").Label("pod-group.scheduling.kubenexus.io/name", "lone").Label("pod-group.scheduling.kubenexus.io/min-available", "3").Obj()
	lone.Spec.SchedulerName = "kubenexus-scheduler"
	st := pl.PreEnqueue(context.Background(), lone)
	if st.Code() != fwk.UnschedulableAndUnresolvable || !strings.Contains(st.Message(), ErrReasonWaitingForQuorum+": 1/3 members of ns/lone exist") {
		t.Errorf("a lone member of a gang of 3: status %v, want it held for its quorum", st)
	}
	if !pl.index.IsHeld(lone.UID) {
		t.Error("the member is not recorded as held: node events would re-queue it")
	}
}
