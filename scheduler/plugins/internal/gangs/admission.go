package gangs

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
)

// Reasons a gang member waits before it enters the scheduling queue, shown in
// `kubectl describe pod` when PreFilter repeats them.
const (
	ErrReasonWaitingForQuorum        = "waiting for gang members"
	ErrReasonWaitingForPriorityClass = "waiting for the gang's PriorityClass"
	// ErrReasonWaitingForCache: the scheduler has just started and its KubeNexus
	// object cache (PodGroups among them) has not listed yet.
	ErrReasonWaitingForCache = "waiting for the scheduler's KubeNexus object cache to sync"
)

// Admission to the scheduling queue. In a profile that schedules gangs whole
// (Coscheduling is in it: ScheduleWhole), a gang member is held out of the queue
// (PreEnqueue) until its gang's quorum exists: minMember ungated, non-terminal
// members, and every role of the PodGroup's minMemberPerRole its minimum. The
// member that completes the quorum (counted by the Service, or seen first by the
// member-added hint) wakes the gang's held members; a PodGroup created or changed,
// its PriorityClass cache or the object cache syncing do the same. ProfileClassifier
// and Coscheduling both run Admit at PreEnqueue: ProfileClassifier first, so a
// member it holds is re-examined only for the events it registers (members
// arriving), not for the node events Coscheduling registers for the members it
// rejects later: kube-scheduler walks a held member at every event of the plugin
// that held it, which at start-up, with the members listed before the nodes, was
// nodes × members hint evaluations, the largest part of the scheduler's start-up
// for a large gang. Coscheduling's run holds the members of a
// profile without ProfileClassifier, and lets through what ProfileClassifier let
// through.

// admission is the Service's side of the hold: the PodGroups, how to wake members,
// the members held until the object cache has synced, and the member-added hint's
// memo.
type admission struct {
	// wholeGangs is set once Coscheduling is built for the profile: gangs are
	// scheduled all or nothing, so their members wait for the quorum. Without it
	// Admit lets every pod in (a profile without Coscheduling schedules pods one by
	// one, and holding them would gain nothing).
	wholeGangs atomic.Bool
	// pgs reads PodGroups (nil in unit tests: every gang is label-defined).
	pgs podGroups
	// activate moves pods to the active queue (nil in unit tests).
	activate func(map[string]*corev1.Pod)

	// cacheWait are the members (by namespace/name) held because the object cache
	// had not synced yet; they are activated once it has.
	cacheWaitMu sync.Mutex
	cacheWait   map[string]*corev1.Pod

	// added is what the member-added hint worked out about the last added pod.
	added addedMemo
	// admitted is the pod object Admit last let in, until Readmit takes it: the
	// profile's PreEnqueue plugins run one after the other under the queue's lock.
	admitted atomic.Pointer[corev1.Pod]
}

// podGroups is what admission reads of the KubeNexus object cache.
type podGroups interface {
	PodGroup(gang.Key) *v1alpha1.PodGroup
	Synced() bool
	// CompositeOf is the gang of the root CompositePodGroup that holds a Kubernetes
	// PodGroup, if any.
	CompositeOf(namespace, podGroup string) (gang.Key, bool)
}

// Quorum returns the gang's minMember and its PodGroup, if any. known is false when
// the gang is defined by a PodGroup object that does not exist (yet).
func (s *Service) Quorum(key gang.Key, labelMin int32) (minMember int32, pg *v1alpha1.PodGroup, known bool) {
	if s.adm.pgs != nil {
		if pg = s.adm.pgs.PodGroup(key); pg != nil {
			return pg.Spec.MinMember, pg, true
		}
	}
	if labelMin > 0 {
		return labelMin, nil, true
	}
	return 0, nil, false
}

// ScheduleWhole records that the profile schedules gangs all or nothing
// (Coscheduling is in it): from now on Admit holds members until their quorum.
func (s *Service) ScheduleWhole() { s.adm.wholeGangs.Store(true) }

// cacheSynced reports whether the object cache has listed (true without one).
func (s *Service) cacheSynced() bool { return s.adm.pgs == nil || s.adm.pgs.Synced() }

// Admit is the hold, run at PreEnqueue: nil lets the pod into the queue. A member
// whose PodGroup does not exist is let through to PreFilter, which says so where the
// user sees it. Members behind another system's scheduling gate are not counted
// (the scheduler does not even call PreEnqueue for them while they are gated).
func (s *Service) Admit(ctx context.Context, pod *corev1.Pod) *fwk.Status {
	st := s.admit(ctx, pod)
	if st == nil {
		s.adm.admitted.Store(pod)
	}
	return st
}

