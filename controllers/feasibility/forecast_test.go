package feasibility

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// forecastFleet is nodes 8-GPU nodes in racks of 8, every GPU in use by a pod that
// ends within the next hours, and ahead gangs of 1 to 4 eight-GPU members, each
// running an hour once started, queued ahead of a gang of four.
func forecastFleet(nodes, ahead int, t0 time.Time) (*Cluster, *Workload, []Ahead) {
	c := fleet(nodes, 8, func(int) int64 { return 8 })
	eightGPUs := corev1.ResourceList{gpu: resource.MustParse("8")}
	c.Bounded = map[string][]Bounded{}
	for i := range nodes {
		c.Bounded[fmt.Sprintf("n%02d", i)] = []Bounded{{Ends: t0.Add(time.Duration(7*i%240) * time.Minute), Requests: eightGPUs}}
	}
	queue := make([]Ahead, ahead)
	for i := range queue {
		queue[i] = Ahead{Name: fmt.Sprintf("g%d", i), Workload: job(1+i%4, "8", v1alpha1.LabelRack), Runtime: time.Hour}
	}
	return c, job(4, "8", v1alpha1.LabelRack), queue
}

func TestForecastQueuesBehindTheGangsAhead(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	c, w, ahead := forecastFleet(16, 3, t0)
	alone := c.Forecast(w, nil, t0)
	behind := c.Forecast(w, ahead, t0)
	if !alone.OK || !behind.OK || !behind.Start.After(alone.Start) || len(behind.Started) != 3 {
		t.Fatalf("alone %v at %v; behind 3 gangs %v at %v after %d of them; want a later start behind all three", alone.OK, alone.Start, behind.OK, behind.Start, len(behind.Started))
	}
	if d := Decide(c, w); !d.Start.Equal(alone.Start) {
		t.Errorf("with nothing ahead the forecast says %v, Decide's earliest start %v", alone.Start, d.Start)
	}
}

func TestForecastQueueGivesEachGangItsForecast(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	c, w, ahead := forecastFleet(16, 5, t0)
	queue := append(ahead, Ahead{Name: "last", Workload: w, Runtime: time.Hour})
	starts := c.ForecastQueue(queue, nil, t0)
	// The last gang has no gang behind it: its forecast is Forecast's.
	last := len(queue) - 1
	if f := c.Forecast(w, ahead, t0); !f.OK || !starts[last].OK || !f.Start.Equal(starts[last].At) || len(f.Started) != starts[last].Before {
		t.Errorf("last: behind its queue %v at %v after %d; in the whole queue %v at %v after %d", f.OK, f.Start, len(f.Started), starts[last].OK, starts[last].At, starts[last].Before)
	}
	// A gang behind that fits sooner starts first and may take room: no gang starts
	// before Forecast (which sees only the gangs ahead) says, and some start later.
	later := 0
	for i := range queue {
		f := c.Forecast(queue[i].Workload, queue[:i], t0)
		if !starts[i].OK || starts[i].At.Before(f.Start) {
			t.Errorf("%s: %v at %v in the whole queue; behind its queue alone at %v", queue[i].Name, starts[i].OK, starts[i].At, f.Start)
		}
		if starts[i].At.After(f.Start) {
			later++
		}
	}
	if later == 0 {
		t.Errorf("no gang was overtaken by a smaller one behind it: the fleet does not test the whole queue")
	}
}

// BenchmarkForecastQueue1000 is the cost of forecasting every one of 1,000 pending
// gangs on 512 nodes in one pass (what the manager's estimated-start annotation
// costs per refresh).
func BenchmarkForecastQueue1000(b *testing.B) {
	t0 := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	c, w, ahead := forecastFleet(512, 999, t0)
	queue := append(ahead, Ahead{Name: "last", Workload: w, Runtime: time.Hour})
	for b.Loop() {
		if s := c.ForecastQueue(queue, nil, t0); !s[len(s)-1].OK {
			b.Fatal("no start")
		}
	}
}

// BenchmarkForecast1000 is the forecast's cost behind 1,000 pending gangs on 512
// nodes (go test -bench Forecast ./controllers/feasibility/).
func BenchmarkForecast1000(b *testing.B) {
	t0 := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	c, w, ahead := forecastFleet(512, 1000, t0)
	for b.Loop() {
		if f := c.Forecast(w, ahead, t0); !f.OK {
			b.Fatal("no start")
		}
	}
}

