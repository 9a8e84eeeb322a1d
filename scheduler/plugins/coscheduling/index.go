package coscheduling

import (
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	toolscache "k8s.io/client-go/tools/cache"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/podobj"
)

// gangEntry is everything the plugin knows about one gang. Member counts are kept
// incrementally from pod events, so that every lookup in a scheduling cycle is O(1)
// and a gang of N members costs O(N) in total, not O(N²).
type gangEntry struct {
	key gang.Key
	// firstSeen orders gangs in the queue; it never changes once set.
	firstSeen time.Time
	// labelMin is the quorum stated by the members' labels (0 for object dialects).
	labelMin int32
	// priorityClass is the PodGroup's spec.priorityClassName and priority its value
	// (nil: it names none, or one that does not exist). The gang's priority is that
	// value capped at its lowest member's own (queuePriority).
	priorityClass string
	priority      *int32
	// ownPriorities counts the members by their own priority (spec.priority, as the
	// API server admitted them): the cap on the gang's priority.
	ownPriorities map[int32]int

	// members are the gang's non-terminal pods of this scheduler profile.
	members map[types.UID]*corev1.Pod
	// ungated counts members without scheduling gates, and roleUngated counts them by
	// role (workload.RoleOf; members without a role are not counted there): the
	// PodGroup's per-role minimums are checked against it.
	ungated     int
	roleUngated map[string]int
	// subgrouped counts members that belong to a subgroup (workload.SubgroupOf): a
	// LeaderWorkerSet group, released only whole.
	subgrouped int
	// assigned are members bound to a node.
	assigned sets.Set[types.UID]

	// assumed are members reserved in this scheduler and waiting at Permit.
	assumed sets.Set[types.UID]
	// allowed are members released by Permit once the quorum was reached, until
	// their binding shows up as assigned.
	allowed sets.Set[types.UID]
	// reservedOn records the node each member was reserved on (Reserve), for the
	// members assumed or allowed before their binding shows.
	reservedOn map[types.UID]string

	// backoffUntil is when a rejected gang may be tried again, and lastRejection
	// why it was rejected (members in backoff report it).
	backoffUntil  time.Time
	lastRejection string
	// activated is set once the gang's waiting members were activated for the
	// current attempt; a rejection clears it.
	activated bool
}

func newGangEntry(key gang.Key, now time.Time) *gangEntry {
	return &gangEntry{
		key:           key,
		firstSeen:     now,
		members:       map[types.UID]*corev1.Pod{},
		assigned:      sets.New[types.UID](),
		assumed:       sets.New[types.UID](),
		allowed:       sets.New[types.UID](),
		ownPriorities: map[int32]int{},
	}
}

// queuePriority is the gang's priority in the queue and for preemption: its
// PodGroup's PriorityClass value, capped at the lowest own priority among its
// members, so that naming a class in a PodGroup (which anyone who may create one
// can do) orders the gang as one block but never lifts it above what its pods were
// admitted with. ok is false when the PodGroup names no class that exists (each
// member's own priority applies) or no member is known yet.
func (e *gangEntry) queuePriority() (v int32, ok bool) {
	if e.priority == nil || len(e.ownPriorities) == 0 {
		return 0, false
	}
	v = *e.priority
	for p := range e.ownPriorities {
		v = min(v, p)
	}
	return v, true
}

// countRole adds delta to the ungated members of role (a member without a role is
// not counted).
func (e *gangEntry) countRole(role string, delta int) {
	if role == "" {
		return
	}
	if e.roleUngated == nil {
		e.roleUngated = map[string]int{}
	}
	if n := e.roleUngated[role] + delta; n > 0 {
		e.roleUngated[role] = n
	} else {
		delete(e.roleUngated, role)
	}
}

// placedRoles counts by role the members bound, permitted or reserved, counting pod
// (when not nil) as reserved if the index has not delivered it yet.
func (e *gangEntry) placedRoles(pod *corev1.Pod) map[string]int {
	have := map[string]int{}
	for uid, p := range e.members {
		if e.assigned.Has(uid) || e.assumed.Has(uid) || e.allowed.Has(uid) {
			have[string(workload.RoleOf(p))]++
		}
	}
	if pod == nil {
		return have
	}
	if _, counted := e.members[pod.UID]; !counted {
		have[string(workload.RoleOf(pod))]++
	}
	return have
}