// Readmit is Admit for the profile's second PreEnqueue (Coscheduling's, after
// ProfileClassifier's): the pod object Admit has just let in is let in without a
// second look; any other is admitted afresh (a profile without ProfileClassifier).
func (s *Service) Readmit(ctx context.Context, pod *corev1.Pod) *fwk.Status {
	if s.adm.admitted.CompareAndSwap(pod, nil) {
		return nil
	}
	return s.admit(ctx, pod)
}

func (s *Service) admit(_ context.Context, pod *corev1.Pod) *fwk.Status {
	if !s.adm.wholeGangs.Load() {
		return nil
	}
	m, ok, err := s.Of(pod)
	if err != nil || !ok {
		// Malformed gang labels are refused in PreFilter, where the reason reaches the
		// pod's PodScheduled condition and events; PreEnqueue results do not.
		return nil
	}
	// The queue calls PreEnqueue under its lock: reading the PodGroup before the cache
	// has synced would wait there and stall every pod and node event of the scheduler
	// (about a second at start-up). The member is held and activated once it has synced.
	if !s.cacheSynced() && s.holdForCache(pod) {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, ErrReasonWaitingForCache)
	}
	minMember, pg, known := s.Quorum(m.Key, m.MinMember)
	if !known {
		// The gang's PodGroup does not exist. PreEnqueue results never reach the pod,
		// so the member goes on to PreFilter, which refuses it with a message that
		// reaches its PodScheduled condition and a FailedScheduling event; the
		// PodGroup's creation re-queues it.
		return nil
	}
	s.mu.RLock()
	e := s.gangs[m.Key]
	present, short := PresentMembers(e, pod), RolesShort(e, pod, pg)
	s.mu.RUnlock()
	if present < int(minMember) || len(short) > 0 {
		s.Hold(pod.UID)
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, WaitingForMembers(m.Key, present, minMember, gang.RolesOf(pg), short))
	}
	s.Release(pod.UID) // has its quorum: node events may matter to it again
	// The queue orders the gang by its PodGroup's PriorityClass: the member enters the
	// queue with the class's value as of now. Until the scheduler's PriorityClass cache
	// has synced the value is unknown, and a member queued with the wrong priority
	// would keep that place; it waits instead and is activated once the cache syncs.
	if pg != nil && pg.Spec.PriorityClassName != "" {
		if s.ClassesSynced != nil && !s.ClassesSynced() {
			return fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
				fmt.Sprintf("%s: the scheduler's PriorityClass cache is not synced yet", ErrReasonWaitingForPriorityClass))
		}
		class := pg.Spec.PriorityClassName
		s.SetPriority(m.Key, class, s.priority.value(class))
	}
	return nil
}

// holdForCache records a member Admit turned away because the object cache had not
// synced. It reports false when the cache has synced meanwhile: the member is
// decided now, since the activation that follows the sync may already have run.
func (s *Service) holdForCache(pod *corev1.Pod) bool {
	a := &s.adm
	a.cacheWaitMu.Lock()
	defer a.cacheWaitMu.Unlock()
	if s.cacheSynced() {
		return false
	}
	if a.cacheWait == nil {
		a.cacheWait = map[string]*corev1.Pod{}
	}
	a.cacheWait[pod.Namespace+"/"+pod.Name] = pod
	return true
}

// WaitsForCache reports whether the member is held until the object cache has
// synced.
func (s *Service) WaitsForCache(pod *corev1.Pod) bool {
	a := &s.adm
	a.cacheWaitMu.Lock()
	defer a.cacheWaitMu.Unlock()
	if a.cacheWait == nil {
		return false
	}
	_, ok := a.cacheWait[pod.Namespace+"/"+pod.Name]
	return ok
}

// activateHeldForCache lets in the members held until the object cache synced.
func (s *Service) activateHeldForCache() {
	a := &s.adm
	a.cacheWaitMu.Lock()
	pods := a.cacheWait
	a.cacheWait = nil
	a.cacheWaitMu.Unlock()
	s.activatePods(pods)
}

func (s *Service) activatePods(pods map[string]*corev1.Pod) {
	if len(pods) > 0 && s.adm.activate != nil {
		s.adm.activate(pods)
	}
}

