package gangpreemption

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedframework "k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/gangs"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/networkfabric"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/profileclassifier"
)

// PostFilter chooses victims for a pod that fits no node, or for the members of its
// gang that still need a node, hands them to the evictor and nominates the pod. It
// runs as numbered steps: (1) eligibility and a preemption already under way, (2)
// the candidates: running pods and gangs of lower priority that may go, (3) the
// choice: the cheapest set whose eviction places every member, (4) the commitment:
// the members' room is claimed until the victims are gone, (5) the announcement:
// event, log, eviction and nomination.
func (pl *Plugin) PostFilter(ctx context.Context, cs fwk.CycleState, pod *corev1.Pod, _ fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	// 1. Eligibility, and a preemption already making room for this owner.
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == corev1.PreemptNever {
		return nil, fwk.NewStatus(fwk.Unschedulable, "not eligible to preempt: preemptionPolicy is Never")
	}
	prof, ok := profileclassifier.ProfileOf(cs)
	if !ok {
		prof = workload.Classify(pod, workload.Namespace{}, "")
		pl.gangs.FileProfile(&prof, pod)
	}
	var gk *gang.Key
	if prof.Gang != nil {
		gk = &prof.Gang.Key
	}
	owner := ownerOf(pod, gk)
	msg, node, dropped := pl.waiting(owner, pod)
	pl.unnominate(dropped)
	if msg != "" {
		// The room is being made: the member keeps its claim (nominated there, so
		// that pods of lower priority do not take it) and its gang is not rejected.
		if node == "" {
			return nil, fwk.NewStatus(fwk.Unschedulable, msg)
		}
		return nominate(node), fwk.NewStatus(fwk.Success, msg)
	}

	// The members to make room for; none while part of the gang is not known.
	members, short := pl.members(pod, prof)
	if short != "" {
		return nil, fwk.NewStatus(fwk.Unschedulable, "preemption: "+short)
	}

	// 2. Candidates: with none (every pod of equal or higher priority, the usual
	// case) the search over nodes is not built at all.
	infos, err := pl.handle.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	priority := pl.priorities()
	prio := priority(pod, gk)
	var running []*corev1.Pod
	for _, ni := range infos {
		for _, p := range ni.GetPods() {
			running = append(running, p.GetPod())
		}
	}
	reclaim := pl.reclaimer(pod, infos)
	describe, done := pl.profiles.scan(pl.gpuNames)
	candidates := units(running, prio, reclaim, pl.evictable(prof, prio, reclaim), priority, describe, time.Now())
	if pl.gangs != nil {
		candidates = withShedding(candidates, pl.floor, func(p *corev1.Pod) v1alpha1.WorkloadRole { return describe(p).prof.Role })
	}
	done()
	// Consolidation is searched for only when preemption finds nothing, and only
	// over the pods that may move; with none, as with no candidates, no search is
	// built (the usual case).
	var movers []*unit
	if len(candidates) == 0 && *pl.args.Consolidation.Enabled {
		movers = pl.movables(running, prof, prio, priority, time.Now())
	}
	if len(candidates) == 0 && len(movers) == 0 {
		preemptions.WithLabelValues("NoVictims").Inc()
		return nil, fwk.NewStatus(fwk.Unschedulable, "preemption: no running pod or gang of lower priority may be evicted for it")
	}

	// 3. The choice: the members still without a node are placed on the room the
	// cheapest set of candidates frees (select.go), else on the room moving pods
	// makes (consolidate.go).
	claimed, evicting, expired := pl.claimed(owner)
	pl.unnominate(expired)
	// A gang whose policy requires one domain gets room inside one: the domain
	// its placed members anchor it to, or any one while none is placed
	// (NetworkFabric names them).
	var scopes []map[int]bool
	if a, ok := networkfabric.AnchoredOf(cs); ok {
		scopes = a.Scopes(infos)
	}
	s := pl.newSearch(infos, members, claimed, scopes)
	if at := s.place(nil, nil); at != nil {
		return pl.fitAlready(ctx, owner, pod, s, at, evicting)
	}
	var c *choice
	if len(candidates) > 0 {
		c = s.choose(candidates)
	}
	if c == nil {
		return pl.consolidateInstead(ctx, pod, prof, owner, prio, s, running, priority, len(candidates) > 0, movers)
	}

	// 4. The commitment: the members' room is claimed until the victims are gone.
	var victims []*corev1.Pod
	for _, u := range c.victims {
		victims = append(victims, u.pods...)
		victimUnits.WithLabelValues(unitKind(u)).Inc()
	}
	preemptions.WithLabelValues("Evicting").Inc()
	pl.commit(owner, pod, s, c.nodes, victims)

	// 5. The announcement: the pod itself is nominated to its node.
	note := pl.announce(ctx, pod, prof, owner, prio, s, c, len(members), len(victims))
	return nominate(s.nodes[c.nodes[0]].obj.Name), fwk.NewStatus(fwk.Success, note)
}

