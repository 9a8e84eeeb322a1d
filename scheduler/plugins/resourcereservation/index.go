package resourcereservation

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-nexus/kubenexus/api/gang"
	reservationapi "github.com/kube-nexus/kubenexus/api/reservation"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// ownerID names a reservation owner: "<kind>/<namespace>/<name>".
type ownerID string

func ownerOf(kind v1alpha1.ReservationOwnerKind, namespace, name string) ownerID {
	return ownerID(string(kind) + "/" + namespace + "/" + name)
}

// reservation is one ResourceReservation as the plugin holds it.
type reservation struct {
	key   types.NamespacedName
	owner ownerID
	// kind and name of the owner, for messages and the consumer test.
	ownerKind v1alpha1.ReservationOwnerKind
	ownerName string
	// ownerUID binds the reservation to one incarnation of the owner (spec.owner.uid,
	// else status.ownerUID); empty until the owner has been seen.
	ownerUID string
	// node holds the capacity: spec.nodeName, else the node the scheduler placed it
	// on (status.nodeName); empty while unplaced.
	node string
	// slot is one slot's resources in milli-units; slots how many are held.
	slot  map[corev1.ResourceName]int64
	slots int
	// expire is when an unconsumed reservation stops holding (zero: it does not).
	expire time.Time
	phase  v1alpha1.ReservationPhase
	// consumed and placedStatus mirror the status, so that the status writer knows
	// what to change.
	consumed int32
	status   string // status.nodeName
	// accumulate: the reservation holds free room for its PodGroup's missing members
	// on any node, as it frees (LabelReservationAccumulate), rather than on one node.
	accumulate bool
	// repair: the manager's reservation of a repairing gang (LabelReservationRepair).
	repair bool
	// selector keeps an unpinned reservation to the nodes with these labels
	// (spec.nodeSelector; nil: any node).
	selector labels.Selector
	// refused says why the HardwareTier of its node keeps the namespace's tenant
	// from holding capacity there ("": it does not): it then holds nothing.
	refused string
	// placedReason is the reason of its Placed condition, as last written.
	placedReason string
}

func newReservation(rr *v1alpha1.ResourceReservation) *reservation {
	r := &reservation{
		key:        types.NamespacedName{Namespace: rr.Namespace, Name: rr.Name},
		owner:      ownerOf(rr.Spec.Owner.Kind, rr.Namespace, rr.Spec.Owner.Name),
		ownerKind:  rr.Spec.Owner.Kind,
		ownerName:  rr.Spec.Owner.Name,
		ownerUID:   rr.Spec.Owner.UID,
		node:       rr.Spec.NodeName,
		slot:       map[corev1.ResourceName]int64{},
		slots:      int(rr.Spec.Slots),
		phase:      rr.Status.Phase,
		consumed:   rr.Status.ConsumedSlots,
		status:     rr.Status.NodeName,
		accumulate: rr.Labels[v1alpha1.LabelReservationAccumulate] == "true" && rr.Spec.Owner.Kind == v1alpha1.ReservationOwnerPodGroup && rr.Spec.NodeName == "",
	}
	if r.ownerUID == "" {
		r.ownerUID = rr.Status.OwnerUID
	}
	r.repair = r.accumulate && rr.Labels[v1alpha1.LabelReservationRepair] == "true"
	if len(rr.Spec.NodeSelector) > 0 {
		r.selector = labels.SelectorFromValidatedSet(rr.Spec.NodeSelector)
	}
	if c := meta.FindStatusCondition(rr.Status.Conditions, ConditionPlaced); c != nil {
		r.placedReason = c.Reason
	}
	if r.node == "" && !r.accumulate {
		r.node = rr.Status.NodeName
	}
	if r.slots < 1 {
		r.slots = 1
	}
	for name, q := range rr.Spec.Resources {
		if v := q.MilliValue(); v > 0 {
			r.slot[name] = v
		}
	}
	if r.phase != v1alpha1.ReservationConsumed {
		r.expire = reservationapi.Expiry(rr)
	}
	return r
}

// terminal: the reservation no longer holds anything, whatever the time.
func (r *reservation) terminal() bool {
	return r.phase == v1alpha1.ReservationExpired || r.phase == v1alpha1.ReservationReleased
}

