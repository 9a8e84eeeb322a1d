// Package gangpreemption is the PostFilter that makes room for a pod or a gang that
// fits nowhere: it evicts whole lower-priority gangs (every member, never part of
// one) and lower-priority pods, through the Eviction API so that
// PodDisruptionBudgets hold, choosing the cheapest set (least GPU time thrown away,
// then lowest priority, then fewest pods), and nominates the preemptor. It replaces
// DefaultPreemption in a KubeNexus profile, with the same guarantees for plain pods.
package gangpreemption

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	policylisters "k8s.io/client-go/listers/policy/v1"
	schedulinglisters "k8s.io/client-go/listers/scheduling/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedframework "k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/apis/config"
	"github.com/kube-nexus/kubenexus/scheduler/crdcache"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/gangs"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/gangview"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/nodefree"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/names"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/profileclassifier"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/resourcereservation"
)

// Name is the plugin's registered name.
const Name = names.GangPreemption

// Plugin is the GangPreemption plugin.
type Plugin struct {
	args   *config.GangPreemptionArgs
	handle fwk.Handle
	crds   *crdcache.Cache
	views  *gangview.Registry
	// gangs is the profile's gang record: a gang's members and queue priority (nil in
	// unit tests).
	gangs    *gangs.Service
	pdbs     policylisters.PodDisruptionBudgetLister
	classes  schedulinglisters.PriorityClassLister
	evictor  *evictor
	gpuNames []corev1.ResourceName

	// reserved are the ResourceReservations: capacity Backfill lent to preemptible
	// pods on an owner's reservation is taken back for the owner.
	reserved *resourcereservation.Shared

	// profiles: the running pods' classification, kept between PostFilters.
	profiles profiles

	mu sync.Mutex
	// inflight are the preemptions whose victims may still be running, by
	// preemptor (its gang, or the pod): further members do not evict more until
	// those are gone or the grace passed.
	inflight map[string]*preemption
}

type preemption struct {
	victims []*corev1.Pod
	// claims are the members the room was made for, each with its node: until they
	// are bound, other preemptors count that room as taken.
	claims []claim
	until  time.Time
}

type claim struct {
	pod  *corev1.Pod
	node string
	req  map[corev1.ResourceName]int64
}

var _ fwk.PostFilterPlugin = &Plugin{}

