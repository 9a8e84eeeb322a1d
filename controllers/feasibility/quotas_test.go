package feasibility

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kube-nexus/kubenexus/scheduler/placement"
)

// quotaQueue is a ClusterQueue of one cpu flavor per entry of flavors (name=quota),
// in cohort (none: ""), with the limits given.
func quotaQueue(name, cohort string, mutate func(*kueue.ClusterQueue), flavors ...string) kueue.ClusterQueue {
	cq := kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kueue.ClusterQueueSpec{CohortName: kueue.CohortReference(cohort)}}
	rg := kueue.ResourceGroup{CoveredResources: []corev1.ResourceName{corev1.ResourceCPU}}
	for _, f := range flavors {
		flavor, quota, _ := strings.Cut(f, "=")
		rg.Flavors = append(rg.Flavors, kueue.FlavorQuotas{Name: kueue.ResourceFlavorReference(flavor),
			Resources: []kueue.ResourceQuota{{Name: corev1.ResourceCPU, NominalQuota: resource.MustParse(quota)}}})
	}
	cq.Spec.ResourceGroups = []kueue.ResourceGroup{rg}
	if mutate != nil {
		mutate(&cq)
	}
	return cq
}

// quotaRun plays quota alone: each Workload's gang starts the moment it is admitted
// and runs its runtime; it returns when each was admitted (absent: never; the last
// admission of one admitted twice), with which flavors, and the pods and gangs
// preemption evicted (by name: pods, and gang indexes as "#i").
func quotaRun(q *Quotas, t0 time.Time) (map[string]time.Duration, map[string][]string, map[string]time.Duration) {
	at, flavors, evicted := map[string]time.Duration{}, map[string][]string{}, map[string]time.Duration{}
	adm := q.Admission(func(_ int, w *QuotaWorkload) placement.Queued {
		flavors[w.Name.Name] = w.Flavors
		return placement.Queued{Name: w.Name.Name}
	}, func(string) (int, bool) { return 0, true })
	t := t0
	for steps := 0; steps < 100; steps++ {
		admits := adm.Admit(t)
		ev := adm.Evicts()
		for _, r := range ev.Frees {
			evicted[r.Owner] = t.Sub(t0)
		}
		for _, i := range ev.Gangs {
			evicted[fmt.Sprintf("#%d", i)] = t.Sub(t0)
		}
		for _, a := range admits {
			at[a.Gang.Name] = t.Sub(t0)
			adm.Started(a.Index, t)
		}
		next, ok := adm.Next(t)
		if !ok {
			break
		}
		t = next
	}
	return at, flavors, evicted
}