// BenchmarkForecastQueue1000Kueue is that pass when the 1,000 gangs are Kueue
// Workloads waiting for quota in 8 ClusterQueues of one cohort (512 GPUs nominal
// each: the fleet), all of it held by the Workloads of the running pods: each is
// admitted as they end (go test -run XXX -bench ForecastQueue1000Kueue ./controllers/feasibility/).
func BenchmarkForecastQueue1000Kueue(b *testing.B) {
	t0 := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	c, w, ahead := forecastFleet(512, 999, t0)
	queue := append(ahead, Ahead{Name: "last", Workload: w, Runtime: time.Hour})
	var cqs []kueue.ClusterQueue
	for i := range 8 {
		cq := quotaQueue(fmt.Sprintf("cq%d", i), "co", nil, "gpu=512")
		cq.Spec.ResourceGroups[0].CoveredResources = []corev1.ResourceName{gpu}
		cq.Spec.ResourceGroups[0].Flavors[0].Resources[0].Name = gpu
		cqs = append(cqs, cq)
	}
	for b.Loop() {
		q := NewQuotas(cqs, nil)
		for i := range 512 {
			q.Hold(&QuotaWorkload{ClusterQueue: fmt.Sprintf("cq%d", i%8), Usage: map[FlavorResource]int64{{"gpu", gpu}: 8000},
				Ends: c.Bounded[fmt.Sprintf("n%02d", i)][0].Ends})
		}
		for i := range queue {
			members := queue[i].Workload.PodSets[0].Count
			queue[i].Quota = &QuotaWorkload{Name: types.NamespacedName{Name: queue[i].Name}, ClusterQueue: fmt.Sprintf("cq%d", i%8),
				Queued: t0.Add(time.Duration(i) * time.Second), Request: map[corev1.ResourceName]int64{gpu: int64(members) * 8000},
				Runtime: time.Hour, Gangs: []int{i}}
			q.Wait(queue[i].Quota)
		}
		if s := c.ForecastQueue(queue, q, t0); !s[len(s)-1].OK {
			b.Fatal("no start")
		}
	}
}

// A gang whose accumulating reservation is not placed yet keeps the room that frees
// for it until the reservation expires: the gang ahead that would take the first
// node freed waits, and the gang starts when the second frees.
func TestForecastCountsAnAccumulatingReservation(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	c := fleet(2, 8, func(int) int64 { return 8 })
	eightGPUs := corev1.ResourceList{gpu: resource.MustParse("8")}
	c.Bounded = map[string][]Bounded{"n00": {{Ends: t0.Add(10 * time.Minute), Requests: eightGPUs}}, "n01": {{Ends: t0.Add(20 * time.Minute), Requests: eightGPUs}}}
	ahead := []Ahead{{Name: "small", Workload: job(1, "4", ""), Runtime: time.Hour}}
	big := job(2, "8", "")
	big.Gang = &types.NamespacedName{Namespace: "ns", Name: "big"}
	rr := func(name, owner string, phase v1alpha1.ReservationPhase, accumulate bool, expires time.Duration) v1alpha1.ResourceReservation {
		r := v1alpha1.ResourceReservation{Spec: v1alpha1.ResourceReservationSpec{Owner: v1alpha1.ReservationOwner{Kind: v1alpha1.ReservationOwnerPodGroup, Name: owner}, TTLSeconds: 600},
			Status: v1alpha1.ResourceReservationStatus{Phase: phase}}
		r.Name, r.Namespace, r.CreationTimestamp = name, "ns", metav1.NewTime(t0)
		if accumulate {
			r.Labels = map[string]string{v1alpha1.LabelReservationAccumulate: "true"}
		}
		if expires != 0 {
			r.Status.ExpireTime = ptr.To(metav1.NewTime(t0.Add(expires)))
		}
		return r
	}
	inNamespace := func(r v1alpha1.ResourceReservation, ns string) v1alpha1.ResourceReservation {
		r.Namespace = ns
		return r
	}
	for _, tc := range []struct {
		name string
		rrs  []v1alpha1.ResourceReservation
		want time.Duration
	}{
		{"without a reservation it waits for the gang ahead to end", nil, 70 * time.Minute},
		{"its accumulating reservation (TTL 10 minutes) lapses when the first node frees", []v1alpha1.ResourceReservation{rr("big-accumulate", "big", v1alpha1.ReservationPending, true, 0)}, 70 * time.Minute},
		{"its accumulating reservation keeps the first node for it", []v1alpha1.ResourceReservation{rr("big-accumulate", "big", v1alpha1.ReservationPending, true, time.Hour)}, 20 * time.Minute},
		{"a reservation that does not accumulate is not one", []v1alpha1.ResourceReservation{rr("big-hold", "big", v1alpha1.ReservationPending, false, time.Hour)}, 70 * time.Minute},
		{"another gang's accumulating reservation is not its own", []v1alpha1.ResourceReservation{rr("other-accumulate", "other", v1alpha1.ReservationPending, true, time.Hour)}, 70 * time.Minute},
		{"an expired one is not counted", []v1alpha1.ResourceReservation{rr("big-accumulate", "big", v1alpha1.ReservationExpired, true, time.Hour)}, 70 * time.Minute},
		// A tenant writes reservations in its own namespace only: one there naming
		// PodGroup "big" is not for ns/big.
		{"another namespace's reservation naming a PodGroup of the same name is not its own", []v1alpha1.ResourceReservation{inNamespace(rr("big-accumulate", "big", v1alpha1.ReservationPending, true, time.Hour), "other")}, 70 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.Accumulating = accumulating(tc.rrs, t0)
			f := c.Forecast(big, ahead, t0)
			if !f.OK || !f.Start.Equal(t0.Add(tc.want)) {
				t.Errorf("starts %v at +%v, want +%v", f.OK, f.Start.Sub(t0), tc.want)
			}
			starts := c.ForecastQueue(append(ahead, Ahead{Name: "big", Workload: big, Runtime: time.Hour}), nil, t0)
			if !starts[1].OK || !starts[1].At.Equal(f.Start) {
				t.Errorf("in the whole queue it starts %v at +%v; Forecast says +%v", starts[1].OK, starts[1].At.Sub(t0), f.Start.Sub(t0))
			}
		})
	}
}