// New builds the plugin and starts its evictor, which also finishes evictions a
// previous scheduler process began (see evictor).
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, crds *crdcache.Provider, members *gangs.Service, views *gangview.Registry, reservations *resourcereservation.Shared) (*Plugin, error) {
	args, err := config.DecodeGangPreemptionArgs(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	c, err := crds.Get(ctx, h.KubeConfig())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	informers := h.SharedInformerFactory()
	ev, err := startEvictor(ctx, h)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	RegisterMetrics()
	return &Plugin{
		args:     args,
		handle:   h,
		crds:     c,
		views:    views,
		gangs:    members,
		pdbs:     informers.Policy().V1().PodDisruptionBudgets().Lister(),
		classes:  informers.Scheduling().V1().PriorityClasses().Lister(),
		evictor:  ev,
		gpuNames: args.GPUResources,
		inflight: map[string]*preemption{},
		reserved: reservations,
	}, nil
}

// Name returns the plugin's name.
func (pl *Plugin) Name() string { return Name }

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
	done()
	if len(candidates) == 0 {
		preemptions.WithLabelValues("NoVictims").Inc()
		return nil, fwk.NewStatus(fwk.Unschedulable, "preemption: no running pod or gang of lower priority may be evicted for it")
	}

	// 3. The choice: the members still without a node are placed on the room the
	// cheapest set of candidates frees (select.go).
	members := pl.members(pod, prof)
	claimed, evicting, expired := pl.claimed(owner)
	pl.unnominate(expired)
	s := pl.newSearch(infos, members, claimed)
	if at := s.place(nil, nil); at != nil {
		if going := s.waitsFor(at, evicting); len(going) > 0 {
			// The members fit the room that pods evicted for other preemptors
			// leave beyond what those need: they claim it and wait for those pods
			// to go, as if they had chosen them. Refusing here put the gang into
			// its backoff while its room was on the way (W6 of make bench: a
			// 3.8 s stall at the end of a run).
			pl.commit(owner, pod, s, at, going)
			preemptions.WithLabelValues("Adopted").Inc()
			msg := fmt.Sprintf("waiting for %d pod(s) evicted for another preemption to terminate: the room they leave beyond its needs is held for %d member(s)", len(going), len(members))
			klog.FromContext(ctx).V(2).Info("GangPreemption", "preemptor", klog.KObj(pod), "victims", 0, "decision", msg)
			return nominate(s.nodes[at[0]].obj.Name), fwk.NewStatus(fwk.Success, msg)
		}
		// Room exists by the resources; something preemption cannot change keeps
		// the pod out (affinity, topology, ports, volumes).
		return nil, fwk.NewStatus(fwk.Unschedulable, "preemption would not help: the members fit by their requests; another constraint refuses them")
	}
	c := s.choose(candidates)
	if c == nil {
		preemptions.WithLabelValues("NoVictims").Inc()
		return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("preemption found no lower-priority gangs or pods whose eviction makes room for %d member(s) (PodDisruptionBudgets respected)", len(members)))
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
	var tierBorrow gangview.TierBorrowFunc
	if pl.views != nil {
		tierBorrow = pl.views.TierBorrow(pl.handle.ProfileName())
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
// one of equal or higher priority (unless it holds room lent to the preemptor),
// and no service for batch or training unless preemptServicesForBatch is set.
func (pl *Plugin) evictable(prof workload.Profile, prio int32, reclaim func(*corev1.Pod) bool) candidate {
	batch := prof.Class == v1alpha1.WorkloadClassBatch || prof.Class == v1alpha1.WorkloadClassTraining
	chosen := pl.chosen()
	return func(v *corev1.Pod, vp workload.Profile, vprio int32) bool {
		// Victims already chosen go anyway, and their room is claimed.
		if v.DeletionTimestamp != nil || chosen[v.UID] || marked(v) {
			return false
		}
		// Lent room goes back to its owner, whatever the borrower is.
		if reclaim != nil && reclaim(v) {
			return true
		}
		if vprio >= prio {
			return false
		}
		if prof.Gang != nil && vp.Gang != nil && vp.Gang.Key == prof.Gang.Key {
			return false
		}
		if batch && !*pl.args.PreemptServicesForBatch && isService(vp.Class) {
			return false
		}
		return true
	}
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
	pl.mu.Lock()
	pl.inflight[owner] = &preemption{victims: victims, claims: claims, until: time.Now().Add(grace)}
	pl.mu.Unlock()
	pl.activateAfter(grace+time.Second, claims)
	// Nominated, the room is the members' also in every other pod's Filter
	// (kube-scheduler counts pods nominated to a node that do not rank below the
	// pod) and in other gangs' plans (NetworkFabric): without it, gangs that had
	// not preempted took part of it, found no room for the rest in their plan and
	// were rejected into their backoff, and the preemptor chose again (W6 of make
	// bench).
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
	if u.gang != nil {
		return "gang"
	}
	return "pod"
}

func isService(c v1alpha1.WorkloadClass) bool {
	return c == v1alpha1.WorkloadClassService || c == v1alpha1.WorkloadClassInference || c == v1alpha1.WorkloadClassInteractive
}

// waiting says why the preemptor must not evict more: within the grace, pods it
// evicted are still there, or members it made room for are not placed yet while
// that room is still free (they go to the room, not to new victims). node is the
// node the room was made on for pod, if it is one of those members. Once the room
// is gone to others, the preemption is forgotten and the gang may choose again:
// dropped are then its claims, whose members' nominations the caller clears.
func (pl *Plugin) waiting(owner string, pod *corev1.Pod) (msg, node string, dropped []claim) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	p := pl.inflight[owner]
	if p == nil {
		return "", "", nil
	}
	if time.Now().After(p.until) {
		delete(pl.inflight, owner)
		return "", "", p.claims
	}
	// A victim is gone once neither the informer nor this cycle's snapshot holds
	// it: the informer drops a deleted pod before the scheduler's cache does, and
	// until the snapshot frees its room the members cannot take it — judging the
	// room by then would call it taken and evict again.
	left := pl.victimsThere(p)
	open := 0
	var unplaced []claim
	for _, c := range p.claims {
		if c.pod.UID == pod.UID {
			node = c.node
		}
		if pl.exists(c.pod) && !pl.bound(c.pod) {
			open++
			if !pl.placedOnClaimed(c.pod, p.claims) {
				unplaced = append(unplaced, c)
			}
		}
	}
	switch {
	case left > 0:
		return fmt.Sprintf("waiting for %d preempted pod(s) to terminate", left), node, nil
	case open > 0 && pl.roomHolds(unplaced, p.claims):
		return fmt.Sprintf("waiting for %d member(s) to take the room preemption made", open), node, nil
	}
	// Done, or the room was taken by others meanwhile: the gang may choose again.
	delete(pl.inflight, owner)
	return "", "", p.claims
}

// victimsThere counts the preemption's victims the informer or this cycle's
// snapshot still holds.
func (pl *Plugin) victimsThere(p *preemption) int {
	left := 0
	for _, v := range p.victims {
		if pl.exists(v) || pl.inSnapshot(v) {
			left++
		}
	}
	return left
}

// placedOnClaimed reports whether the pod is in the snapshot (assumed or waiting at
// Permit) on one of the preemption's claimed nodes: members need not take the very
// node their claim names, and one that took another member's claimed node has taken
// that room, not lost its own.
func (pl *Plugin) placedOnClaimed(p *corev1.Pod, claims []claim) bool {
	seen := map[string]bool{}
	for _, c := range claims {
		if seen[c.node] {
			continue
		}
		seen[c.node] = true
		ni, err := pl.handle.SnapshotSharedLister().NodeInfos().Get(c.node)
		if err != nil {
			continue
		}
		for _, q := range ni.GetPods() {
			if q.GetPod().UID == p.UID {
				return true
			}
		}
	}
	return false
}

// roomHolds reports whether the members not placed yet still fit the free room of
// the preemption's claimed nodes, each on its own claimed node first, else on any of
// them. The room preemption made is the claimed nodes' together: members placed on
// each other's nodes must not make it look taken and trigger a second preemption.
func (pl *Plugin) roomHolds(unplaced, claims []claim) bool {
	free := map[string]map[corev1.ResourceName]int64{}
	for _, c := range claims {
		if _, ok := free[c.node]; ok {
			continue
		}
		free[c.node] = nil
		if ni, err := pl.handle.SnapshotSharedLister().NodeInfos().Get(c.node); err == nil {
			free[c.node] = nodefree.All(ni)
		}
	}
	take := func(node string, req map[corev1.ResourceName]int64) bool {
		room := free[node]
		if room == nil {
			return false
		}
		for name, v := range req {
			if room[name] < v {
				return false
			}
		}
		for name, v := range req {
			room[name] -= v
		}
		return true
	}
	for _, m := range unplaced {
		if take(m.node, m.req) {
			continue
		}
		if !slices.ContainsFunc(claims, func(c claim) bool { return c.node != m.node && take(c.node, m.req) }) {
			return false
		}
	}
	return true
}

// bound reports whether the pod is bound, by the informer cache.
func (pl *Plugin) bound(p *corev1.Pod) bool {
	cur, err := pl.handle.SharedInformerFactory().Core().V1().Pods().Lister().Pods(p.Namespace).Get(p.Name)
	return err == nil && cur.UID == p.UID && cur.Spec.NodeName != ""
}

// chosen returns the victims of the preemptions in flight.
func (pl *Plugin) chosen() map[types.UID]bool {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	out := map[types.UID]bool{}
	for _, p := range pl.inflight {
		for _, v := range p.victims {
			out[v.UID] = true
		}
	}
	return out
}

// inSnapshot reports whether the pod (that incarnation) is on its node in this
// cycle's snapshot.
func (pl *Plugin) inSnapshot(p *corev1.Pod) bool {
	ni, err := pl.handle.SnapshotSharedLister().NodeInfos().Get(p.Spec.NodeName)
	if err != nil {
		return false
	}
	for _, pi := range ni.GetPods() {
		if pi.GetPod().UID == p.UID {
			return true
		}
	}
	return false
}

// exists reports whether the pod (that incarnation) is in the informer cache.
func (pl *Plugin) exists(p *corev1.Pod) bool {
	cur, err := pl.handle.SharedInformerFactory().Core().V1().Pods().Lister().Pods(p.Namespace).Get(p.Name)
	return err == nil && cur.UID == p.UID
}

// claimed is the room other preemptors made and their members have not taken yet,
// per node: their open claims, less what their victims still in this cycle's
// snapshot hold — that room is not free in the snapshot yet, and counting it as
// claimed too would make it look taken twice. evicting are those victims (each
// once, also when two preemptions wait for it). A preemption is forgotten
// once its grace passed (expired: its claims, whose members' nominations the
// caller clears) or its members are all bound or gone.
func (pl *Plugin) claimed(owner string) (out nodefree.Tally[string], evicting []*corev1.Pod, expired []claim) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	out = nodefree.Tally[string]{}
	counted := map[types.UID]bool{}
	lister := pl.handle.SharedInformerFactory().Core().V1().Pods().Lister()
	now := time.Now()
	for o, p := range pl.inflight {
		if now.After(p.until) {
			delete(pl.inflight, o)
			expired = append(expired, p.claims...)
			continue
		}
		open := 0
		for _, c := range p.claims {
			cur, err := lister.Pods(c.pod.Namespace).Get(c.pod.Name)
			if err != nil || cur.UID != c.pod.UID || cur.Spec.NodeName != "" {
				continue
			}
			open++
			if o != owner {
				out.AddPod(c.node, c.req, 1)
			}
		}
		if open == 0 {
			delete(pl.inflight, o)
			continue
		}
		if o != owner {
			for _, v := range p.victims {
				if !counted[v.UID] && pl.inSnapshot(v) {
					counted[v.UID] = true
					out.AddPod(v.Spec.NodeName, nodefree.Requests(v), -1)
					evicting = append(evicting, v)
				}
			}
		}
	}
	return out, evicting, expired
}