// ActivateIfQuorum moves the gang's pending members to the active queue when the
// gang has its quorum, so that no member waits for an unrelated event.
func (s *Service) ActivateIfQuorum(key gang.Key) {
	if !s.adm.wholeGangs.Load() {
		return // nothing is held
	}
	s.mu.RLock()
	e := s.gangs[key]
	if e == nil {
		s.mu.RUnlock()
		return
	}
	labelMin, ungated, have := e.LabelMin, e.Ungated, maps.Clone(e.RoleUngated)
	s.mu.RUnlock()

	minMember, pg, known := s.Quorum(key, labelMin)
	if !known || !QuorumMet(minMember, gang.RolesOf(pg), ungated, have) {
		return
	}
	s.ActivatePending(key)
}

// RetryNow ends the gang's backoff and activates its pending members: a change in
// the cluster lifted what the gang's last rejection was about (a node of a
// repairing gang's held domain became schedulable again), and waiting out the
// rest of the backoff would only keep the gang's room empty.
func (s *Service) RetryNow(key gang.Key) {
	s.mu.Lock()
	if e := s.gangs[key]; e != nil {
		e.BackoffUntil = time.Time{}
	}
	s.mu.Unlock()
	s.ActivatePending(key)
}

// ActivatePending moves the gang's pending members to the active queue.
func (s *Service) ActivatePending(key gang.Key) {
	s.mu.RLock()
	var pods map[string]*corev1.Pod
	if e := s.gangs[key]; e != nil {
		pods = e.Pending()
	}
	s.mu.RUnlock()
	s.activatePods(pods)
}

// memberArrived wakes what a member's arrival (or the lifting of its scheduling
// gates) can let into scheduling. The arrival that brings the gang to its quorum
// activates every pending member. After that only a newcomer that Admit turned
// away is woken (its check ran before the Service had counted the members that make
// the quorum): the members already pending were not waiting for it, and
// re-activating them at every arrival sent an elastic gang's n pending members
// round the queue n times.
func (s *Service) memberArrived(c MemberChange) {
	if !s.adm.wholeGangs.Load() || gang.IsGated(c.Pod) {
		return
	}
	minMember, pg, known := s.Quorum(c.Key, c.LabelMin)
	roles := gang.RolesOf(pg)
	switch {
	case !known || !QuorumMet(minMember, roles, c.Ungated, c.Roles):
	case c.RoleChanged || CompletedBy(c.Pod, minMember, roles, c.Ungated, c.Roles):
		s.ActivatePending(c.Key)
	case c.Pod.Spec.NodeName == "" && s.Release(c.Pod.UID):
		s.activatePods(map[string]*corev1.Pod{c.Pod.Namespace + "/" + c.Pod.Name: c.Pod})
	}
}

// IsSchedulableAfterMemberAdded is the hint for a member Admit held: another member
// arrived (or lost its scheduling gates), which may complete the quorum.
func (s *Service) IsSchedulableAfterMemberAdded(logger klog.Logger, pod *corev1.Pod, _, newObj any) (fwk.QueueingHint, error) {
	added, ok := newObj.(*corev1.Pod)
	if !ok {
		return fwk.Queue, fmt.Errorf("unexpected object %T", newObj)
	}
	// Every binding arrives as an Add of an assigned pod; a bound pod was already a
	// member when it was created, so it never completes a quorum. Skipping it keeps
	// this hint O(1) per binding instead of re-examining every waiting gang.
	if added.Spec.NodeName != "" || added.Namespace != pod.Namespace || gang.IsGated(added) {
		return fwk.QueueSkip, nil
	}
	// kube-scheduler calls the hint for every waiting pod with the same added pod:
	// what the added pod brings is worked out once (adm.added), and the waiting
	// pod's gang is read from the Service. Parsing both pods' labels and counting the
	// quorum per pair made the arrival of a gang of n members O(n²) label parses
	// and index walks (one second of start-up for a gang of 1000).
	key, completes, member := s.adm.added.of(added, s.Of, s.completesQuorum)
	if !member {
		return fwk.QueueSkip, nil
	}
	own, known := s.GangOf(pod.UID)
	if !known {
		m, ok, _ := s.Of(pod)
		if !ok {
			return fwk.QueueSkip, nil
		}
		own = m.Key
	}
	// Only the member that completes the quorum matters: a later one brings the
	// members already pending nothing they lacked. Whichever of this hint and the
	// Service sees the completing member first, the Service activates the whole gang
	// once it counts the quorum (memberArrived), so skipping here loses no wake-up
	// and avoids requeueing the gang at every arrival.
	if own != key || !completes {
		return fwk.QueueSkip, nil
	}
	logger.V(5).Info("Gang member added and the gang has its quorum", "pod", klog.KObj(pod), "member", klog.KObj(added))
	return fwk.Queue, nil
}

