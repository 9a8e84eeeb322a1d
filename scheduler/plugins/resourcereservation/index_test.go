package resourcereservation

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"

	testutil "github.com/kube-nexus/kubenexus/test/util"
)

func rr(name string, kind v1alpha1.ReservationOwnerKind, owner, node string, phase v1alpha1.ReservationPhase, created time.Time) v1alpha1.ResourceReservation {
	return v1alpha1.ResourceReservation{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.NewTime(created)},
		Spec: v1alpha1.ResourceReservationSpec{
			Owner:      v1alpha1.ReservationOwner{Kind: kind, Name: owner},
			NodeName:   node,
			Resources:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			Slots:      2,
			TTLSeconds: 60,
		},
		Status: v1alpha1.ResourceReservationStatus{Phase: phase},
	}
}

func TestIndexHoldsUntilExpiryUnlessConsumed(t *testing.T) {
	now := time.Now()
	idx := buildIndex([]v1alpha1.ResourceReservation{
		rr("fresh", v1alpha1.ReservationOwnerPodGroup, "g", "n1", v1alpha1.ReservationReserved, now.Add(-30*time.Second)),
		rr("stale", v1alpha1.ReservationOwnerPodGroup, "g", "n1", v1alpha1.ReservationReserved, now.Add(-61*time.Second)),
		rr("consumed", v1alpha1.ReservationOwnerPodGroup, "g", "n2", v1alpha1.ReservationConsumed, now.Add(-time.Hour)),
		rr("released", v1alpha1.ReservationOwnerPodGroup, "g", "n2", v1alpha1.ReservationReleased, now),
		rr("unplaced", v1alpha1.ReservationOwnerPodGroup, "g", "", v1alpha1.ReservationPending, now),
	}, now, nil)
	names := func(rs []*reservation) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.key.Name)
		}
		return out
	}
	if got := names(idx.byNode["n1"]); len(got) != 1 || got[0] != "fresh" {
		t.Errorf("n1 holds %v, want [fresh] (stale is past its TTL)", got)
	}
	if got := names(idx.byNode["n2"]); len(got) != 1 || got[0] != "consumed" {
		t.Errorf("n2 holds %v, want [consumed] (a consumed reservation does not expire; a released one holds nothing)", got)
	}
	if want := now.Add(30 * time.Second); !idx.nextExpiry.Equal(want) {
		t.Errorf("next expiry %v, want about %v", idx.nextExpiry, want)
	}
	if r := idx.all[types.NamespacedName{Namespace: "ns", Name: "fresh"}]; r.holds(now.Add(31 * time.Second)) {
		t.Error("fresh still holds after its expiry")
	}
}

func TestConsumedBy(t *testing.T) {
	now := time.Now()
	idx := buildIndex([]v1alpha1.ResourceReservation{
		rr("gang", v1alpha1.ReservationOwnerPodGroup, "train", "n1", v1alpha1.ReservationReserved, now),
		rr("driver", v1alpha1.ReservationOwnerPod, "spark-driver", "n1", v1alpha1.ReservationReserved, now),
	}, now, nil)
	pod := func(name, ns string, labels map[string]string, owner string) *corev1.Pod {
		w := testutil.MakePod(name, ns).UID(name)
		for k, v := range labels {
			w = w.Label(k, v)
		}
		if owner != "" {
			w = w.OwnerUID("v1", "Pod", owner, "driver-uid")
		}
		return w.Obj()
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want []string
	}{
		{"gang member", pod("train-0", "ns", map[string]string{v1alpha1.LabelPodGroup: "train"}, ""), []string{"gang"}},
		{"member of another gang", pod("eval-0", "ns", map[string]string{v1alpha1.LabelPodGroup: "eval"}, ""), nil},
		{"same gang name, other namespace", pod("train-0", "other", map[string]string{v1alpha1.LabelPodGroup: "train"}, ""), nil},
		{"the driver itself", pod("spark-driver", "ns", nil, ""), []string{"driver"}},
		{"an executor the driver owns", pod("exec-1", "ns", nil, "spark-driver"), []string{"driver"}},
		{"a plain pod", pod("web", "ns", nil, ""), nil},
		{"malformed gang label", pod("x", "ns", map[string]string{v1alpha1.LabelPodGroup: "Not_A_Name"}, ""), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, r := range idx.mine(tc.pod, now) {
				got = append(got, r.key.Name)
			}
			if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
				t.Errorf("consumes %v, want %v", got, tc.want)
			}
		})
	}

	// Bound to an incarnation: an executor of a recreated driver does not consume.
	bound := rr("bound", v1alpha1.ReservationOwnerPod, "spark-driver", "n1", v1alpha1.ReservationReserved, now)
	bound.Status.OwnerUID = "old-uid"
	r := newReservation(&bound)
	if r.consumedBy(pod("exec-1", "ns", nil, "spark-driver")) {
		t.Error("an executor of another driver incarnation consumes the reservation")
	}
}