// members returns the pods to make room for: the pod, and for a gang member the
// gang's other members that still need a node, up to its quorum.
func (pl *Plugin) members(pod *corev1.Pod, prof workload.Profile) []*corev1.Pod {
	out := []*corev1.Pod{pod}
	if prof.Gang == nil || pl.gangs == nil {
		return out
	}
	key := prof.Gang.Key
	minMember := prof.Gang.MinMember
	var roles map[string]int32
	if pg := pl.crds.PodGroup(key); pg != nil {
		if minMember == 0 {
			minMember = pg.Spec.MinMember
		}
		roles = pg.Spec.MinMemberPerRole
	}
	need := int(minMember) - len(pl.gangs.PlacedNodes(key))
	if need <= 1 {
		return out
	}
	others := rolesFirst(pl.gangs.Pending(key), roles)
	for _, p := range others {
		if len(out) >= need {
			break
		}
		if p.UID != pod.UID {
			out = append(out, p)
		}
	}
	return out
}

// rolesFirst orders a gang's pending members by name, except that for each role of
// the PodGroup's minMemberPerRole the first members up to its minimum come first:
// the room preemption makes must hold the members every role needs, not only
// minMember of any role.
func rolesFirst(pods []*corev1.Pod, roles map[string]int32) []*corev1.Pod {
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	if len(roles) == 0 {
		return pods
	}
	taken := map[string]int32{}
	first := make([]*corev1.Pod, 0, len(pods))
	var rest []*corev1.Pod
	for _, p := range pods {
		role := string(workload.RoleOf(p))
		if want, ok := roles[role]; ok && taken[role] < want {
			taken[role]++
			first = append(first, p)
			continue
		}
		rest = append(rest, p)
	}
	return append(first, rest...)
}