// addedMemo remembers, for the last pod the member-added hint saw, its gang and
// whether it completed the gang's quorum. Hints run one event at a time under the
// queue's lock; the mutex keeps the memo safe regardless.
type addedMemo struct {
	mu        sync.Mutex
	pod       *corev1.Pod
	key       gang.Key
	member    bool
	completes bool
}

// of returns the added pod's gang (by membership), whether it completes that gang's quorum (by
// completes), and whether it is a gang member at all; worked out once per pod
// object.
func (a *addedMemo) of(added *corev1.Pod, membership func(*corev1.Pod) (gang.Membership, bool, error), completes func(gang.Membership, *corev1.Pod) bool) (gang.Key, bool, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pod != added {
		m, ok, err := membership(added)
		a.pod, a.key, a.member = added, m.Key, ok && err == nil
		a.completes = a.member && completes(m, added)
	}
	return a.key, a.completes, a.member
}

// completesQuorum reports whether added is the member that completed the gang: the
// Service, counting added, has exactly minMember ungated members (with per-role
// minimums: the gang is complete with added and was not without it).
func (s *Service) completesQuorum(m gang.Membership, added *corev1.Pod) bool {
	// Hints run under the scheduling queue's lock and must not wait for the object
	// cache. Before it has synced every gated member was held for it, and all of them
	// are activated once it has (activateHeldForCache): skipping loses nothing.
	if !s.cacheSynced() {
		return false
	}
	minMember, pg, known := s.Quorum(m.Key, m.MinMember)
	if !known {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.gangs[m.Key]
	if e == nil {
		return false
	}
	roles := gang.RolesOf(pg)
	if len(roles.Min) == 0 {
		return PresentMembers(e, added) == int(minMember)
	}
	return CompletedBy(added, minMember, roles, PresentMembers(e, added), PresentRoles(e, added))
}

// PresentRoles counts the gang's ungated members by role, counting pod when the
// Service has not delivered it yet. Callers hold the lock.
func PresentRoles(e *Gang, pod *corev1.Pod) map[string]int {
	have := map[string]int{}
	if e != nil {
		maps.Copy(have, e.RoleUngated)
		if _, counted := e.Members[pod.UID]; counted {
			return have
		}
	}
	if !gang.IsGated(pod) {
		have[string(workload.RoleOf(pod))]++
	}
	return have
}

// PresentMembers counts the gang's ungated members, including pod itself when the
// informer has not delivered it to the Service yet (the queue and the Service are
// fed by separate handlers of the same informer). Callers hold the lock.
func PresentMembers(e *Gang, pod *corev1.Pod) int {
	if e == nil {
		return 1
	}
	present := e.Ungated
	if _, counted := e.Members[pod.UID]; !counted && !gang.IsGated(pod) {
		present++
	}
	return present
}

// RolesShort lists the per-role minimums of pg the gang's present members (pod
// among them) do not meet. Callers hold the lock.
func RolesShort(e *Gang, pod *corev1.Pod, pg *v1alpha1.PodGroup) []string {
	roles := gang.RolesOf(pg)
	if len(roles.Min) == 0 {
		return nil
	}
	return gang.RoleShortfall(roles, PresentRoles(e, pod))
}

// WaitingForMembers says how many members of the gang exist against its quorum,
// and which roles lack members.
func WaitingForMembers(key gang.Key, present int, minMember int32, roles gang.Roles, short []string) string {
	msg := fmt.Sprintf("%s: %d/%d members of %s exist", ErrReasonWaitingForQuorum, present, minMember, key)
	if len(short) > 0 {
		msg += "; " + gang.DescribeShortfall(roles, short)
	}
	return msg
}

// QuorumMet reports whether ungated members, have by role, complete the gang.
func QuorumMet(minMember int32, roles gang.Roles, ungated int, have map[string]int) bool {
	return ungated >= int(minMember) && gang.RolesMet(roles, have)
}

// CompletedBy reports whether pod, counted in ungated and have, is the member that
// completed the gang: the gang is complete with it and was not without it.
func CompletedBy(pod *corev1.Pod, minMember int32, roles gang.Roles, ungated int, have map[string]int) bool {
	if !QuorumMet(minMember, roles, ungated, have) {
		return false
	}
	if len(roles.Min) == 0 {
		return ungated == int(minMember)
	}
	role := string(workload.RoleOf(pod))
	without := maps.Clone(have)
	without[role]--
	return !QuorumMet(minMember, roles, ungated-1, without)
}