// nominate is the PostFilter result that nominates the pod to node.
func nominate(node string) *fwk.PostFilterResult {
	return &fwk.PostFilterResult{NominatingInfo: &fwk.NominatingInfo{NominatedNodeName: node, NominatingMode: fwk.ModeOverride}}
}

// reclaimer says which running pods give back room lent to the preemptor whatever
// their priority: preemptible pods on nodes where the preemptor's own reservations
// hold room borrowed it (Backfill), and preemptible pods that borrow a HardwareTier
// the preemptor's tenant is admitted to. Nil when there are none to ask about.
func (pl *Plugin) reclaimer(pod *corev1.Pod, infos []fwk.NodeInfo) func(*corev1.Pod) bool {
	reserved := pl.reserved.NodesFor(pod)
	var tierBorrow func(victim, preemptor *corev1.Pod, node *corev1.Node) bool
	if r := pl.tiers.For(pl.handle.ProfileName()); r != nil {
		tierBorrow = r.BorrowsFrom
	}
	if len(reserved) == 0 && tierBorrow == nil {
		return nil
	}
	nodeObj := make(map[string]*corev1.Node, len(infos))
	for _, ni := range infos {
		nodeObj[ni.Node().Name] = ni.Node()
	}
	return func(v *corev1.Pod) bool {
		if reserved[v.Spec.NodeName] && pl.reserved.Borrows(v) {
			return true
		}
		n := nodeObj[v.Spec.NodeName]
		return tierBorrow != nil && n != nil && tierBorrow(v, pod, n)
	}
}

// evictable says whether a running pod may go for a preemptor of this profile and
// priority: not one already chosen or being evicted, not one of its own gang, not
// one of equal or higher priority, none within the minimum runtime it declares
// against a preemptor of its own tenant tier or a lower one (unless it holds room
// lent to the preemptor), and no service for batch or training unless
// preemptServicesForBatch is set.
func (pl *Plugin) evictable(prof workload.Profile, prio int32, reclaim func(*corev1.Pod) bool) candidate {
	chosen, now := pl.chosen(), time.Now()
	return func(v *corev1.Pod, vp workload.Profile, vprio int32) bool {
		// Victims already chosen go anyway, and their room is claimed.
		if v.DeletionTimestamp != nil || chosen[v.UID] || marked(v) {
			return false
		}
		// Lent room goes back to its owner, whatever the borrower is.
		if reclaim != nil && reclaim(v) {
			return true
		}
		return workload.MayPreempt(prof, prio, vp, vprio, *pl.args.PreemptServicesForBatch) && !inMinRuntime(v, pl.tenantTierOf, prof, now)
	}
}

// tenantTierOf is a victim's tenant tier as ProfileClassifier reads the
// preemptor's (bronze without the tier rules: unit tests).
func (pl *Plugin) tenantTierOf(p *corev1.Pod) v1alpha1.TenantTier {
	if pl.tiers == nil {
		return v1alpha1.TenantTierBronze
	}
	return pl.tiers.TenantTierOf(p)
}