// newSearch builds the search over the snapshot: every node's free room, the
// members' eligible nodes and the PodDisruptionBudgets. Room other preemptors
// claimed is not free. Members with the same node constraints (a gang's usually)
// share one pass over the nodes.
func (pl *Plugin) newSearch(infos []fwk.NodeInfo, pods []*corev1.Pod, claimed nodefree.Tally[string]) *search {
	s := &search{byName: make(map[string]int, len(infos)), budget: map[types.UID]int32{}}
	for i, ni := range infos {
		free := nodefree.All(ni)
		for name, v := range claimed[ni.Node().Name] {
			free[name] -= v
		}
		s.nodes = append(s.nodes, node{obj: ni.Node(), free: free})
		s.byName[ni.Node().Name] = i
	}
	for _, p := range pods {
		m := member{pod: p, req: nodefree.Requests(p)}
		for _, prev := range s.members {
			if sameConstraints(prev.pod, p) {
				m.eligible = prev.eligible
				break
			}
		}
		if m.eligible == nil {
			m.eligible = map[int]bool{}
			for i, n := range s.nodes {
				if placement.Eligible(p, n.obj) {
					m.eligible[i] = true
				}
			}
		}
		s.members = append(s.members, m)
	}
	if pdbs, err := pl.pdbs.List(labels.Everything()); err == nil {
		for _, pdb := range pdbs {
			s.pdbs = append(s.pdbs, pdb)
			s.budget[pdb.UID] = pdb.Status.DisruptionsAllowed
		}
	}
	return s
}

