package resourcereservation

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
)

func TestDecide(t *testing.T) {
	created := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	rr := func(phase v1alpha1.ReservationPhase, ownerUID string) *v1alpha1.ResourceReservation {
		return &v1alpha1.ResourceReservation{
			ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)},
			Spec: v1alpha1.ResourceReservationSpec{
				Owner:      v1alpha1.ReservationOwner{Kind: v1alpha1.ReservationOwnerPodGroup, Name: "train", UID: ownerUID},
				TTLSeconds: 60,
			},
			Status: v1alpha1.ResourceReservationStatus{Phase: phase},
		}
	}
	// seen is a reservation that has recorded its owner's UID in status.ownerUID.
	seen := func(rr *v1alpha1.ResourceReservation, uid string) *v1alpha1.ResourceReservation {
		rr.Status.OwnerUID = uid
		return rr
	}
	alive := Owner{Exists: true, UID: "u1"}
	type result struct {
		Phase    v1alpha1.ReservationPhase
		Reason   string
		Recheck  time.Duration
		OwnerUID string
	}
	cases := []struct {
		name  string
		rr    *v1alpha1.ResourceReservation
		owner Owner
		at    time.Duration // after creation
		want  result
	}{
		{"new reservation holds until its TTL and records its owner", rr("", ""), alive, 10 * time.Second,
			result{v1alpha1.ReservationPending, ReasonHolding, 50 * time.Second, "u1"}},
		{"reserved keeps its phase", rr(v1alpha1.ReservationReserved, ""), alive, 0,
			result{v1alpha1.ReservationReserved, ReasonHolding, time.Minute, "u1"}},
		{"TTL reached exactly", seen(rr(v1alpha1.ReservationReserved, ""), "u1"), alive, time.Minute,
			result{v1alpha1.ReservationExpired, ReasonTTLExpired, 0, "u1"}},
		{"consumed does not expire", seen(rr(v1alpha1.ReservationConsumed, ""), "u1"), alive, time.Hour,
			result{v1alpha1.ReservationConsumed, ReasonHolding, 0, "u1"}},

		// An owner that has not appeared yet is waited for, until the TTL.
		{"owner not seen yet is waited for", rr("", ""), Owner{}, 2 * time.Second,
			result{v1alpha1.ReservationPending, ReasonWaitingForOwner, 58 * time.Second, ""}},
		{"owner with spec uid not seen yet is waited for", rr("", "u1"), Owner{}, 2 * time.Second,
			result{v1alpha1.ReservationPending, ReasonWaitingForOwner, 58 * time.Second, ""}},
		{"owner not seen yet and TTL passed", rr(v1alpha1.ReservationPending, ""), Owner{}, time.Minute,
			result{v1alpha1.ReservationExpired, ReasonTTLExpired, 0, ""}},
		{"owner appears after the reservation: first seen records its uid", rr(v1alpha1.ReservationPending, ""), alive, 2 * time.Second,
			result{v1alpha1.ReservationPending, ReasonHolding, 58 * time.Second, "u1"}},

		// Released once an owner that was seen is gone, replaced or finished.
		{"seen owner deleted", seen(rr(v1alpha1.ReservationPending, ""), "u1"), Owner{}, time.Second,
			result{v1alpha1.ReservationReleased, ReasonOwnerDeleted, 0, "u1"}},
		{"seen owner deleted after the TTL", seen(rr(v1alpha1.ReservationPending, ""), "u1"), Owner{}, time.Hour,
			result{v1alpha1.ReservationReleased, ReasonOwnerDeleted, 0, "u1"}},
		{"consumed reservation's owner deleted", rr(v1alpha1.ReservationConsumed, ""), Owner{}, time.Second,
			result{v1alpha1.ReservationReleased, ReasonOwnerDeleted, 0, ""}},
		{"seen with uid u0, now u1", seen(rr(v1alpha1.ReservationPending, ""), "u0"), alive, time.Second,
			result{v1alpha1.ReservationReleased, ReasonOwnerReplaced, 0, "u0"}},
		{"owner recreated under the same name (spec uid)", rr(v1alpha1.ReservationReserved, "u0"), alive, time.Second,
			result{v1alpha1.ReservationReleased, ReasonOwnerReplaced, 0, ""}},
		{"same owner incarnation", rr(v1alpha1.ReservationReserved, "u1"), alive, time.Second,
			result{v1alpha1.ReservationReserved, ReasonHolding, 59 * time.Second, "u1"}},
		{"owner finished", rr(v1alpha1.ReservationReserved, ""), Owner{Exists: true, UID: "u1", Finished: true}, time.Second,
			result{v1alpha1.ReservationReleased, ReasonOwnerFinished, 0, "u1"}},
		{"expired stays expired when the owner goes", seen(rr(v1alpha1.ReservationExpired, ""), "u1"), Owner{}, time.Hour,
			result{v1alpha1.ReservationExpired, string(v1alpha1.ReservationExpired), 0, "u1"}},
		{"released stays released when the owner comes back", rr(v1alpha1.ReservationReleased, ""), alive, time.Second,
			result{v1alpha1.ReservationReleased, string(v1alpha1.ReservationReleased), 0, ""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.rr, tc.owner, created.Add(tc.at))
			got := result{d.Phase, d.Held.Reason, d.Recheck, d.OwnerUID}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
			if !d.Expire.Equal(created.Add(time.Minute)) {
				t.Errorf("expire %s", d.Expire)
			}
		})
	}
}

// TestDecideWaitingForOwner checks the whole decision for a reservation whose owner
// does not exist yet: it names the owner and says until when it is held.
func TestDecideWaitingForOwner(t *testing.T) {
	created := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	rr := &v1alpha1.ResourceReservation{
		ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)},
		Spec: v1alpha1.ResourceReservationSpec{
			Owner:      v1alpha1.ReservationOwner{Kind: v1alpha1.ReservationOwnerPod, Name: "spark-driver"},
			TTLSeconds: 60,
		},
	}
	want := Decision{
		Phase:  v1alpha1.ReservationPending,
		Expire: created.Add(time.Minute),
		Held: metav1.Condition{Type: ConditionHeld, Status: metav1.ConditionTrue, Reason: ReasonWaitingForOwner,
			Message: "Pod spark-driver does not exist yet; held for it until 2026-01-01T12:01:00Z."},
		Recheck: 58 * time.Second,
	}
	if diff := cmp.Diff(want, Decide(rr, Owner{}, created.Add(2*time.Second))); diff != "" {
		t.Errorf("Decide (-want +got):\n%s", diff)
	}
}