// inMinRuntime: the victim declares a minimum runtime it has not reached, and the
// preemptor's tenant tier is not above the victim's (tierOf).
func inMinRuntime(v *corev1.Pod, tierOf func(*corev1.Pod) v1alpha1.TenantTier, by workload.Profile, now time.Time) bool {
	if _, ok := v.Annotations[v1alpha1.AnnotationMinRuntime]; !ok {
		return false
	}
	c, _ := workload.CheckpointingOf(v)
	return c.Protected(workload.StartOf(v), now, tierOf(v), by.Tier)
}

// commit records the preemption under way for owner: the victims, and the node
// each member is to take once they are gone, until the grace period ends; and it
// nominates the members other than pod (nominated by the PostFilter result) to
// their nodes (nodes: each member's, by index into the search).
func (pl *Plugin) commit(owner string, pod *corev1.Pod, s *search, nodes []int, victims []*corev1.Pod) {
	claims := make([]claim, 0, len(s.members))
	for i, m := range s.members {
		claims = append(claims, claim{pod: m.pod, node: s.nodes[nodes[i]].obj.Name, req: m.req})
	}
	grace := time.Duration(*pl.args.VictimGraceSeconds) * time.Second
	until := time.Now().Add(grace)
	pl.mu.Lock()
	pl.inflight[owner] = &preemption{victims: victims, claims: claims, until: until}
	pl.mu.Unlock()
	// The room its victims free is the gang's: it does not yield it to gangs ahead
	// that wait for room (Coscheduling).
	if m, ok, err := pl.gangs.Of(pod); err == nil && ok && pl.gangs != nil {
		pl.gangs.RoomMadeFor(m.Key, until)
	}
	pl.activateAfter(grace+time.Second, claims)
	// Nominated, the room is the members' also in every other pod's Filter
	// (kube-scheduler counts pods nominated to a node that do not rank below the
	// pod) and in other gangs' plans (NetworkFabric): without it, gangs that had
	// not preempted took part of it, found no room for the rest in their plan and
	// were rejected into their backoff, and the preemptor chose again.
	for _, cl := range claims {
		if cl.pod.UID != pod.UID {
			pl.nominate(cl.pod, cl.node)
		}
	}
}

// nominate records pod as nominated to node in the scheduler's nominator ("":
// clears its nomination).
func (pl *Plugin) nominate(pod *corev1.Pod, node string) {
	pl.handle.AddNominatedPod(klog.Background(), &schedframework.PodInfo{Pod: pod}, &fwk.NominatingInfo{NominatedNodeName: node, NominatingMode: fwk.ModeOverride})
}

// unnominate clears the nominations of a forgotten preemption's members that are
// still unbound: the room is no longer held for them.
func (pl *Plugin) unnominate(claims []claim) {
	for _, c := range claims {
		if !pl.bound(c.pod) {
			pl.nominate(c.pod, "")
		}
	}
}

// announce says what is being evicted for whom, as an event on the pod (its
// PodGroup's, for a gang) and a log line, hands the victims to the evictor, and
// returns the note.
func (pl *Plugin) announce(ctx context.Context, pod *corev1.Pod, prof workload.Profile, owner string, prio int32, s *search, c *choice, members, victims int) string {
	who := fmt.Sprintf("%s %s/%s (priority %d)", strings.SplitN(owner, " ", 2)[0], pod.Namespace, ownerName(pod, prof), prio)
	places := map[string]bool{}
	for _, ni := range c.nodes {
		places[s.nodes[ni].obj.Name] = true
	}
	note := fmt.Sprintf("evicting %s to place %d member(s) of %s on %s", summary(c.victims), members, who, strings.Join(sortedKeys(places), ", "))
	klog.FromContext(ctx).V(2).Info("GangPreemption", "preemptor", klog.KObj(pod), "victims", victims, "decision", note)
	pl.record(pod, prof, corev1.EventTypeNormal, "Preempting", "Preempting", note)
	pl.evictor.evict(c.victims, fmt.Sprintf("%s: preempted by %s", markerPrefix, who), pod)
	return note
}