// placed counts members bound, permitted or reserved: the gang's progress.
func (e *gangEntry) placed() int {
	n := len(e.assigned)
	for uid := range e.assumed {
		if !e.assigned.Has(uid) {
			n++
		}
	}
	for uid := range e.allowed {
		if !e.assigned.Has(uid) && !e.assumed.Has(uid) {
			n++
		}
	}
	return n
}

// placedNodes returns the nodes of the members bound, waiting at Permit or
// permitted (a node once per member), of those keep accepts (nil: all).
func (e *gangEntry) placedNodes(keep func(*corev1.Pod) bool) []string {
	var out []string
	for uid, p := range e.members {
		if e.assigned.Has(uid) && p.Spec.NodeName != "" && (keep == nil || keep(p)) {
			out = append(out, p.Spec.NodeName)
		}
	}
	for uid, n := range e.reservedOn {
		if !e.assigned.Has(uid) && (e.assumed.Has(uid) || e.allowed.Has(uid)) && (keep == nil || (e.members[uid] != nil && keep(e.members[uid]))) {
			out = append(out, n)
		}
	}
	return out
}

// pending returns the members that still need a scheduling attempt.
func (e *gangEntry) pending() map[string]*corev1.Pod {
	out := map[string]*corev1.Pod{}
	for uid, p := range e.members {
		if e.assigned.Has(uid) || e.assumed.Has(uid) || e.allowed.Has(uid) || gang.IsGated(p) {
			continue
		}
		out[p.Namespace+"/"+p.Name] = p
	}
	return out
}

// podIndex maps pods to gangs. It is fed by the scheduler's shared pod informer.
type podIndex struct {
	mu      sync.RWMutex
	gangs   map[gang.Key]*gangEntry
	podGang map[types.UID]gang.Key
	// schedulerName limits the index to pods of this profile.
	schedulerName string
	now           func() time.Time
	// onChange is called, without the lock held, when a pod joined a gang or its
	// scheduling gates were lifted (used to activate a gang that just reached its
	// quorum).
	onChange func(memberChange)
	// held are members PreEnqueue or PreFilter last turned away because their gang
	// had no quorum yet (a later check that finds the quorum lets them go): they
	// wait in the queue's unschedulable pool for an activation.
	held sets.Set[types.UID]
	// priority resolves a new gang's PodGroup priority.
	priority gangPriority
}

func newPodIndex(schedulerName string, now func() time.Time) *podIndex {
	return &podIndex{
		gangs:         map[gang.Key]*gangEntry{},
		podGang:       map[types.UID]gang.Key{},
		held:          sets.New[types.UID](),
		schedulerName: schedulerName,
		now:           now,
	}
}

// handler is the informer event handler that keeps the index current.
func (x *podIndex) handler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { x.upsert(podobj.From(obj)) },
		UpdateFunc: func(_, obj any) { x.upsert(podobj.From(obj)) },
		DeleteFunc: func(obj any) { x.remove(podobj.From(obj)) },
	}
}

