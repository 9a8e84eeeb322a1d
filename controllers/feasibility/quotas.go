package feasibility

import (
	"math"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kube-nexus/kubenexus/scheduler/placement"
)

// Quotas is Kueue's quota as the forecast plays it: the ClusterQueues' flavors
// (nominal quota, borrowing and lending limits), their cohorts, queueing strategy,
// stop policy and fair-sharing weight; the Workloads that hold quota now and when
// each frees it; and the Workloads that wait for it, admitted in Kueue's order:
// each ClusterQueue's queue by priority then time queued (StrictFIFO: a head that
// does not fit blocks its queue; BestEffortFIFO: the ones behind it are tried), the
// heads of all queues ordered as Kueue's scheduler orders them (fitting without
// borrowing first, then priority, then time; with fair sharing, the lowest dominant
// resource share after admission first). Kueue's classical preemption is played
// (preempt): a head that does not fit evicts the fewest admitted Workloads it may
// preempt, in the other queues of its cohort (reclaimWithinCohort, borrowWithinCohort)
// and in its own (withinClusterQueue); they give back their quota and their room and
// wait again (one running now runs again once readmitted when its gang is held in
// the forecast for that: QuotaWorkload.Again). Not played: preemption across the cohort under fair sharing (its
// preemption strategies), the limits of the cohorts inside a cohort tree (a tree is
// played as one pool, its root's), flavors assigned per pod set
// (all of a Workload's pod sets take the same flavor of each resource group) and
// admission checks rejecting a reservation.
type Quotas struct {
	queues  map[string]*clusterQueue
	cohorts map[string]*cohort
	fair    bool
	// holders are the Workloads that hold quota by the forecast index of their
	// gangs; frees the quota that frees at a known moment.
	holders map[int]*QuotaWorkload
	frees   []quotaFree
}

// QuotaWorkload is a Kueue Workload as Quotas plays it.
type QuotaWorkload struct {
	Name         types.NamespacedName
	ClusterQueue string
	Priority     int32
	// Queued is when it entered its queue (Kueue's queue-ordering timestamp).
	Queued time.Time
	// Request is what it asks in total (milli-units), for one waiting; Usage what
	// it holds by flavor and resource, for one admitted.
	Request map[corev1.ResourceName]int64
	Usage   map[FlavorResource]int64
	// Runtime is how long it runs once started (0: unknown); Ends, for one admitted
	// and running, when it frees its quota (zero: unknown).
	Runtime time.Duration
	Ends    time.Time
	// Gangs are its gangs in the forecast's queue: for one admitted, those of its
	// pods waiting for nodes; for one waiting, the one gang its pods will form. None:
	// its pods are not KubeNexus's (or, admitted, all run): it takes quota from its
	// admission to the end of its runtime (Ends).
	Gangs []int

	// Running are its pods running now (for one admitted): the room a preemption
	// gives back. Again, for one admitted whose pods all run, is the gang (held in
	// the forecast) its pods form again if the forecast preempts it: it then waits
	// for quota again, and its pods for nodes once admitted.
	Running []RunningPod
	Again   []int

	// Flavors are the flavors of each resource group it was assigned, in the
	// order of its ClusterQueue's groups, once admitted in the forecast.
	Flavors []string
	// Borrows says it was admitted in the forecast borrowing from its cohort;
	// Preempted are the Workloads it preempted to be admitted there.
	Borrows   bool
	Preempted []types.NamespacedName
	gangs     int
	admitted  bool
	// since is when it was admitted in the forecast (zero: before it).
	since time.Time
}

// RunningPod is a pod running now on a node, with what it requests (milli-units,
// the pods resource counting it).
type RunningPod struct {
	Pod      types.NamespacedName
	Node     string
	Requests map[corev1.ResourceName]int64
}

// FlavorResource is one resource of one ResourceFlavor.
type FlavorResource struct {
	Flavor   string
	Resource corev1.ResourceName
}

type quotaFree struct {
	at time.Time
	w  *QuotaWorkload
}

