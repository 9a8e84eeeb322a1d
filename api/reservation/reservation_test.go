package reservation

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	testutil "github.com/kube-nexus/kubenexus/test/util"
)

func TestCharge(t *testing.T) {
	gpuSlot := testutil.ResourceList("cpu", "4", "nvidia.com/gpu", "8")
	pending := func(name, group string) *corev1.Pod {
		return testutil.MakePod(name, "ns").PodGroup(group).Req("cpu", "4", "nvidia.com/gpu", "8").Obj()
	}
	tests := map[string]struct {
		rr   *v1alpha1.ResourceReservation
		pods []*corev1.Pod
		want corev1.ResourceList
	}{
		"new: every slot": {
			rr:   testutil.MakeReservation("r", "ns", "train").Resources(gpuSlot).Slots(4).Obj(),
			want: testutil.ResourceList("cpu", "16", "nvidia.com/gpu", "32"),
		},
		"its owner's pending pods are in the quota already": {
			rr:   testutil.MakeReservation("r", "ns", "train").Resources(gpuSlot).Slots(4).Obj(),
			pods: []*corev1.Pod{pending("train-0", "train"), pending("train-1", "train"), pending("other-0", "other")},
			want: testutil.ResourceList("cpu", "8", "nvidia.com/gpu", "16"),
		},
		"bound and finished pods of its owner do not reduce it": {
			rr: testutil.MakeReservation("r", "ns", "train").Resources(gpuSlot).Slots(2).Obj(),
			pods: []*corev1.Pod{
				testutil.MakePod("train-0", "ns").PodGroup("train").Req("cpu", "4", "nvidia.com/gpu", "8").Node("n1").Obj(),
				testutil.MakePod("train-1", "ns").PodGroup("train").Req("cpu", "4", "nvidia.com/gpu", "8").Phase(corev1.PodFailed).Obj(),
			},
			want: testutil.ResourceList("cpu", "8", "nvidia.com/gpu", "16"),
		},
		"never below zero": {
			rr:   testutil.MakeReservation("r", "ns", "train").Resources(gpuSlot).Slots(1).Obj(),
			pods: []*corev1.Pod{pending("train-0", "train"), pending("train-1", "train")},
			want: testutil.ResourceList("cpu", "0", "nvidia.com/gpu", "0"),
		},
	}
	consumed := testutil.MakeReservation("r", "ns", "train").Resources(gpuSlot).Slots(4).Obj()
	consumed.Status = v1alpha1.ResourceReservationStatus{Phase: v1alpha1.ReservationReserved, ConsumedSlots: 3}
	tests["consumed slots are the bound pods' requests"] = struct {
		rr   *v1alpha1.ResourceReservation
		pods []*corev1.Pod
		want corev1.ResourceList
	}{rr: consumed, want: testutil.ResourceList("cpu", "4", "nvidia.com/gpu", "8")}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := Charge(tc.rr, tc.pods)
			if len(got) != len(tc.want) {
				t.Fatalf("Charge = %v, want %v", got, tc.want)
			}
			for r, q := range tc.want {
				if g := got[r]; g.Cmp(q) != 0 {
					t.Errorf("Charge[%s] = %s, want %s", r, g.String(), q.String())
				}
			}
		})
	}
}

func TestOverQuota(t *testing.T) {
	quota := func(hard, used corev1.ResourceList) *corev1.ResourceQuota {
		return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "team", Namespace: "ns"},
			Spec: corev1.ResourceQuotaSpec{Hard: hard}, Status: corev1.ResourceQuotaStatus{Hard: hard, Used: used}}
	}
	gpus := func(n string) corev1.ResourceList { return testutil.ResourceList("nvidia.com/gpu", n) }
	tests := map[string]struct {
		quota             *corev1.ResourceQuota
		others, candidate corev1.ResourceList
		want              string
	}{
		"fits": {
			quota:     quota(corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("16")}, corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("8")}),
			candidate: gpus("8"),
		},
		"pods plus other reservations plus this one above the limit": {
			quota:     quota(corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("16")}, corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("8")}),
			others:    gpus("4"),
			candidate: gpus("8"),
			want:      "ResourceQuota team of namespace ns: requests.nvidia.com/gpu: 8 reserved here + 4 by its other reservations + 8 used by its pods = 20, above the hard limit 16",
		},
		"a bare cpu limit counts requests": {
			quota:     quota(corev1.ResourceList{"cpu": resource.MustParse("10")}, nil),
			candidate: testutil.ResourceList("cpu", "12"),
			want:      "ResourceQuota team of namespace ns: cpu: 12 reserved here + 0 by its other reservations + 0 used by its pods = 12, above the hard limit 10",
		},
		"a resource the quota does not limit": {
			quota:     quota(corev1.ResourceList{"requests.cpu": resource.MustParse("1")}, nil),
			candidate: gpus("64"),
		},
		"limits.* do not bound requests": {
			quota:     quota(corev1.ResourceList{"limits.nvidia.com/gpu": resource.MustParse("1")}, nil),
			candidate: gpus("8"),
		},
	}
	scoped := quota(corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("0")}, nil)
	scoped.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}
	tests["a scoped quota counts only pods of its scope"] = struct {
		quota             *corev1.ResourceQuota
		others, candidate corev1.ResourceList
		want              string
	}{quota: scoped, candidate: gpus("8")}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := OverQuota(tc.quota, tc.others, tc.candidate); got != tc.want {
				t.Errorf("OverQuota = %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestHolds(t *testing.T) {
	created := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	rr := func(phase v1alpha1.ReservationPhase) *v1alpha1.ResourceReservation {
		r := testutil.MakeReservation("r", "ns", "train").TTL(600).Obj()
		r.CreationTimestamp = metav1.NewTime(created)
		r.Status.Phase = phase
		return r
	}
	tests := map[string]struct {
		rr   *v1alpha1.ResourceReservation
		at   time.Time
		want bool
	}{
		"reserved, before its TTL": {rr(v1alpha1.ReservationReserved), created.Add(599 * time.Second), true},
		"reserved, at its TTL":     {rr(v1alpha1.ReservationReserved), created.Add(600 * time.Second), false},
		"pending, before its TTL":  {rr(v1alpha1.ReservationPending), created.Add(time.Second), true},
		"consumed, long after":     {rr(v1alpha1.ReservationConsumed), created.Add(time.Hour), true},
		"expired":                  {rr(v1alpha1.ReservationExpired), created, false},
		"released":                 {rr(v1alpha1.ReservationReleased), created, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := Holds(tc.rr, tc.at); got != tc.want {
				t.Errorf("Holds = %v, want %v", got, tc.want)
			}
		})
	}
}
