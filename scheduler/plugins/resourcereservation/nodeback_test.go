package resourcereservation

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/plugintest"
	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/schedtest"
)

// A repairing gang's replacement waits in kube-scheduler's backoff, and its gang in
// Coscheduling's, while the room held for it is on a NotReady node; when a node of
// the held domain is schedulable again, the gang's backoff ends and the replacement
// is activated at once — and not for a node of another domain, nor for a gang with
// no repair reservation.
func TestActivatesARepairingGangWhenANodeOfItsDomainComesBack(t *testing.T) {
	notReady := []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}}
	nodeA := testutil.MakeNode("a-0").Label(v1alpha1.LabelRack, "a").Capacity("cpu", "8").Obj()
	nodeA.Spec.Taints = notReady
	nodeB := testutil.MakeNode("b-0").Label(v1alpha1.LabelRack, "b").Capacity("cpu", "8").Obj()
	nodeB.Spec.Taints = notReady
	replacement := testutil.MakePod("train-0b", "ml").UID("train-0b").PodGroup("train").SchedulerName(schedtest.SchedulerName).Req("cpu", "8").Obj()
	other := testutil.MakePod("etl-0", "ml").UID("etl-0").PodGroup("etl").SchedulerName(schedtest.SchedulerName).Req("cpu", "8").Obj()
	hold := &v1alpha1.ResourceReservation{
		ObjectMeta: metav1.ObjectMeta{Name: "train-repair", Namespace: "ml", CreationTimestamp: metav1.Now(),
			Labels: map[string]string{v1alpha1.LabelReservationAccumulate: "true", v1alpha1.LabelReservationRepair: "true"}},
		Spec: v1alpha1.ResourceReservationSpec{
			Owner:        v1alpha1.ReservationOwner{Kind: v1alpha1.ReservationOwnerPodGroup, Name: "train", UID: "pg-train"},
			Resources:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")},
			Slots:        1,
			TTLSeconds:   300,
			NodeSelector: map[string]string{v1alpha1.LabelRack: "a"},
		},
	}
	pl, s := plugintest.Build(t, []runtime.Object{nodeA, nodeB, replacement, other}, []client.Object{hold}, func(s *plugintest.Services) (*Plugin, error) {
		return New(context.Background(), nil, s.Env.Handle, s.CRDs, NewShared(), s.Gangs(), s.Devices())
	})
	schedtest.WaitFor(t, "the repair reservation in the index", func() bool {
		idx := pl.shared.idx.Load()
		return idx != nil && len(idx.accumulating) == 1
	})
	back := func(n *corev1.Node) {
		t.Helper()
		n = n.DeepCopy()
		n.Spec.Taints = nil
		if _, err := s.Env.Client.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rejected := time.Now().Add(time.Hour) // the gang's last rejection: it backs off
	backoffUntil := func(name string) time.Time {
		g := s.Gangs()
		g.Lock()
		defer g.Unlock()
		e := g.Ensure(gang.Key{Namespace: "ml", Name: name})
		if !rejected.IsZero() {
			e.BackoffUntil = rejected
		}
		return e.BackoffUntil
	}
	backoffUntil("train")
	backoffUntil("etl")
	rejected = time.Time{}
	back(nodeB)
	time.Sleep(300 * time.Millisecond)
	if got := s.Env.Activated(); len(got) != 0 {
		t.Fatalf("a node of rack b came back: activated %v, want nothing (the hold is in rack a)", got)
	}
	if backoffUntil("train").IsZero() {
		t.Fatal("a node of rack b came back: the gang's backoff ended, want it kept (the hold is in rack a)")
	}
	back(nodeA)
	schedtest.WaitFor(t, "the replacement activated", func() bool { return slices.Contains(s.Env.Activated(), "ml/train-0b") })
	if until := backoffUntil("train"); !until.IsZero() {
		t.Errorf("the gang still backs off until %s after a node of its held domain came back", until)
	}
	if backoffUntil("etl").IsZero() {
		t.Error("the backoff of the gang with no repair reservation ended too")
	}
	if got := s.Env.Activated(); slices.Contains(got, "ml/etl-0") {
		t.Errorf("activated %v: the gang with no repair reservation was activated too", got)
	}
}
