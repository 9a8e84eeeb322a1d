// Package resourcereservation ends ResourceReservations: at their TTL, and as soon
// as their owner is deleted, replaced or finished, so that no capacity stays held
// for nobody. A reservation may be created before its owner: it is held for the
// owner until the TTL. Placing and consuming reservations is the scheduler's part.
package resourcereservation

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	reservationapi "github.com/kube-nexus/kubenexus/api/reservation"
	"github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// ConditionHeld says whether a reservation still holds capacity.
const ConditionHeld = "Held"

// Reasons of the Held condition.
const (
	ReasonHolding = "Holding"
	// ReasonWaitingForOwner: the owner does not exist yet; the capacity is held for
	// it until the TTL.
	ReasonWaitingForOwner = "WaitingForOwner"
	ReasonTTLExpired      = "TTLExpired"
	ReasonOwnerDeleted    = "OwnerDeleted"
	ReasonOwnerReplaced   = "OwnerReplaced"
	ReasonOwnerFinished   = "OwnerFinished"
)

// Owner is what the controller knows about a reservation's owner.
type Owner struct {
	// Exists is false when no object of that kind and name is in the namespace, or
	// when it is being deleted: a reservation created while an old incarnation
	// terminates waits for the next one rather than binding to the dying one.
	Exists bool
	UID    string
	// Finished: a pod that Succeeded or Failed, a PodGroup that Succeeded or Failed.
	Finished bool
}

// Decision is a reservation's next status and when to look at it again.
type Decision struct {
	Phase  v1alpha1.ReservationPhase
	Expire time.Time
	Held   metav1.Condition
	// OwnerUID is status.ownerUID: the UID of the owner incarnation the reservation
	// is bound to, empty until the owner has been seen.
	OwnerUID string
	Recheck  time.Duration // 0: terminal, nothing left to do
}

// Decide computes a reservation's lifecycle from its owner and the time. Expired and
// Released are terminal. A consumed reservation does not expire: its owner's pods
// are running on the capacity; it is released when the owner goes.
//
// A missing owner is a deleted owner only once it has been seen (status.ownerUID is
// set, or the reservation was consumed, which only the owner's pods do): a
// reservation may be created before its owner, and is then held for it until the
// TTL. An owner whose UID differs from the one seen, or from spec.owner.uid, is a
// replacement and does not inherit the reservation.
func Decide(rr *v1alpha1.ResourceReservation, owner Owner, now time.Time) Decision {
	expire := reservationapi.Expiry(rr)
	ttl := expire.Sub(rr.CreationTimestamp.Time)
	d := Decision{Phase: rr.Status.Phase, Expire: expire, OwnerUID: rr.Status.OwnerUID}
	if d.Phase == v1alpha1.ReservationExpired || d.Phase == v1alpha1.ReservationReleased {
		if c := meta.FindStatusCondition(rr.Status.Conditions, ConditionHeld); c != nil {
			d.Held = *c
		} else {
			d.Held = release(string(d.Phase), "The capacity is released.")
		}
		return d
	}
	o := rr.Spec.Owner
	seen := rr.Status.OwnerUID != "" || d.Phase == v1alpha1.ReservationConsumed
	bound := rr.Status.OwnerUID
	if bound == "" {
		bound = o.UID
	}
	replaced := owner.Exists && bound != "" && owner.UID != bound
	expired := d.Phase != v1alpha1.ReservationConsumed && !now.Before(expire)
	switch {
	case !owner.Exists && seen:
		d.Phase, d.Held = v1alpha1.ReservationReleased, release(ReasonOwnerDeleted, fmt.Sprintf("%s %s was deleted; the capacity is released.", o.Kind, o.Name))
	case replaced:
		d.Phase, d.Held = v1alpha1.ReservationReleased, release(ReasonOwnerReplaced, fmt.Sprintf("%s %s was recreated (uid %s, reserved for %s); the capacity is released.", o.Kind, o.Name, owner.UID, bound))
	case owner.Exists && owner.Finished:
		d.Phase, d.Held = v1alpha1.ReservationReleased, release(ReasonOwnerFinished, fmt.Sprintf("%s %s has finished; the capacity is released.", o.Kind, o.Name))
	case expired:
		d.Phase, d.Held = v1alpha1.ReservationExpired, release(ReasonTTLExpired, fmt.Sprintf("Not consumed within ttlSeconds=%d; the capacity is released.", int64(ttl/time.Second)))
	default:
		if d.Phase == "" {
			d.Phase = v1alpha1.ReservationPending
		}
		d.Held = metav1.Condition{Type: ConditionHeld, Status: metav1.ConditionTrue, Reason: ReasonHolding,
			Message: fmt.Sprintf("Held for %s %s until %s.", o.Kind, o.Name, expire.UTC().Format(time.RFC3339))}
		d.Recheck = expire.Sub(now)
		switch {
		case !owner.Exists:
			d.Held.Reason = ReasonWaitingForOwner
			d.Held.Message = fmt.Sprintf("%s %s does not exist yet; held for it until %s.", o.Kind, o.Name, expire.UTC().Format(time.RFC3339))
		case d.Phase == v1alpha1.ReservationConsumed:
			d.Held.Message = fmt.Sprintf("Consumed by %s %s; held until it finishes.", o.Kind, o.Name)
			d.Recheck = 0
		}
	}
	// The first live incarnation that is not a replacement binds the reservation,
	// whatever the decision: a released reservation still says whose it was.
	if d.OwnerUID == "" && owner.Exists && !replaced {
		d.OwnerUID = owner.UID
	}
	return d
}

func release(reason, msg string) metav1.Condition {
	return metav1.Condition{Type: ConditionHeld, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
}