func TestQuotas(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	cpu := func(v string) map[corev1.ResourceName]int64 {
		return map[corev1.ResourceName]int64{corev1.ResourceCPU: milli(v)}
	}
	idx := 0
	waiting := func(name, cq string, priority int32, queued time.Duration, req string, runtime time.Duration) *QuotaWorkload {
		idx++
		return &QuotaWorkload{Name: types.NamespacedName{Namespace: "ns", Name: name}, ClusterQueue: cq, Priority: priority,
			Queued: t0.Add(queued), Request: cpu(req), Runtime: runtime, Gangs: []int{idx}}
	}
	running := func(name, cq, flavor, uses string, ends time.Duration) *QuotaWorkload {
		w := &QuotaWorkload{Name: types.NamespacedName{Namespace: "ns", Name: name}, ClusterQueue: cq,
			Usage: map[FlavorResource]int64{{flavor, corev1.ResourceCPU}: milli(uses)}}
		if ends > 0 {
			w.Ends = t0.Add(ends)
		}
		return w
	}
	strict := func(cq *kueue.ClusterQueue) { cq.Spec.QueueingStrategy = kueue.StrictFIFO }
	bestEffort := func(cq *kueue.ClusterQueue) { cq.Spec.QueueingStrategy = kueue.BestEffortFIFO }
	limits := func(borrowing, lending string) func(*kueue.ClusterQueue) {
		return func(cq *kueue.ClusterQueue) {
			r := &cq.Spec.ResourceGroups[0].Flavors[0].Resources[0]
			if borrowing != "" {
				r.BorrowingLimit = ptr.To(resource.MustParse(borrowing))
			}
			if lending != "" {
				r.LendingLimit = ptr.To(resource.MustParse(lending))
			}
		}
	}
	for _, tc := range []struct {
		name    string
		queues  []kueue.ClusterQueue
		cohorts []kueue.Cohort
		running []*QuotaWorkload
		waiting []*QuotaWorkload
		want    map[string]time.Duration
		flavors map[string][]string
		evicted map[string]time.Duration
	}{
		{
			name:    "quota frees when the running Workload ends: both waiting are admitted then",
			queues:  []kueue.ClusterQueue{quotaQueue("cq", "", strict, "default=8")},
			running: []*QuotaWorkload{running("r", "cq", "default", "8", 10*time.Minute)},
			waiting: []*QuotaWorkload{waiting("a", "cq", 0, 1, "4", time.Hour), waiting("b", "cq", 0, 2, "4", time.Hour)},
			want:    map[string]time.Duration{"a": 10 * time.Minute, "b": 10 * time.Minute},
		},
		{
			name:    "StrictFIFO: a head that does not fit blocks the one behind it",
			queues:  []kueue.ClusterQueue{quotaQueue("cq", "", strict, "default=8")},
			running: []*QuotaWorkload{running("r", "cq", "default", "4", 10*time.Minute)},
			waiting: []*QuotaWorkload{waiting("a", "cq", 0, 1, "6", time.Hour), waiting("b", "cq", 0, 2, "2", time.Hour)},
			want:    map[string]time.Duration{"a": 10 * time.Minute, "b": 10 * time.Minute},
		},
		{
			name:    "BestEffortFIFO: the one behind a head that does not fit is admitted now",
			queues:  []kueue.ClusterQueue{quotaQueue("cq", "", bestEffort, "default=8")},
			running: []*QuotaWorkload{running("r", "cq", "default", "4", 10*time.Minute)},
			waiting: []*QuotaWorkload{waiting("a", "cq", 0, 1, "6", time.Hour), waiting("b", "cq", 0, 2, "2", time.Hour)},
			want:    map[string]time.Duration{"a": 10 * time.Minute, "b": 0},
		},
		{
			name:    "priority before time: the later, higher-priority Workload takes the freed quota",
			queues:  []kueue.ClusterQueue{quotaQueue("cq", "", strict, "default=8")},
			running: []*QuotaWorkload{running("r", "cq", "default", "8", 10*time.Minute)},
			waiting: []*QuotaWorkload{waiting("low", "cq", 0, 1, "8", time.Hour), waiting("high", "cq", 100, 2, "8", time.Hour)},
			want:    map[string]time.Duration{"high": 10 * time.Minute, "low": 70 * time.Minute},
		},
		{
			name:    "a queue borrows the idle quota of its cohort",
			queues:  []kueue.ClusterQueue{quotaQueue("a", "co", nil, "default=4"), quotaQueue("b", "co", nil, "default=4")},
			waiting: []*QuotaWorkload{waiting("big", "a", 0, 1, "6", time.Hour)},
			want:    map[string]time.Duration{"big": 0},
		},
		{
			name:    "a lending limit of 0 keeps a queue's quota from its cohort",
			queues:  []kueue.ClusterQueue{quotaQueue("a", "co", nil, "default=4"), quotaQueue("b", "co", limits("", "0"), "default=4")},
			waiting: []*QuotaWorkload{waiting("big", "a", 0, 1, "6", time.Hour)},
			want:    map[string]time.Duration{},
		},
		{
			name:    "a borrowing limit caps what a queue borrows",
			queues:  []kueue.ClusterQueue{quotaQueue("a", "co", limits("1", ""), "default=4"), quotaQueue("b", "co", nil, "default=4")},
			waiting: []*QuotaWorkload{waiting("big", "a", 0, 1, "6", time.Hour), waiting("small", "a", 0, 2, "5", time.Hour)},
			want:    map[string]time.Duration{"small": 0},
		},
		{
			name:    "borrowed quota comes back when the borrower ends: the lender's Workload waits for it",
			queues:  []kueue.ClusterQueue{quotaQueue("a", "co", nil, "default=4"), quotaQueue("b", "co", nil, "default=4")},
			running: []*QuotaWorkload{running("borrower", "a", "default", "8", 20*time.Minute)},
			waiting: []*QuotaWorkload{waiting("own", "b", 0, 1, "4", time.Hour)},
			want:    map[string]time.Duration{"own": 20 * time.Minute},
		},
		{
			name:    "a queue on hold admits nothing",
			queues:  []kueue.ClusterQueue{quotaQueue("cq", "", func(cq *kueue.ClusterQueue) { cq.Spec.StopPolicy = ptr.To(kueue.Hold) }, "default=8")},
			waiting: []*QuotaWorkload{waiting("a", "cq", 0, 1, "1", time.Hour)},
			want:    map[string]time.Duration{},
		},
		{
			name:    "a queue that does not exist admits nothing; a request no flavor covers is never admitted",
			queues:  []kueue.ClusterQueue{quotaQueue("cq", "", nil, "default=8")},
			waiting: []*QuotaWorkload{waiting("lost", "gone", 0, 1, "1", time.Hour), {Name: types.NamespacedName{Name: "gpu"}, ClusterQueue: "cq", Request: map[corev1.ResourceName]int64{"nvidia.com/gpu": 1000}, Gangs: []int{99}}},
			want:    map[string]time.Duration{},
		},
		{
			name:    "the first flavor that holds the request is assigned",
			queues:  []kueue.ClusterQueue{quotaQueue("cq", "", nil, "on-demand=4", "spot=8")},
			waiting: []*QuotaWorkload{waiting("six", "cq", 0, 1, "6", time.Hour), waiting("two", "cq", 0, 2, "2", time.Hour)},
			want:    map[string]time.Duration{"six": 0, "two": 0},
			flavors: map[string][]string{"six": {"spot"}, "two": {"on-demand"}},
		},
		{
			name: "whenCanBorrow MayStopSearch borrows in the first flavor; TryNextFlavor takes the next one that holds it without",
			queues: []kueue.ClusterQueue{
				quotaQueue("may", "co", nil, "on-demand=4", "spot=8"),
				quotaQueue("next", "co", func(cq *kueue.ClusterQueue) {
					cq.Spec.FlavorFungibility = &kueue.FlavorFungibility{WhenCanBorrow: kueue.TryNextFlavor}
				}, "on-demand=4", "spot=8"),
			},
			waiting: []*QuotaWorkload{waiting("m", "may", 0, 1, "6", time.Hour), waiting("n", "next", 0, 2, "6", time.Hour)},
			want:    map[string]time.Duration{"m": 0, "n": 0},
			flavors: map[string][]string{"m": {"on-demand"}, "n": {"spot"}},
		},
		{
			name: "without fair sharing the earlier of two borrowers takes the last of the cohort's quota",
			queues: []kueue.ClusterQueue{quotaQueue("lender", "co", nil, "default=6"),
				quotaQueue("a", "co", nil, "default=0"), quotaQueue("b", "co", nil, "default=0")},
			running: []*QuotaWorkload{running("a-running", "a", "default", "4", 0)},
			waiting: []*QuotaWorkload{waiting("a1", "a", 0, 1, "2", 0), waiting("b1", "b", 0, 2, "2", 0)},
			want:    map[string]time.Duration{"a1": 0},
		},
		{
			name:    "withinClusterQueue Never (the default): a higher-priority Workload waits for the quota to free",
			queues:  []kueue.ClusterQueue{quotaQueue("cq", "", nil, "default=8")},
			running: []*QuotaWorkload{runningPod(running("low-a", "cq", "default", "4", time.Hour)), runningPod(running("low-b", "cq", "default", "4", 2*time.Hour))},
			waiting: []*QuotaWorkload{waiting("high", "cq", 10, 1, "4", time.Hour)},
			want:    map[string]time.Duration{"high": time.Hour},
		},
		{
			name:   "withinClusterQueue LowerPriority: it preempts the fewest lower-priority Workloads, and their pods give their room back at once",
			queues: []kueue.ClusterQueue{quotaQueue("cq", "", lowerPriority, "default=8")},
			running: []*QuotaWorkload{runningPod(running("low-a", "cq", "default", "4", time.Hour)), runningPod(running("low-b", "cq", "default", "4", 2*time.Hour)),
				runningPod(running("high-running", "cq", "default", "0", 2*time.Hour))},
			waiting: []*QuotaWorkload{waiting("high", "cq", 10, 1, "4", time.Hour)},
			want:    map[string]time.Duration{"high": 0},
			evicted: map[string]time.Duration{"ns/low-a-0": 0},
		},
		{
			name:    "a preempted Workload whose gang is in the forecast waits again, and is admitted again when the quota frees",
			queues:  []kueue.ClusterQueue{quotaQueue("cq", "", lowerPriority, "default=8")},
			running: []*QuotaWorkload{admittedWaiting("low", "cq", "default", "8", 7, time.Hour)},
			waiting: []*QuotaWorkload{waiting("high", "cq", 10, 1, "8", 10*time.Minute)},
			want:    map[string]time.Duration{"high": 0, "low": 10 * time.Minute},
			evicted: map[string]time.Duration{"#7": 0},
		},
		{
			name:    "a running Workload preempted in the forecast waits for quota again, and its pods run again once it is admitted",
			queues:  []kueue.ClusterQueue{quotaQueue("cq", "", lowerPriority, "default=8")},
			running: []*QuotaWorkload{runsAgain(runningPod(running("low", "cq", "default", "8", time.Hour)), 7)},
			waiting: []*QuotaWorkload{waiting("high", "cq", 10, 1, "8", 10*time.Minute)},
			want:    map[string]time.Duration{"high": 0, "low": 10 * time.Minute},
			evicted: map[string]time.Duration{"ns/low-0": 0, "#7": 0},
		},
		{
			name:    "a Workload of the same priority preempts none under LowerPriority",
			queues:  []kueue.ClusterQueue{quotaQueue("cq", "", lowerPriority, "default=8")},
			running: []*QuotaWorkload{runningPod(running("peer", "cq", "default", "8", time.Hour))},
			waiting: []*QuotaWorkload{waiting("same", "cq", 0, 1, "8", time.Hour)},
			want:    map[string]time.Duration{"same": time.Hour},
		},
		{
			name:    "a cohort tree is one pool: a queue borrows what a queue of a sibling cohort lends through their parent",
			queues:  []kueue.ClusterQueue{quotaQueue("a", "left", nil, "default=0"), quotaQueue("lender", "right", nil, "default=8")},
			cohorts: []kueue.Cohort{childCohort("left", "root"), childCohort("right", "root"), childCohort("root", "")},
			waiting: []*QuotaWorkload{waiting("w", "a", 0, 1, "8", time.Hour)},
			want:    map[string]time.Duration{"w": 0},
		},
		{
			name:    "cohorts of no common root lend nothing to each other (a parent loop ends the walk)",
			queues:  []kueue.ClusterQueue{quotaQueue("a", "left", nil, "default=0"), quotaQueue("lender", "right", nil, "default=8")},
			cohorts: []kueue.Cohort{childCohort("left", "loop"), childCohort("loop", "left"), childCohort("right", "")},
			waiting: []*QuotaWorkload{waiting("w", "a", 0, 1, "8", time.Hour)},
			want:    map[string]time.Duration{},
		},
		{
			name:    "reclaimWithinCohort Never (the default): quota another queue borrows is waited for",
			queues:  []kueue.ClusterQueue{quotaQueue("mine", "co", nil, "default=8"), quotaQueue("other", "co", nil, "default=0")},
			running: []*QuotaWorkload{runningPod(running("borrower", "other", "default", "8", time.Hour))},
			waiting: []*QuotaWorkload{waiting("w", "mine", 0, 1, "8", time.Hour)},
			want:    map[string]time.Duration{"w": time.Hour},
		},
		{
			name:    "reclaimWithinCohort Any: a Workload within its queue's nominal quota takes it back from a borrower of any priority",
			queues:  []kueue.ClusterQueue{quotaQueue("mine", "co", reclaim(kueue.PreemptionPolicyAny, nil), "default=8"), quotaQueue("other", "co", nil, "default=0")},
			running: []*QuotaWorkload{withPriority(runningPod(running("borrower", "other", "default", "8", time.Hour)), 100)},
			waiting: []*QuotaWorkload{waiting("w", "mine", 0, 1, "8", time.Hour)},
			want:    map[string]time.Duration{"w": 0},
			evicted: map[string]time.Duration{"ns/borrower-0": 0},
		},
		{
			name:   "reclaimWithinCohort LowerPriority: only the lower-priority borrower goes",
			queues: []kueue.ClusterQueue{quotaQueue("mine", "co", reclaim(kueue.PreemptionPolicyLowerPriority, nil), "default=8"), quotaQueue("other", "co", nil, "default=0")},
			running: []*QuotaWorkload{withPriority(runningPod(running("high-borrower", "other", "default", "4", time.Hour)), 100),
				withPriority(runningPod(running("low-borrower", "other", "default", "4", 2*time.Hour)), -1)},
			waiting: []*QuotaWorkload{waiting("w", "mine", 0, 1, "4", time.Hour)},
			want:    map[string]time.Duration{"w": 0},
			evicted: map[string]time.Duration{"ns/low-borrower-0": 0},
		},
		{
			name:    "a queue within its nominal quota is not reclaimed from: its quota is borrowed once it frees",
			queues:  []kueue.ClusterQueue{quotaQueue("mine", "co", reclaim(kueue.PreemptionPolicyAny, nil), "default=4"), quotaQueue("other", "co", nil, "default=4")},
			running: []*QuotaWorkload{runningPod(running("owner", "other", "default", "4", time.Hour)), running("mine-running", "mine", "default", "4", 2*time.Hour)},
			waiting: []*QuotaWorkload{waiting("w", "mine", 0, 1, "4", time.Hour)},
			want:    map[string]time.Duration{"w": time.Hour},
		},
		{
			name: "a queue is reclaimed from only while it borrows: the next borrower is taken instead",
			queues: []kueue.ClusterQueue{quotaQueue("mine", "co", reclaim(kueue.PreemptionPolicyAny, nil), "default=12"),
				quotaQueue("one", "co", nil, "default=0"), quotaQueue("two", "co", nil, "default=4")},
			running: []*QuotaWorkload{withPriority(runningPod(running("two-b1", "two", "default", "4", time.Hour)), -2),
				withPriority(runningPod(running("two-b2", "two", "default", "4", time.Hour)), -1), runningPod(running("one-a", "one", "default", "4", time.Hour))},
			waiting: []*QuotaWorkload{waiting("w", "mine", 0, 1, "12", time.Hour)},
			want:    map[string]time.Duration{"w": 0},
			evicted: map[string]time.Duration{"ns/two-b1-0": 0, "ns/one-a-0": 0},
		},
		{
			name:    "a Workload that must borrow reclaims nothing without borrowWithinCohort",
			queues:  borrowCohort(reclaim(kueue.PreemptionPolicyAny, nil)),
			running: borrowCohortRunning(running),
			waiting: []*QuotaWorkload{withPriority(waiting("w", "mine", 0, 1, "4", time.Hour), 10)},
			want:    map[string]time.Duration{"w": time.Hour},
		},
		{
			name:    "borrowWithinCohort LowerPriority: a borrowing Workload preempts a lower-priority borrower of another queue",
			queues:  borrowCohort(reclaim(kueue.PreemptionPolicyLowerPriority, ptr.To[int32](0))),
			running: borrowCohortRunning(running),
			waiting: []*QuotaWorkload{withPriority(waiting("w", "mine", 0, 1, "4", time.Hour), 10)},
			want:    map[string]time.Duration{"w": 0},
			evicted: map[string]time.Duration{"ns/other-a-0": 0},
		},
		{
			name:    "borrowWithinCohort's maxPriorityThreshold spares a borrower above it",
			queues:  borrowCohort(reclaim(kueue.PreemptionPolicyLowerPriority, ptr.To[int32](-5))),
			running: borrowCohortRunning(running),
			waiting: []*QuotaWorkload{withPriority(waiting("w", "mine", 0, 1, "4", time.Hour), 10)},
			want:    map[string]time.Duration{"w": time.Hour},
		},
		{
			name: "the borrower of another queue goes before the queue's own lower-priority Workload",
			queues: []kueue.ClusterQueue{quotaQueue("mine", "co", func(cq *kueue.ClusterQueue) {
				reclaim(kueue.PreemptionPolicyAny, nil)(cq)
				cq.Spec.Preemption.WithinClusterQueue = kueue.PreemptionPolicyLowerPriority
			}, "default=8"), quotaQueue("other", "co", nil, "default=0")},
			running: []*QuotaWorkload{runningPod(running("mine-low", "mine", "default", "4", time.Hour)), runningPod(running("borrower", "other", "default", "4", time.Hour))},
			waiting: []*QuotaWorkload{withPriority(waiting("w", "mine", 0, 1, "4", time.Hour), 10)},
			want:    map[string]time.Duration{"w": 0},
			evicted: map[string]time.Duration{"ns/borrower-0": 0},
		},
		{
			name: "with fair sharing the queue that borrows least takes it",
			queues: []kueue.ClusterQueue{quotaQueue("lender", "co", fairSharing, "default=6"),
				quotaQueue("a", "co", fairSharing, "default=0"), quotaQueue("b", "co", fairSharing, "default=0")},
			running: []*QuotaWorkload{running("a-running", "a", "default", "4", 0)},
			waiting: []*QuotaWorkload{waiting("a1", "a", 0, 1, "2", 0), waiting("b1", "b", 0, 2, "2", 0)},
			want:    map[string]time.Duration{"b1": 0},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := NewQuotas(tc.queues, tc.cohorts)
			for _, w := range tc.running {
				q.Hold(w)
			}
			for _, w := range tc.waiting {
				q.Wait(w)
			}
			got, flavors, evicted := quotaRun(q, t0)
			for name, want := range tc.want {
				if d, ok := got[name]; !ok || d != want {
					t.Errorf("%s admitted at +%v (%v), want +%v", name, d, ok, want)
				}
			}
			for name, d := range got {
				if _, ok := tc.want[name]; !ok {
					t.Errorf("%s admitted at +%v, want never", name, d)
				}
			}
			for name, want := range tc.flavors {
				if fmt.Sprint(flavors[name]) != fmt.Sprint(want) {
					t.Errorf("%s assigned flavors %v, want %v", name, flavors[name], want)
				}
			}
			if fmt.Sprint(evicted) != fmt.Sprint(tc.evicted) {
				t.Errorf("evicted %v, want %v", evicted, tc.evicted)
			}
		})
	}
}