type clusterQueue struct {
	name     string
	cohort   *cohort
	strict   bool
	stopped  bool
	weight   float64
	groups   []resourceGroup
	whenBorr kueue.FlavorFungibilityPolicy
	preempt  kueue.PreemptionPolicy
	// reclaim is reclaimWithinCohort; borrowWithin whether borrowWithinCohort
	// lets a borrowing Workload preempt in the cohort, up to threshold.
	reclaim      kueue.PreemptionPolicy
	borrowWithin bool
	threshold    *int32
	limits       map[FlavorResource]limit
	usage        map[FlavorResource]int64
	waiting      []*QuotaWorkload
	admitted     []*QuotaWorkload
}

type resourceGroup struct {
	covers  map[corev1.ResourceName]bool
	flavors []string
}

// limit is one flavor-resource of a queue: nominal quota, borrowing limit (-1:
// none) and what of it the queue keeps for itself (nominal less its lending limit).
type limit struct {
	nominal, borrowing, guaranteed int64
}

// cohort is the quota queues share: what they lend (and the cohort's own quota)
// and what of it their usage beyond their guaranteed part takes.
type cohort struct {
	lendable map[FlavorResource]int64
	used     map[FlavorResource]int64
	// byResource is lendable summed over flavors, for fair sharing's shares.
	byResource map[corev1.ResourceName]int64
}

// NewQuotas reads the ClusterQueues and Cohorts. Kueue runs with fair sharing when
// it publishes the queues' shares in their status.
func NewQuotas(cqs []kueue.ClusterQueue, cohorts []kueue.Cohort) *Quotas {
	q := &Quotas{queues: map[string]*clusterQueue{}, cohorts: map[string]*cohort{}, holders: map[int]*QuotaWorkload{}}
	// A cohort tree is played as one pool, its root's: every queue under it lends
	// to and borrows from every other (the limits of the cohorts between them are
	// not applied).
	root := rootsOf(cohorts)
	cohortOf := func(name string) *cohort {
		name = root(name)
		c := q.cohorts[name]
		if c == nil {
			c = &cohort{lendable: map[FlavorResource]int64{}, used: map[FlavorResource]int64{}, byResource: map[corev1.ResourceName]int64{}}
			q.cohorts[name] = c
		}
		return c
	}
	for i := range cohorts {
		co := cohortOf(cohorts[i].Name)
		for _, rg := range cohorts[i].Spec.ResourceGroups {
			for _, f := range rg.Flavors {
				for _, r := range f.Resources {
					lend := r.NominalQuota.MilliValue()
					if r.LendingLimit != nil {
						lend = min(lend, r.LendingLimit.MilliValue())
					}
					co.lendable[FlavorResource{string(f.Name), r.Name}] += lend
					co.byResource[r.Name] += lend
				}
			}
		}
	}
	for i := range cqs {
		spec := &cqs[i].Spec
		cq := &clusterQueue{name: cqs[i].Name, strict: spec.QueueingStrategy == kueue.StrictFIFO, weight: 1,
			whenBorr: kueue.MayStopSearch, limits: map[FlavorResource]limit{}, usage: map[FlavorResource]int64{}}
		if cqs[i].Status.FairSharing != nil {
			q.fair = true
		}
		if spec.StopPolicy != nil && *spec.StopPolicy != kueue.None {
			cq.stopped = true
		}
		if spec.FairSharing != nil && spec.FairSharing.Weight != nil {
			cq.weight = spec.FairSharing.Weight.AsApproximateFloat64()
		}
		if spec.Preemption != nil {
			cq.preempt, cq.reclaim = spec.Preemption.WithinClusterQueue, spec.Preemption.ReclaimWithinCohort
			if b := spec.Preemption.BorrowWithinCohort; b != nil && b.Policy == kueue.BorrowWithinCohortPolicyLowerPriority {
				cq.borrowWithin, cq.threshold = true, b.MaxPriorityThreshold
			}
		}
		if spec.FlavorFungibility != nil && spec.FlavorFungibility.WhenCanBorrow != "" {
			cq.whenBorr = spec.FlavorFungibility.WhenCanBorrow
		}
		if spec.CohortName != "" {
			cq.cohort = cohortOf(string(spec.CohortName))
		}
		for _, rg := range spec.ResourceGroups {
			g := resourceGroup{covers: map[corev1.ResourceName]bool{}}
			for _, r := range rg.CoveredResources {
				g.covers[r] = true
			}
			for _, f := range rg.Flavors {
				g.flavors = append(g.flavors, string(f.Name))
				for _, r := range f.Resources {
					fr := FlavorResource{string(f.Name), r.Name}
					l := limit{nominal: r.NominalQuota.MilliValue(), borrowing: -1}
					if cq.cohort == nil {
						l.borrowing = 0
					} else if r.BorrowingLimit != nil {
						l.borrowing = r.BorrowingLimit.MilliValue()
					}
					lend := l.nominal
					if r.LendingLimit != nil {
						lend = min(lend, r.LendingLimit.MilliValue())
					}
					l.guaranteed = l.nominal - lend
					cq.limits[fr] = l
					if cq.cohort != nil {
						cq.cohort.lendable[fr] += lend
						cq.cohort.byResource[r.Name] += lend
					}
				}
			}
			cq.groups = append(cq.groups, g)
		}
		q.queues[cq.name] = cq
	}
	return q
}

