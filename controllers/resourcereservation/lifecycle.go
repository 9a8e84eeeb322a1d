// Package resourcereservation ends ResourceReservations: at their TTL, and as soon
// as their owner is deleted, replaced or finished, so that no capacity stays held
// for nobody. Placing and consuming reservations is the scheduler's part.
package resourcereservation

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// ConditionHeld says whether a reservation still holds capacity.
const ConditionHeld = "Held"

// Reasons of the Held condition.
const (
	ReasonHolding       = "Holding"
	ReasonTTLExpired    = "TTLExpired"
	ReasonOwnerDeleted  = "OwnerDeleted"
	ReasonOwnerReplaced = "OwnerReplaced"
	ReasonOwnerFinished = "OwnerFinished"
)

// defaultTTL applies when ttlSeconds is unset (an object that skipped API defaulting).
const defaultTTL = 600 * time.Second

// Owner is what the controller knows about a reservation's owner.
type Owner struct {
	// Exists is false when no object of that kind and name is in the namespace.
	Exists bool
	UID    string
	// Finished: a pod that Succeeded or Failed, a PodGroup that Succeeded or Failed.
	Finished bool
}

// Decision is a reservation's next status and when to look at it again.
type Decision struct {
	Phase   v1alpha1.ReservationPhase
	Expire  time.Time
	Held    metav1.Condition
	Recheck time.Duration // 0: terminal, nothing left to do
}

// Decide computes a reservation's lifecycle from its owner and the time. Expired and
// Released are terminal. A consumed reservation does not expire: its owner's pods
// are running on the capacity; it is released when the owner goes.
func Decide(rr *v1alpha1.ResourceReservation, owner Owner, now time.Time) Decision {
	ttl := time.Duration(rr.Spec.TTLSeconds) * time.Second
	if ttl <= 0 {
		ttl = defaultTTL
	}
	expire := rr.CreationTimestamp.Add(ttl)
	d := Decision{Phase: rr.Status.Phase, Expire: expire}
	if d.Phase == v1alpha1.ReservationExpired || d.Phase == v1alpha1.ReservationReleased {
		if c := meta.FindStatusCondition(rr.Status.Conditions, ConditionHeld); c != nil {
			d.Held = *c
		} else {
			d.Held = release(string(d.Phase), "The capacity is released.")
		}
		return d
	}
	o := rr.Spec.Owner
	switch {
	case !owner.Exists:
		d.Phase, d.Held = v1alpha1.ReservationReleased, release(ReasonOwnerDeleted, fmt.Sprintf("%s %s was deleted; the capacity is released.", o.Kind, o.Name))
	case o.UID != "" && owner.UID != o.UID:
		d.Phase, d.Held = v1alpha1.ReservationReleased, release(ReasonOwnerReplaced, fmt.Sprintf("%s %s was recreated (uid %s, reserved for %s); the capacity is released.", o.Kind, o.Name, owner.UID, o.UID))
	case owner.Finished:
		d.Phase, d.Held = v1alpha1.ReservationReleased, release(ReasonOwnerFinished, fmt.Sprintf("%s %s has finished; the capacity is released.", o.Kind, o.Name))
	case d.Phase != v1alpha1.ReservationConsumed && !now.Before(expire):
		d.Phase, d.Held = v1alpha1.ReservationExpired, release(ReasonTTLExpired, fmt.Sprintf("Not consumed within ttlSeconds=%d; the capacity is released.", int64(ttl/time.Second)))
	default:
		if d.Phase == "" {
			d.Phase = v1alpha1.ReservationPending
		}
		d.Held = metav1.Condition{Type: ConditionHeld, Status: metav1.ConditionTrue, Reason: ReasonHolding,
			Message: fmt.Sprintf("Held for %s %s until %s.", o.Kind, o.Name, expire.UTC().Format(time.RFC3339))}
		d.Recheck = expire.Sub(now)
		if d.Phase == v1alpha1.ReservationConsumed {
			d.Held.Message = fmt.Sprintf("Consumed by %s %s; held until it finishes.", o.Kind, o.Name)
			d.Recheck = 0
		}
	}
	return d
}

func release(reason, msg string) metav1.Condition {
	return metav1.Condition{Type: ConditionHeld, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
}