// fairSharing marks a queue as Kueue marks them with fair sharing on.
func fairSharing(cq *kueue.ClusterQueue) { cq.Status.FairSharing = &kueue.FairSharingStatus{} }

func milli(v string) int64 { q := resource.MustParse(v); return q.MilliValue() }

// lowerPriority lets a queue's Workloads preempt those of lower priority in it.
func lowerPriority(cq *kueue.ClusterQueue) {
	cq.Spec.Preemption = &kueue.ClusterQueuePreemption{WithinClusterQueue: kueue.PreemptionPolicyLowerPriority}
}

// reclaim sets a queue's reclaimWithinCohort and, with a threshold, lets its
// borrowing Workloads preempt lower-priority ones of the cohort up to it.
func reclaim(policy kueue.PreemptionPolicy, threshold *int32) func(*kueue.ClusterQueue) {
	return func(cq *kueue.ClusterQueue) {
		cq.Spec.Preemption = &kueue.ClusterQueuePreemption{ReclaimWithinCohort: policy}
		if threshold != nil {
			cq.Spec.Preemption.BorrowWithinCohort = &kueue.BorrowWithinCohort{Policy: kueue.BorrowWithinCohortPolicyLowerPriority, MaxPriorityThreshold: threshold}
		}
	}
}

// borrowCohort is a cohort of 12 cpus in three queues of 4, "mine" (with
// mutate), "other" and "lender"; borrowCohortRunning fills it: "mine" uses its
// 4 for 2 hours, "other" its 4 and the lender's 4 (other-a for an hour, other-b
// for 3). A Workload of "mine" asking for more must borrow.
func borrowCohort(mutate func(*kueue.ClusterQueue)) []kueue.ClusterQueue {
	return []kueue.ClusterQueue{quotaQueue("mine", "co", mutate, "default=4"), quotaQueue("other", "co", nil, "default=4"), quotaQueue("lender", "co", nil, "default=4")}
}