// rootsOf gives the root of each cohort's tree, following spec.parentName (a cycle
// or a missing parent ends the walk where it is).
func rootsOf(cohorts []kueue.Cohort) func(string) string {
	parent := make(map[string]string, len(cohorts))
	for i := range cohorts {
		if p := string(cohorts[i].Spec.ParentName); p != "" {
			parent[cohorts[i].Name] = p
		}
	}
	return func(name string) string {
		seen := map[string]bool{name: true}
		for {
			p, ok := parent[name]
			if !ok || seen[p] {
				return name
			}
			seen[p] = true
			name = p
		}
	}
}

// Hold counts an admitted Workload's usage: until Ends when it is running, until
// its runtime after its gang (w.Index) starts in the forecast when it waits for
// nodes, for good when neither is known.
func (q *Quotas) Hold(w *QuotaWorkload) {
	cq := q.queues[w.ClusterQueue]
	if cq == nil {
		return
	}
	cq.add(w.Usage, 1)
	w.admitted = true
	cq.admitted = append(cq.admitted, w)
	switch {
	case len(w.Gangs) > 0:
		for _, i := range w.Gangs {
			q.holders[i] = w
		}
		w.gangs = len(w.Gangs)
	case !w.Ends.IsZero():
		q.frees = append(q.frees, quotaFree{at: w.Ends, w: w})
	}
}

// release gives back w's quota.
func (q *Quotas) release(w *QuotaWorkload) {
	cq := q.queues[w.ClusterQueue]
	if cq == nil || !w.admitted {
		return
	}
	cq.add(w.Usage, -1)
	w.admitted = false
	cq.admitted = slices.DeleteFunc(cq.admitted, func(o *QuotaWorkload) bool { return o == w })
}

// Wait queues a Workload waiting for quota in its ClusterQueue (one that does not
// exist never admits it).
func (q *Quotas) Wait(w *QuotaWorkload) {
	if cq := q.queues[w.ClusterQueue]; cq != nil {
		cq.waiting = append(cq.waiting, w)
	}
}

// Admission plays the quota beside a forecast: plan is how gang i of a Workload
// admitted with its flavors is planned; node is the index of a node by name (false:
// not planned over). It is for one forecast only.
func (q *Quotas) Admission(plan func(i int, w *QuotaWorkload) placement.Queued, node func(string) (int, bool)) placement.Admission {
	for _, cq := range q.queues {
		sort.SliceStable(cq.waiting, func(i, j int) bool { return cq.waiting[i].before(cq.waiting[j]) })
	}
	return &admission{q: q, plan: plan, node: node, dirty: true}
}

func (a *QuotaWorkload) before(b *QuotaWorkload) bool {
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	if !a.Queued.Equal(b.Queued) {
		return a.Queued.Before(b.Queued)
	}
	return a.Name.String() < b.Name.String()
}

type admission struct {
	q       *Quotas
	plan    func(i int, w *QuotaWorkload) placement.Queued
	node    func(string) (int, bool)
	dirty   bool
	evicted placement.Eviction
}