func (x *podIndex) upsert(pod *corev1.Pod) {
	if pod == nil {
		return
	}
	m, ok, err := gang.Of(pod)
	if pod.Spec.SchedulerName != x.schedulerName || err != nil || !ok || workload.Finished(pod) {
		x.remove(pod)
		return
	}
	x.mu.Lock()
	if old, found := x.podGang[pod.UID]; found && old != m.Key {
		x.removeLocked(pod.UID)
	}
	e := x.gangs[m.Key]
	if e == nil {
		e = newGangEntry(m.Key, x.now())
		e.priorityClass, e.priority = x.priority.resolve(m.Key)
		x.gangs[m.Key] = e
	}
	e.labelMin = m.MinMember
	prev, existed := e.members[pod.UID]
	if !existed || gang.IsGated(prev) != gang.IsGated(pod) {
		switch {
		case !gang.IsGated(pod):
			e.ungated++
		case existed:
			e.ungated--
		}
	}
	role := string(workload.RoleOf(pod))
	roleChanged := false
	if existed && !gang.IsGated(prev) {
		prevRole := string(workload.RoleOf(prev))
		roleChanged = prevRole != role && !gang.IsGated(pod)
		e.countRole(prevRole, -1)
	}
	if !gang.IsGated(pod) {
		e.countRole(role, 1)
	}
	if existed && inSubgroup(prev) {
		e.subgrouped--
	}
	if inSubgroup(pod) {
		e.subgrouped++
	}
	if !existed {
		// A pod's priority is immutable: counted once, when it joins.
		e.ownPriorities[corev1helpers.PodPriority(pod)]++
	}
	e.members[pod.UID] = pod
	x.podGang[pod.UID] = m.Key
	if pod.Spec.NodeName != "" {
		e.assigned.Insert(pod.UID)
		e.assumed.Delete(pod.UID)
		e.allowed.Delete(pod.UID)
		x.held.Delete(pod.UID)
	}
	notify := !existed || gang.IsGated(prev) != gang.IsGated(pod) || roleChanged
	change := memberChange{key: m.Key, labelMin: m.MinMember, ungated: e.ungated, pod: pod, roleChanged: roleChanged}
	if notify && len(e.roleUngated) > 0 {
		change.roles = maps.Clone(e.roleUngated)
	}
	x.mu.Unlock()
	if notify && x.onChange != nil {
		x.onChange(change)
	}
}

// memberChange is one pod joining its gang, or losing its scheduling gates.
type memberChange struct {
	key      gang.Key
	labelMin int32
	// ungated is the gang's count of ungated members right after the change: the
	// change that makes it equal the quorum is the one that completes the gang.
	ungated int
	// roles are the gang's ungated members by role right after the change (nil when
	// no member has a role).
	roles map[string]int
	// roleChanged: the pod was an ungated member already and its role changed.
	roleChanged bool
	pod         *corev1.Pod
}

// hold records that the member was turned away for want of a quorum.
func (x *podIndex) hold(uid types.UID) {
	x.mu.Lock()
	x.held.Insert(uid)
	x.mu.Unlock()
}

// gangOf returns the gang the index files the pod under, if any.
func (x *podIndex) gangOf(uid types.UID) (gang.Key, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	k, ok := x.podGang[uid]
	return k, ok
}

// isHeld reports whether the member was turned away for want of a quorum and has
// not been let in since.
func (x *podIndex) isHeld(uid types.UID) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.held.Has(uid)
}

// release reports whether the member was held for want of a quorum, and forgets it.
func (x *podIndex) release(uid types.UID) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.held.Has(uid) {
		return false
	}
	x.held.Delete(uid)
	return true
}

func (x *podIndex) remove(pod *corev1.Pod) {
	if pod == nil {
		return
	}
	x.mu.Lock()
	x.removeLocked(pod.UID)
	x.mu.Unlock()
}

func (x *podIndex) removeLocked(uid types.UID) {
	x.held.Delete(uid)
	key, found := x.podGang[uid]
	if !found {
		return
	}
	delete(x.podGang, uid)
	e := x.gangs[key]
	if e == nil {
		return
	}
	if p, ok := e.members[uid]; ok {
		if !gang.IsGated(p) {
			e.ungated--
			e.countRole(string(workload.RoleOf(p)), -1)
		}
		if inSubgroup(p) {
			e.subgrouped--
		}
		own := corev1helpers.PodPriority(p)
		if e.ownPriorities[own]--; e.ownPriorities[own] <= 0 {
			delete(e.ownPriorities, own)
		}
		delete(e.members, uid)
	}
	e.assigned.Delete(uid)
	e.assumed.Delete(uid)
	e.allowed.Delete(uid)
	delete(e.reservedOn, uid)
	if len(e.members) == 0 && len(e.assumed) == 0 && len(e.allowed) == 0 {
		delete(x.gangs, key)
	}
}

// get returns the gang's entry (nil if unknown); callers hold x.mu.
func (x *podIndex) get(key gang.Key) *gangEntry { return x.gangs[key] }