func borrowCohortRunning(running func(name, cq, flavor, uses string, ends time.Duration) *QuotaWorkload) []*QuotaWorkload {
	return []*QuotaWorkload{running("mine-running", "mine", "default", "4", 2*time.Hour),
		runningPod(running("other-a", "other", "default", "4", time.Hour)), runningPod(running("other-b", "other", "default", "4", 3*time.Hour))}
}

// runsAgain gives a running Workload the held gang (index gang) its pods form
// again if preempted.
func runsAgain(w *QuotaWorkload, gang int) *QuotaWorkload { w.Again = []int{gang}; return w }

// childCohort is a Cohort of no quota of its own under parent ("" for a root).
func childCohort(name, parent string) kueue.Cohort {
	return kueue.Cohort{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kueue.CohortSpec{ParentName: kueue.CohortReference(parent)}}
}

func withPriority(w *QuotaWorkload, p int32) *QuotaWorkload { w.Priority = p; return w }

// runningPod gives an admitted Workload one running pod, <name>-0.
func runningPod(w *QuotaWorkload) *QuotaWorkload {
	w.Running = []RunningPod{{Pod: types.NamespacedName{Namespace: "ns", Name: w.Name.Name + "-0"}, Node: "n0", Requests: map[corev1.ResourceName]int64{corev1.ResourceCPU: 1000}}}
	return w
}