// holds reports whether the reservation holds capacity at now: not ended, not
// refused by its node's HardwareTier, and not past its expiry unless consumed. The
// scheduler does not wait for the manager to write Expired: the capacity is free at
// the expiry instant.
func (r *reservation) holds(now time.Time) bool {
	return !r.terminal() && r.refused == "" && (r.expire.IsZero() || now.Before(r.expire))
}

// consumedBy reports whether pod is one of the owner's pods (reservation.Owner).
func (r *reservation) consumedBy(pod *corev1.Pod) bool {
	return reservationapi.Owner{Namespace: r.key.Namespace, Kind: r.ownerKind, Name: r.ownerName, UID: r.ownerUID}.ConsumedBy(pod)
}

// ownersOf lists the owners a pod may consume reservations of.
func ownersOf(pod *corev1.Pod) []ownerID {
	out := []ownerID{ownerOf(v1alpha1.ReservationOwnerPod, pod.Namespace, pod.Name)}
	for _, ref := range pod.OwnerReferences {
		if ref.Kind == "Pod" && ref.APIVersion == "v1" {
			out = append(out, ownerOf(v1alpha1.ReservationOwnerPod, pod.Namespace, ref.Name))
		}
	}
	if m, ok, err := gang.Of(pod); err == nil && ok {
		out = append(out, ownerOf(v1alpha1.ReservationOwnerPodGroup, pod.Namespace, m.Key.Name))
	}
	return out
}

// index is an immutable view of every reservation, rebuilt on each change.
type index struct {
	byNode map[string][]*reservation
	// accumulating hold room on any node (see reservation.accumulate).
	accumulating []*reservation
	byOwner      map[ownerID][]*reservation
	all          map[types.NamespacedName]*reservation
	// nextExpiry is the earliest expiry of a reservation that holds capacity now
	// (zero: none), when queued pods must be retried.
	nextExpiry time.Time
}

// buildIndex indexes the reservations that hold capacity at now. refuse (nil:
// nothing is refused) says why a reservation's node refuses it (tierGate).
func buildIndex(rrs []v1alpha1.ResourceReservation, now time.Time, refuse func(*reservation) string) *index {
	idx := &index{byNode: map[string][]*reservation{}, byOwner: map[ownerID][]*reservation{}, all: map[types.NamespacedName]*reservation{}}
	for i := range rrs {
		if !rrs[i].DeletionTimestamp.IsZero() {
			continue
		}
		r := newReservation(&rrs[i])
		if refuse != nil && r.node != "" && !r.accumulate {
			r.refused = refuse(r)
		}
		idx.all[r.key] = r
		if !r.holds(now) {
			continue
		}
		idx.byOwner[r.owner] = append(idx.byOwner[r.owner], r)
		switch {
		case r.accumulate:
			idx.accumulating = append(idx.accumulating, r)
		case r.node != "":
			idx.byNode[r.node] = append(idx.byNode[r.node], r)
		}
		if !r.expire.IsZero() && (idx.nextExpiry.IsZero() || r.expire.Before(idx.nextExpiry)) {
			idx.nextExpiry = r.expire
		}
	}
	return idx
}

// mine returns the reservations, held now, that pod may consume.
func (idx *index) mine(pod *corev1.Pod, now time.Time) []*reservation {
	var out []*reservation
	for _, o := range ownersOf(pod) {
		for _, r := range idx.byOwner[o] {
			if r.holds(now) && r.consumedBy(pod) {
				out = append(out, r)
			}
		}
	}
	return out
}

// podsConsuming counts the pods on a node that consume r, at most r.slots.
func podsConsuming(r *reservation, pods []*corev1.Pod) int {
	n := 0
	for _, p := range pods {
		if r.consumedBy(p) {
			n++
			if n == r.slots {
				break
			}
		}
	}
	return n
}

// selects reports whether the reservation may hold room on node: its
// spec.nodeSelector matches the node's labels (a reservation without one may hold
// room on any node).
func (r *reservation) selects(node *corev1.Node) bool {
	return r.selector == nil || r.selector.Matches(labels.Set(node.Labels))
}