// Admit frees the quota due by at and, when quota freed since the last moment,
// admits what fits in Kueue's order.
func (a *admission) Admit(at time.Time) []placement.Admitted {
	q := a.q
	a.evicted = placement.Eviction{}
	left := q.frees[:0]
	for _, f := range q.frees {
		if f.at.After(at) {
			left = append(left, f)
			continue
		}
		q.release(f.w)
		a.dirty = true
	}
	q.frees = left
	if !a.dirty {
		return nil
	}
	a.dirty = false
	admitted, victims := q.cycles(at)
	for _, v := range victims {
		// Its quota frees now, not at its end; its gangs wait again, its pods
		// running now give their room back.
		q.frees = slices.DeleteFunc(q.frees, func(f quotaFree) bool { return f.w == v })
		for _, i := range v.Gangs {
			delete(q.holders, i)
		}
		a.evicted.Gangs = append(a.evicted.Gangs, v.Gangs...)
		for _, p := range v.Running {
			if n, ok := a.node(p.Node); ok {
				a.evicted.Frees = append(a.evicted.Frees, placement.Release{At: at, Node: n, Frees: p.Requests, Owner: p.Pod.String()})
			}
		}
		v.Running = nil
	}
	var out []placement.Admitted
	for _, w := range admitted {
		if !w.admitted {
			continue // preempted again within the moment
		}
		w.since = at
		switch {
		case len(w.Gangs) > 0:
			for _, i := range w.Gangs {
				q.holders[i] = w
				out = append(out, placement.Admitted{Index: i, Gang: a.plan(i, w)})
			}
			w.gangs = len(w.Gangs)
		case w.Runtime > 0:
			q.frees = append(q.frees, quotaFree{at: at.Add(w.Runtime), w: w})
		}
	}
	return out
}

// Evicts is what the last Admit's preemptions evicted.
func (a *admission) Evicts() placement.Eviction { return a.evicted }

// Started: the quota of the gang's Workload frees when its runtime ends.
func (a *admission) Started(i int, at time.Time) {
	w := a.q.holders[i]
	if w == nil {
		return
	}
	delete(a.q.holders, i)
	if w.gangs--; w.gangs > 0 || w.Runtime <= 0 {
		return
	}
	a.q.frees = append(a.q.frees, quotaFree{at: at.Add(w.Runtime), w: w})
}

// Next is the first quota to free after the moment given.
func (a *admission) Next(after time.Time) (time.Time, bool) {
	next, ok := time.Time{}, false
	for _, f := range a.q.frees {
		if f.at.After(after) && (!ok || f.at.Before(next)) {
			next, ok = f.at, true
		}
	}
	return next, ok
}

// head is a queue's candidate of one scheduling cycle with its flavors.
type head struct {
	cq  *clusterQueue
	w   *QuotaWorkload
	fit fit
}