// admittedWaiting is a Workload admitted with uses of flavor whose gang (index gang
// of the forecast) waits for nodes, running runtime once started.
func admittedWaiting(name, cq, flavor, uses string, gang int, runtime time.Duration) *QuotaWorkload {
	return &QuotaWorkload{Name: types.NamespacedName{Namespace: "ns", Name: name}, ClusterQueue: cq, Runtime: runtime, Gangs: []int{gang},
		Request: map[corev1.ResourceName]int64{corev1.ResourceCPU: milli(uses)},
		Usage:   map[FlavorResource]int64{{flavor, corev1.ResourceCPU}: milli(uses)}}
}

// A Workload's runtime is untrusted input: Kueue's maximumExecutionTimeSeconds up to a
// week, as a pod's bound; longer is no bound, and so is a pod set without one.
func TestRuntimeOf(t *testing.T) {
	pod := func(deadline *int64) kueue.PodSet {
		return kueue.PodSet{Name: "main", Count: 1, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{ActiveDeadlineSeconds: deadline}}}
	}
	for _, tc := range []struct {
		name    string
		max     *int32
		sets    []kueue.PodSet
		runtime time.Duration
	}{
		{"Kueue's maximum execution time", ptr.To[int32](600), []kueue.PodSet{pod(nil)}, 10 * time.Minute},
		{"a maximum beyond a week is no bound", ptr.To[int32](8 * 24 * 3600), []kueue.PodSet{pod(ptr.To[int64](60))}, 0},
		{"a negative maximum falls back to the pods' bounds", ptr.To[int32](-5), []kueue.PodSet{pod(ptr.To[int64](60)), pod(ptr.To[int64](120))}, 2 * time.Minute},
		{"a pod set without a bound: none", nil, []kueue.PodSet{pod(ptr.To[int64](60)), pod(nil)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wl := &kueue.Workload{Spec: kueue.WorkloadSpec{MaximumExecutionTimeSeconds: tc.max, PodSets: tc.sets}}
			if got := RuntimeOf(wl); got != tc.runtime {
				t.Errorf("runtime %v, want %v", got, tc.runtime)
			}
		})
	}
}
