package resourcereservation

import (
	"testing"
	"time"

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
	alive := Owner{Exists: true, UID: "u1"}
	cases := []struct {
		name        string
		rr          *v1alpha1.ResourceReservation
		owner       Owner
		at          time.Duration // after creation
		wantPhase   v1alpha1.ReservationPhase
		wantReason  string
		wantRecheck time.Duration
	}{
		{"new reservation holds until its TTL", rr("", ""), alive, 10 * time.Second, v1alpha1.ReservationPending, ReasonHolding, 50 * time.Second},
		{"reserved keeps its phase", rr(v1alpha1.ReservationReserved, ""), alive, 0, v1alpha1.ReservationReserved, ReasonHolding, time.Minute},
		{"TTL reached exactly", rr(v1alpha1.ReservationReserved, ""), alive, time.Minute, v1alpha1.ReservationExpired, ReasonTTLExpired, 0},
		{"consumed does not expire", rr(v1alpha1.ReservationConsumed, ""), alive, time.Hour, v1alpha1.ReservationConsumed, ReasonHolding, 0},
		{"owner deleted", rr(v1alpha1.ReservationConsumed, ""), Owner{}, time.Second, v1alpha1.ReservationReleased, ReasonOwnerDeleted, 0},
		{"owner recreated under the same name", rr(v1alpha1.ReservationReserved, "u0"), alive, time.Second, v1alpha1.ReservationReleased, ReasonOwnerReplaced, 0},
		{"same owner incarnation", rr(v1alpha1.ReservationReserved, "u1"), alive, time.Second, v1alpha1.ReservationReserved, ReasonHolding, 59 * time.Second},
		{"owner finished", rr(v1alpha1.ReservationReserved, ""), Owner{Exists: true, Finished: true}, time.Second, v1alpha1.ReservationReleased, ReasonOwnerFinished, 0},
		{"expired stays expired when the owner goes", rr(v1alpha1.ReservationExpired, ""), Owner{}, time.Hour, v1alpha1.ReservationExpired, string(v1alpha1.ReservationExpired), 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.rr, tc.owner, created.Add(tc.at))
			if d.Phase != tc.wantPhase || d.Held.Reason != tc.wantReason || d.Recheck != tc.wantRecheck {
				t.Errorf("got %s/%s recheck %s, want %s/%s recheck %s", d.Phase, d.Held.Reason, d.Recheck, tc.wantPhase, tc.wantReason, tc.wantRecheck)
			}
			if !d.Expire.Equal(created.Add(time.Minute)) {
				t.Errorf("expire %s", d.Expire)
			}
		})
	}
}
