package resourcereservation

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	toolscache "k8s.io/client-go/tools/cache"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"

	testutil "github.com/kube-nexus/kubenexus/test/util"
)

// bindingLister lists the pods stored, then lets a binding land: the pod is stored
// bound and leaves the assumed pods, as the informer's handler does after the
// lister has it.
type bindingLister struct {
	corelisters.PodLister
	store toolscache.Indexer
	s     *Shared
	bind  *corev1.Pod
}

func (l *bindingLister) Pods(ns string) corelisters.PodNamespaceLister {
	return bindingNamespaceLister{PodNamespaceLister: l.PodLister.Pods(ns), l: l}
}

type bindingNamespaceLister struct {
	corelisters.PodNamespaceLister
	l *bindingLister
}

func (n bindingNamespaceLister) List(sel labels.Selector) ([]*corev1.Pod, error) {
	pods, err := n.PodNamespaceLister.List(sel)
	if b := n.l.bind; b != nil {
		n.l.bind = nil
		if err := n.l.store.Update(b); err != nil {
			return nil, err
		}
		n.l.s.assumed.Delete(b.UID)
	}
	return pods, err
}

// A gang member bound while its reservation's consumed slots are counted is counted
// once, whichever side of the count the binding lands on.
func TestConsumedOnCountsAMemberBoundDuringTheCount(t *testing.T) {
	now := time.Now()
	idx := buildIndex([]v1alpha1.ResourceReservation{
		rr("gang", v1alpha1.ReservationOwnerPodGroup, "train", "", v1alpha1.ReservationReserved, now),
	}, now, nil)
	r := idx.byOwner[ownerOf(v1alpha1.ReservationOwnerPodGroup, "ns", "train")][0]

	store := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	bound := testutil.MakePod("train-0", "ns").UID("train-0").PodGroup("train").Node("n1").Obj()
	pending := testutil.MakePod("train-1", "ns").UID("train-1").PodGroup("train").Obj()
	binding := testutil.MakePod("train-1", "ns").UID("train-1").PodGroup("train").Node("n2").Obj()
	for _, p := range []*corev1.Pod{bound, pending} {
		if err := store.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	s := &Shared{}
	s.pods = &bindingLister{PodLister: corelisters.NewPodLister(store), store: store, s: s, bind: binding}
	s.assume(pending, "n2")

	if got := s.consumedOn(r, "", r.slots, false); got != 2 {
		t.Errorf("consumed %d slot(s), want 2: train-0 is bound, train-1 was assumed and bound during the count", got)
	}
	if got := s.consumedOn(r, "", r.slots, false); got != 2 {
		t.Errorf("counted again after the binding: %d slot(s), want 2", got)
	}
}