func ownerName(pod *corev1.Pod, prof workload.Profile) string {
	if prof.Gang != nil {
		return prof.Gang.Key.Name
	}
	return pod.Name
}

func unitKind(u *unit) string {
	if u.shed != nil {
		return "shed"
	}
	if u.gang != nil {
		return "gang"
	}
	return "pod"
}

// record posts an event on the preemptor's PodGroup (or the pod, outside a gang).
func (pl *Plugin) record(pod *corev1.Pod, prof workload.Profile, eventType, reason, action, note string) {
	r := pl.handle.EventRecorder()
	if r == nil {
		return
	}
	if prof.Gang != nil {
		r.Eventf(gangs.PodGroupRef(prof.Gang.Key, pl.crds.PodGroup(prof.Gang.Key)), pod, eventType, reason, action, "%s", note)
		return
	}
	r.Eventf(pod, nil, eventType, reason, action, "%s", note)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// consolidateInstead is PostFilter's last resort when preemption chose nothing
// (tried: there were candidates): consolidation over the pods that may move
// (movers, found here when preemption had candidates), else the reason for the
// pod's status.
func (pl *Plugin) consolidateInstead(ctx context.Context, pod *corev1.Pod, prof workload.Profile, owner string, prio int32, s *search, running []*corev1.Pod, priority priorityFunc, tried bool, movers []*unit) (*fwk.PostFilterResult, *fwk.Status) {
	why := "preemption: no running pod or gang of lower priority may be evicted for it"
	if tried {
		why = fmt.Sprintf("preemption found no lower-priority gangs or pods whose eviction makes room for %d member(s) (PodDisruptionBudgets respected)", len(s.members))
		if *pl.args.Consolidation.Enabled {
			movers = pl.movables(running, prof, prio, priority, time.Now())
		}
	}
	if len(movers) > 0 {
		res, st, not := pl.consolidate(ctx, pod, prof, owner, prio, s, movers)
		if st != nil {
			return res, st
		}
		why += "; consolidation: " + not
	}
	preemptions.WithLabelValues("NoVictims").Inc()
	return nil, fwk.NewStatus(fwk.Unschedulable, why)
}

// fitAlready answers for members that fit (at) without evicting anything new:
// they claim the room pods evicted for other preemptors leave beyond those
// preemptors' needs when that is what they fit, else preemption would not help.
func (pl *Plugin) fitAlready(ctx context.Context, owner string, pod *corev1.Pod, s *search, at []int, evicting []*corev1.Pod) (*fwk.PostFilterResult, *fwk.Status) {
	if going := s.waitsFor(at, evicting); len(going) > 0 {
		// The members fit the room that pods evicted for other preemptors
		// leave beyond what those need: they claim it and wait for those pods
		// to go, as if they had chosen them. Refusing here put the gang into
		// its backoff while its room was on the way (a stall of a backoff at the
		// end of a run of preemptions).
		pl.commit(owner, pod, s, at, going)
		preemptions.WithLabelValues("Adopted").Inc()
		msg := fmt.Sprintf("waiting for %d pod(s) evicted for another preemption to terminate: the room they leave beyond its needs is held for %d member(s)", len(going), len(s.members))
		klog.FromContext(ctx).V(2).Info("GangPreemption", "preemptor", klog.KObj(pod), "victims", 0, "decision", msg)
		return nominate(s.nodes[at[0]].obj.Name), fwk.NewStatus(fwk.Success, msg)
	}
	// Room exists by the resources; something preemption cannot change keeps
	// the pod out (affinity, topology, ports, volumes).
	return nil, fwk.NewStatus(fwk.Unschedulable, "preemption would not help: the members fit by their requests; another constraint refuses them")
}