// cycles admits what fits now, as Kueue's scheduler does cycle after cycle: each
// queue offers its head, the heads are taken in Kueue's order and each admitted if
// it still fits. A StrictFIFO head that does not fit blocks its queue until quota
// frees; a BestEffortFIFO one is passed over until then.
func (q *Quotas) cycles(at time.Time) (out, victims []*QuotaWorkload) {
	names := make([]string, 0, len(q.queues))
	for name, cq := range q.queues {
		if !cq.stopped && len(cq.waiting) > 0 {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	cursor := make(map[string]int, len(names))
	blocked := map[string]bool{}
	for {
		var heads []head
		for _, name := range names {
			cq := q.queues[name]
			for !blocked[name] && cursor[name] < len(cq.waiting) {
				w := cq.waiting[cursor[name]]
				if w.admitted {
					cursor[name]++
					continue
				}
				f, ok := cq.assign(w.Request)
				if ok {
					heads = append(heads, head{cq: cq, w: w, fit: f})
					break
				}
				if evicted := q.preempt(cq, w, at); len(evicted) > 0 {
					victims = append(victims, evicted...)
					for _, v := range evicted {
						// Named once: a victim admitted again and preempted again by w
						// within the simulation is one Workload it displaces.
						if !slices.Contains(w.Preempted, v.Name) {
							w.Preempted = append(w.Preempted, v.Name)
						}
					}
					continue // it fits now
				}
				if cq.strict {
					blocked[name] = true
				} else {
					cursor[name]++
				}
			}
		}
		if len(heads) == 0 {
			// What was admitted leaves its queue (its quota, once freed, does not
			// bring it back).
			for _, name := range names {
				q.queues[name].waiting = removeAdmitted(q.queues[name].waiting)
			}
			return out, victims
		}
		q.order(heads)
		for _, h := range heads {
			f, ok := h.cq.assign(h.w.Request)
			if !ok {
				continue // the next cycle passes over it or blocks on it
			}
			h.cq.add(f.usage, 1)
			h.w.Usage, h.w.Flavors, h.w.Borrows, h.w.admitted = f.usage, f.flavors, f.borrows, true
			h.cq.admitted = append(h.cq.admitted, h.w)
			out = append(out, h.w)
		}
	}
}

// preempt evicts, for w, the fewest admitted Workloads that its queue's
// preemption policies let it preempt, when evicting them lets it fit, as Kueue's
// classical preemption chooses them. The candidates are, first, Workloads of the
// other queues of its cohort that borrow what w asks for (reclaimWithinCohort:
// Any, or LowerPriority than w), then those of its own queue (withinClusterQueue:
// LowerPriority, or LowerOrNewerEqualPriority), each lot lowest priority first,
// then the most recently admitted. A candidate of another queue is taken only
// while its queue still borrows, and, unless w then fits within its queue's
// nominal quota, only when borrowWithinCohort lets w preempt it while borrowing
// (lower priority than w, at or below maxPriorityThreshold). Of those taken until
// w fits, each that it still fits beside is spared. The victims wait in their
// queues again, queued now (one whose pods run now, with no gang held for them
// again, only frees its quota). Under fair sharing only preemption within the queue is
// played.
func (q *Quotas) preempt(cq *clusterQueue, w *QuotaWorkload, at time.Time) []*QuotaWorkload {
	within := cq.preempt != "" && cq.preempt != kueue.PreemptionPolicyNever
	reclaims := cq.cohort != nil && !q.fair && cq.reclaim != "" && cq.reclaim != kueue.PreemptionPolicyNever
	if !within && !reclaims {
		return nil // the usual case: nothing to look at
	}
	frs := cq.preemptionFlavors(w.Request)
	if len(frs) == 0 {
		return nil
	}
	own, hierarchy, priority := q.candidates(cq, w, frs)
	others := append(hierarchy, priority...)
	all := append(append([]candidate(nil), others...), own...)
	if len(all) == 0 {
		return nil
	}
	// Which attempts, in order: with w borrowing (true) or within its nominal
	// quota (false), as Kueue tries them.
	var attempts []bool
	forbidden := !cq.borrowWithin
	switch {
	case len(others) == 0 || forbidden && !cq.under(frs):
		attempts = []bool{true}
	case forbidden && len(hierarchy) == 0:
		attempts = []bool{false, true}
	default:
		attempts = []bool{true, false}
	}
	for _, borrow := range attempts {
		if victims := q.tryPreempt(cq, w, all, frs, borrow); len(victims) > 0 {
			for _, v := range victims {
				q.requeue(v, at)
			}
			return victims
		}
	}
	return nil
}

// candidate is a Workload w may preempt; withoutBorrowing: only if w then fits
// within its queue's nominal quota.
type candidate struct {
	w                *QuotaWorkload
	cq               *clusterQueue
	withoutBorrowing bool
}

// candidates are the Workloads holding frs that w may preempt: those of its own
// queue, those of the other queues of its cohort it may reclaim from whatever it
// borrows (hierarchy: w fits within its queue's nominal quota), and those it may
// reclaim from by priority. Each lot is in the order they are taken.
func (q *Quotas) candidates(cq *clusterQueue, w *QuotaWorkload, frs map[FlavorResource]int64) (own, hierarchy, priority []candidate) {
	for _, o := range cq.admitted {
		if uses(o, frs) && mayPreempt(cq.preempt, w, o) {
			own = append(own, candidate{w: o, cq: cq})
		}
	}
	if cq.cohort != nil && !q.fair && cq.reclaim != "" && cq.reclaim != kueue.PreemptionPolicyNever {
		advantage := cq.within(frs)
		names := make([]string, 0, len(q.queues))
		for name, other := range q.queues {
			if other != cq && other.cohort == cq.cohort {
				names = append(names, name)
			}
		}
		sort.Strings(names)
		for _, name := range names {
			other := q.queues[name]
			for _, o := range other.admitted {
				if !uses(o, frs) || !mayPreempt(cq.reclaim, w, o) {
					continue
				}
				c := candidate{w: o, cq: other}
				switch {
				case advantage:
					hierarchy = append(hierarchy, c)
					continue
				case !cq.borrowWithin || o.Priority >= w.Priority || cq.threshold != nil && o.Priority > *cq.threshold:
					c.withoutBorrowing = true
				}
				priority = append(priority, c)
			}
		}
	}
	for _, lot := range [][]candidate{own, hierarchy, priority} {
		sort.SliceStable(lot, func(i, j int) bool {
			if lot[i].w.Priority != lot[j].w.Priority {
				return lot[i].w.Priority < lot[j].w.Priority
			}
			return lot[i].w.since.After(lot[j].w.since)
		})
	}
	return own, hierarchy, priority
}

// mayPreempt reports whether policy lets w preempt o.
func mayPreempt(policy kueue.PreemptionPolicy, w, o *QuotaWorkload) bool {
	switch policy {
	case kueue.PreemptionPolicyAny:
		return true
	case kueue.PreemptionPolicyLowerPriority:
		return o.Priority < w.Priority
	case kueue.PreemptionPolicyLowerOrNewerEqualPriority:
		return o.Priority < w.Priority || o.Priority == w.Priority && w.Queued.Before(o.Queued)
	}
	return false
}

// uses reports whether o holds any of the flavors' resources frs.
func uses(o *QuotaWorkload, frs map[FlavorResource]int64) bool {
	for fr, v := range o.Usage {
		if _, ok := frs[fr]; ok && v > 0 {
			return true
		}
	}
	return false
}

// tryPreempt takes candidates in order until w fits (borrowing or not), then
// spares each it still fits beside, the last taken but one first. Nil when w
// does not fit even with all taken; the usage is as before then.
func (q *Quotas) tryPreempt(cq *clusterQueue, w *QuotaWorkload, all []candidate, frs map[FlavorResource]int64, borrow bool) []*QuotaWorkload {
	fits := func() bool {
		f, ok := cq.assign(w.Request)
		return ok && (borrow || !f.borrows)
	}
	var taken []candidate
	ok := false
	for _, c := range all {
		if c.cq != cq && (borrow && c.withoutBorrowing || !c.cq.borrowing(frs)) {
			continue
		}
		c.cq.add(c.w.Usage, -1)
		taken = append(taken, c)
		if ok = fits(); ok {
			break
		}
	}
	if !ok {
		for _, c := range taken {
			c.cq.add(c.w.Usage, 1)
		}
		return nil
	}
	var victims []*QuotaWorkload
	for i := len(taken) - 2; i >= 0; i-- {
		c := taken[i]
		c.cq.add(c.w.Usage, 1)
		if fits() {
			continue // spared
		}
		c.cq.add(c.w.Usage, -1)
		victims = append(victims, c.w)
	}
	return append(victims, taken[len(taken)-1].w)
}

// requeue takes v (its usage already given back) out of its queue's admitted
// Workloads and, when its pods are in the forecast's queue, queues it again now.
func (q *Quotas) requeue(v *QuotaWorkload, at time.Time) {
	cq := q.queues[v.ClusterQueue]
	v.admitted = false
	cq.admitted = slices.DeleteFunc(cq.admitted, func(o *QuotaWorkload) bool { return o == v })
	if len(v.Gangs) == 0 && len(v.Again) > 0 {
		v.Gangs, v.Again, v.Request = v.Again, nil, requestOf(v.Usage)
	}
	if len(v.Gangs) > 0 {
		v.Queued, v.Usage = at, nil
		cq.waiting = append(cq.waiting, v)
		sort.SliceStable(cq.waiting, func(i, j int) bool { return cq.waiting[i].before(cq.waiting[j]) })
	}
}

// requestOf is what usage asks in total, by resource.
func requestOf(usage map[FlavorResource]int64) map[corev1.ResourceName]int64 {
	out := map[corev1.ResourceName]int64{}
	for fr, v := range usage {
		out[fr.Resource] += v
	}
	return out
}

// Preempts reports whether some ClusterQueue may preempt admitted Workloads
// (within itself, or across its cohort without fair sharing).
func (q *Quotas) Preempts() bool {
	for _, cq := range q.queues {
		if cq.preempt != "" && cq.preempt != kueue.PreemptionPolicyNever ||
			cq.cohort != nil && !q.fair && cq.reclaim != "" && cq.reclaim != kueue.PreemptionPolicyNever {
			return true
		}
	}
	return false
}

// preemptionFlavors is, for each resource group covering something req asks
// for, what it would take of the first flavor whose nominal quota holds it (else
// the first that defines every resource asked): where preemption is to make room.
// Nil when no flavor can.
func (cq *clusterQueue) preemptionFlavors(req map[corev1.ResourceName]int64) map[FlavorResource]int64 {
	out := map[FlavorResource]int64{}
	for _, g := range cq.groups {
		var asked []corev1.ResourceName
		for name, v := range req {
			if g.covers[name] && v > 0 {
				asked = append(asked, name)
			}
		}
		if len(asked) == 0 {
			continue
		}
		chosen := ""
		for _, flavor := range g.flavors {
			defined, holds := true, true
			for _, name := range asked {
				l, ok := cq.limits[FlavorResource{flavor, name}]
				defined = defined && ok
				holds = holds && ok && req[name] <= l.nominal
			}
			if holds {
				chosen = flavor
				break
			}
			if defined && chosen == "" {
				chosen = flavor
			}
		}
		if chosen == "" {
			return nil
		}
		for _, name := range asked {
			out[FlavorResource{chosen, name}] = req[name]
		}
	}
	return out
}

// within reports whether the queue holds what frs asks beside its usage within
// its nominal quota (w would not borrow: it may reclaim what others borrow).
func (cq *clusterQueue) within(frs map[FlavorResource]int64) bool {
	for fr, v := range frs {
		if cq.usage[fr]+v > cq.limits[fr].nominal {
			return false
		}
	}
	return true
}

// under reports whether the queue uses less than its nominal quota of each of
// frs now.
func (cq *clusterQueue) under(frs map[FlavorResource]int64) bool {
	for fr := range frs {
		if cq.usage[fr] >= cq.limits[fr].nominal {
			return false
		}
	}
	return true
}

// borrowing reports whether the queue uses more than its nominal quota of any of
// frs.
func (cq *clusterQueue) borrowing(frs map[FlavorResource]int64) bool {
	for fr := range frs {
		if l, ok := cq.limits[fr]; ok && cq.usage[fr] > l.nominal {
			return true
		}
	}
	return false
}

func removeAdmitted(ws []*QuotaWorkload) []*QuotaWorkload {
	out := ws[:0]
	for _, w := range ws {
		if !w.admitted {
			out = append(out, w)
		}
	}
	return out
}

// order sorts the heads of a cycle as Kueue's scheduler takes them.
func (q *Quotas) order(heads []head) {
	share := make([]float64, len(heads))
	if q.fair {
		for i := range heads {
			share[i] = heads[i].cq.share(heads[i].fit.usage)
		}
	}
	idx := make([]int, len(heads))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(x, y int) bool {
		a, b := &heads[idx[x]], &heads[idx[y]]
		if q.fair {
			if share[idx[x]] != share[idx[y]] {
				return share[idx[x]] < share[idx[y]]
			}
		} else if a.fit.borrows != b.fit.borrows {
			return !a.fit.borrows
		}
		return a.w.before(b.w)
	})
	sorted := make([]head, len(heads))
	for i, j := range idx {
		sorted[i] = heads[j]
	}
	copy(heads, sorted)
}

// fit is a Workload's flavors in a queue and what it takes of each.
type fit struct {
	flavors []string
	usage   map[FlavorResource]int64
	borrows bool
}

// assign picks, for each resource group covering something asked for, the first
// flavor (in the queue's order) that holds the whole request: with
// whenCanBorrow MayStopSearch the first that holds it even by borrowing, with
// TryNextFlavor the first that holds it without, else the first by borrowing.
// A request no group covers never fits.
func (cq *clusterQueue) assign(req map[corev1.ResourceName]int64) (fit, bool) {
	f := fit{usage: map[FlavorResource]int64{}}
	covered := map[corev1.ResourceName]bool{}
	for _, g := range cq.groups {
		var asked []corev1.ResourceName
		for name, v := range req {
			if g.covers[name] && v > 0 {
				asked = append(asked, name)
				covered[name] = true
			}
		}
		if len(asked) == 0 {
			continue
		}
		chosen, borrows, fallback := "", false, ""
		for _, flavor := range g.flavors {
			ok, borrow := cq.holds(flavor, asked, req)
			if !ok {
				continue
			}
			if !borrow || cq.whenBorr == kueue.MayStopSearch {
				chosen, borrows = flavor, borrow
				break
			}
			if fallback == "" {
				fallback = flavor
			}
		}
		if chosen == "" {
			chosen, borrows = fallback, fallback != ""
		}
		if chosen == "" {
			return fit{}, false
		}
		f.flavors = append(f.flavors, chosen)
		f.borrows = f.borrows || borrows
		for _, name := range asked {
			f.usage[FlavorResource{chosen, name}] = req[name]
		}
	}
	for name, v := range req {
		if v > 0 && !covered[name] && name != corev1.ResourcePods {
			return fit{}, false
		}
	}
	return f, true
}

// holds reports whether the queue's flavor holds the request of the resources asked
// now (its own room and what its cohort can lend), and whether by borrowing.
func (cq *clusterQueue) holds(flavor string, asked []corev1.ResourceName, req map[corev1.ResourceName]int64) (ok, borrows bool) {
	for _, name := range asked {
		fr := FlavorResource{flavor, name}
		l, defined := cq.limits[fr]
		if !defined {
			return false, false
		}
		used, need := cq.usage[fr], req[name]
		if used+need > l.nominal {
			borrows = true
		}
		if l.borrowing >= 0 && used+need > l.nominal+l.borrowing {
			return false, false
		}
		if cq.cohort == nil {
			continue
		}
		own := max(0, l.guaranteed-used)
		pool := cq.cohort.lendable[fr] - cq.cohort.used[fr]
		if need > own+pool {
			return false, false
		}
	}
	return true, borrows
}

// add takes (sign 1) or gives back (-1) usage, in the queue and its cohort.
func (cq *clusterQueue) add(usage map[FlavorResource]int64, sign int64) {
	for fr, v := range usage {
		before := cq.usage[fr]
		after := before + sign*v
		cq.usage[fr] = after
		if cq.cohort != nil {
			g := cq.limits[fr].guaranteed
			cq.cohort.used[fr] += max(0, after-g) - max(0, before-g)
		}
	}
}

// share is the queue's dominant resource share with usage added: what it would
// borrow beyond its nominal quota, per resource, over what its cohort lends of
// that resource, times 1000, divided by its weight (infinite at weight 0).
func (cq *clusterQueue) share(usage map[FlavorResource]int64) float64 {
	if cq.cohort == nil {
		return 0
	}
	borrowed := map[corev1.ResourceName]int64{}
	for fr, l := range cq.limits {
		if b := cq.usage[fr] + usage[fr] - l.nominal; b > 0 {
			borrowed[fr.Resource] += b
		}
	}
	var ratio float64
	for name, b := range borrowed {
		if lend := cq.cohort.byResource[name]; lend > 0 {
			ratio = max(ratio, float64(b)*1000/float64(lend))
		}
	}
	if ratio == 0 {
		return 0
	}
	if cq.weight <= 0 {
		return math.Inf(1)
	}
	return ratio / cq.weight
}