// sameConstraints: what placement.Eligible reads is equal for both pods.
func sameConstraints(a, b *corev1.Pod) bool {
	return equality.Semantic.DeepEqual(a.Spec.NodeSelector, b.Spec.NodeSelector) &&
		equality.Semantic.DeepEqual(a.Spec.Affinity, b.Spec.Affinity) &&
		equality.Semantic.DeepEqual(a.Spec.Tolerations, b.Spec.Tolerations)
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

// priorities returns a pod's priority for preemption: the value of the
// PriorityClass its gang's PodGroup names, as Coscheduling resolved it for the queue
// (for a gang it does not know, from the PodGroup, once per gang per call), else
// the pod's own — never more than the pod's own: a PodGroup, which a tenant writes,
// can lower its members' priority or give them one value, but cannot lift a
// preemptor above what its pods were admitted with nor shield a victim.
func (pl *Plugin) priorities() priorityFunc {
	// byGang: each gang's priority, looked up once per call (nil: its pods' own).
	byGang := map[gang.Key]*int32{}
	return func(p *corev1.Pod, g *gang.Key) int32 {
		own := corev1helpers.PodPriority(p)
		if g == nil {
			return own
		}
		v, seen := byGang[*g]
		if !seen {
			v = pl.gangPriority(*g)
			byGang[*g] = v
		}
		if v != nil {
			return min(*v, own)
		}
		return own
	}
}

// gangPriority is the gang's priority as the queue orders it (the gang Service's),
// else, for a gang with no member of this profile, the value of the PriorityClass
// its PodGroup names; nil when it names none.
func (pl *Plugin) gangPriority(g gang.Key) *int32 {
	if pl.gangs != nil {
		if v, known := pl.gangs.Priority(g); known {
			return v
		}
	}
	if pg := pl.crds.PodGroup(g); pg != nil && pg.Spec.PriorityClassName != "" {
		if pc, err := pl.classes.Get(pg.Spec.PriorityClassName); err == nil {
			return &pc.Value
		}
	}
	return nil
}

// gangOf returns a pod's gang, if it is in one.
func gangOf(p *corev1.Pod) (gang.Key, bool) {
	m, ok, err := gang.Of(p)
	return m.Key, ok && err == nil
}
