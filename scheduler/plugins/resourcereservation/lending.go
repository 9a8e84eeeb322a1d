package resourcereservation

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/nodefree"
)

// Lending: which pods borrow room reservations hold (Backfill), for whom it is
// reclaimed, and what each reservation has lent.

type borrower struct {
	key  types.NamespacedName
	node string
	req  map[corev1.ResourceName]int64
}

func (s *Shared) borrow(pod *corev1.Pod, key types.NamespacedName, node string, req map[corev1.ResourceName]int64) {
	s.borrowers.Store(pod.UID, borrower{key: key, node: node, req: req})
}

func (s *Shared) unborrow(pod *corev1.Pod) { s.borrowers.Delete(pod.UID) }

func (s *Shared) borrows(uid types.UID) bool {
	_, ok := s.borrowers.Load(uid)
	return ok
}

// borrowed sums the room lent per reservation and node.
func (s *Shared) borrowed() map[types.NamespacedName]nodefree.Tally[string] {
	out := map[types.NamespacedName]nodefree.Tally[string]{}
	s.borrowers.Range(func(_, v any) bool {
		b := v.(borrower)
		if out[b.key] == nil {
			out[b.key] = nodefree.Tally[string]{}
		}
		out[b.key].Add(b.node, b.req, 1)
		return true
	})
	return out
}

// Lend lets preemptible pods use capacity reservations hold and their owners have
// not consumed yet (Backfill).
func (s *Shared) Lend() { s.lending.Store(true) }

// LendBounded lends room accumulating for a waiting gang to pods whose runtime is
// bounded and that end, margin before, the gang can start (Backfill).
func (s *Shared) LendBounded(margin time.Duration) {
	s.marginNanos.Store(int64(margin))
	s.bounded.Store(true)
}

func (s *Shared) lendsBounded() bool { return s.bounded.Load() }

func (s *Shared) margin() time.Duration { return time.Duration(s.marginNanos.Load()) }

// Lends reports whether reserved capacity is lent to pod.
func (s *Shared) Lends(pod *corev1.Pod) bool {
	return s.lending.Load() && pod.Labels[v1alpha1.LabelPreemptible] == "true"
}

// Borrows reports whether a bound pod runs on room lent to it: it is preemptible,
// lending is on, and it consumes no reservation on its node.
func (s *Shared) Borrows(pod *corev1.Pod) bool {
	if !s.Lends(pod) {
		return false
	}
	for _, r := range s.index().byNode[pod.Spec.NodeName] {
		if r.consumedBy(pod) {
			return false
		}
	}
	return true
}

// NodesFor returns the nodes where reservations pod may consume hold capacity now:
// where GangPreemption may take back what was lent.
func (s *Shared) NodesFor(pod *corev1.Pod) map[string]bool {
	idx := s.index()
	if len(idx.byNode) == 0 {
		return nil
	}
	out := map[string]bool{}
	for _, r := range idx.mine(pod, time.Now()) {
		if r.node != "" {
			out[r.node] = true
		}
	}
	return out
}
