// Package gangs is the scheduler's one record of the gangs of a profile: which pods
// are members of which gang (fed by the scheduler's shared pod informer), how far
// each gang has got (members bound, reserved and waiting at Permit, permitted), the
// gang's queue priority (its PodGroup's PriorityClass capped at its members' own),
// and the admission of members to the scheduling queue until their quorum exists
// (Admit, admission.go). plugins/registry.go builds one Service per profile,
// whichever plugins are enabled, and hands it to each plugin that needs it:
// ProfileClassifier and Coscheduling admit members at PreEnqueue; Coscheduling
// records the progress of the gangs it reserves and permits; NetworkFabric,
// ResourceReservation and GangPreemption read it through the typed methods
// (Pending, PlacedNodes, Priority).
package gangs

import (
	"maps"
	"sync"
	"sync/atomic"
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

// Service maps the pods of one scheduler profile to gangs. Its lock guards every
// Gang it returns: Get and the Gang's fields are read under RLock, written under
// Lock; the typed methods take it themselves.
type Service struct {
	mu      sync.RWMutex
	gangs   map[gang.Key]*Gang
	podGang map[types.UID]gang.Key
	// schedulerName limits the Service to pods of this profile.
	schedulerName string
	now           func() time.Time
	// onChange is called, without the lock held, after the Service has woken what a
	// pod joining a gang or losing its scheduling gates lets in (memberArrived).
	onChange func(MemberChange)
	// adm is the admission of members to the scheduling queue (admission.go).
	adm admission
	// held are members the gang's admission last turned away because their gang had
	// no quorum yet (a later check that finds the quorum lets them go): they wait in
	// the queue's unschedulable pool for an activation.
	held sets.Set[types.UID]
	// priority resolves a new gang's PodGroup priority.
	priority priorityResolver
	// podGroupSubs are told of a PodGroup change after the priority is refreshed.
	podGroupSubs []func(gang.Key)
	// ClassesSynced reports whether the PriorityClass cache has synced (nil: there
	// is none to wait for, as in unit tests).
	ClassesSynced func() bool
	// lost are the rooms of whole gangs' lost members held for their replacements
	// (lost.go), lostCount their number for a lock-free check.
	lost      map[types.UID]LostRoom
	lostCount atomic.Int32
	// left are the rooms of members that left kube-scheduler's pod informer with
	// no deletion under way (they turned terminal), until the failed pods' watch
	// says they failed (lost.go).
	left map[types.UID]LostRoom
	// roomEpoch moves each time room may have freed: a bound pod left (deleted or
	// finished) or a node may bring room (RoomFreed); wakeQueued is set while a
	// wake of the gangs waiting for room is scheduled (room.go).
	roomEpoch  atomic.Uint64
	wakeQueued atomic.Bool
	// wakeAfter replaces wakeDelay when set (tests).
	wakeAfter time.Duration
}

// NewService returns an empty Service for the pods of schedulerName; now is the
// clock gangs are first seen by.
func NewService(schedulerName string, now func() time.Time) *Service {
	return &Service{
		gangs:         map[gang.Key]*Gang{},
		podGang:       map[types.UID]gang.Key{},
		held:          sets.New[types.UID](),
		lost:          map[types.UID]LostRoom{},
		left:          map[types.UID]LostRoom{},
		schedulerName: schedulerName,
		now:           now,
	}
}

// RLock, RUnlock, Lock and Unlock guard the Gangs Get returns.
func (s *Service) RLock()   { s.mu.RLock() }
func (s *Service) RUnlock() { s.mu.RUnlock() }
func (s *Service) Lock()    { s.mu.Lock() }
func (s *Service) Unlock()  { s.mu.Unlock() }

// Get returns the gang (nil if unknown); callers hold the lock.
func (s *Service) Get(key gang.Key) *Gang { return s.gangs[key] }

// Ensure returns the gang, recorded now if it is not known yet; callers hold Lock.
func (s *Service) Ensure(key gang.Key) *Gang {
	g := s.gangs[key]
	if g == nil {
		g = newGang(key, s.now())
		s.gangs[key] = g
	}
	return g
}

// OnChange registers f, called without the lock held when a pod joins a gang, its
// scheduling gates are lifted or its role changes, after the Service has woken the
// members that change lets in. One subscriber.
func (s *Service) OnChange(f func(MemberChange)) {
	s.mu.Lock()
	s.onChange = f
	s.mu.Unlock()
}

// Handler is the informer event handler that keeps the Service current.
func (s *Service) Handler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.Upsert(podobj.From(obj)) },
		UpdateFunc: func(_, obj any) { s.Upsert(podobj.From(obj)) },
		DeleteFunc: func(obj any) { s.Remove(podobj.From(obj)) },
	}
}

// Of is the pod's gang membership (gang.Of), with a Kubernetes PodGroup that a
// root CompositePodGroup of gang policy holds read as a member of the composite's
// gang (crdcache.Cache.CompositeOf): every plugin files a pod under the same gang.
func (s *Service) Of(pod *corev1.Pod) (gang.Membership, bool, error) {
	m, ok, err := gang.Of(pod)
	if err != nil || !ok || m.Dialect != gang.DialectNative || s == nil || s.adm.pgs == nil {
		return m, ok, err
	}
	if k, found := s.adm.pgs.CompositeOf(m.Key.Namespace, m.Key.Name); found {
		m.Key = k
	}
	return m, ok, err
}

// FileProfile sets the gang of prof, the profile workload.Classify made for pod, to
// the key the Service files the pod under (a CompositePodGroup's gang for the pods
// of its PodGroups).
func (s *Service) FileProfile(prof *workload.Profile, pod *corev1.Pod) {
	if prof.Gang == nil || prof.Gang.Dialect != gang.DialectNative {
		return
	}
	if m, ok, err := s.Of(pod); err == nil && ok {
		prof.Gang.Key = m.Key
	}
}

// Refile files the members of gang key again: a PodGroup or CompositePodGroup
// change may have moved them into a composite's gang (or out of one).
func (s *Service) Refile(key gang.Key) {
	s.mu.RLock()
	e := s.gangs[key]
	var members []*corev1.Pod
	if e != nil {
		members = make([]*corev1.Pod, 0, len(e.Members))
		for _, p := range e.Members {
			members = append(members, p)
		}
	}
	s.mu.RUnlock()
	for _, p := range members {
		if m, ok, err := s.Of(p); err == nil && ok && m.Key != key {
			s.Upsert(p)
		}
	}
}

// Upsert files a pod added or updated: under its gang when it is a non-terminal
// member of this profile, nowhere otherwise.
func (s *Service) Upsert(pod *corev1.Pod) {
	if pod == nil {
		return
	}
	m, ok, err := s.Of(pod)
	if pod.Spec.SchedulerName != s.schedulerName || err != nil || !ok || workload.Finished(pod) {
		s.mu.Lock()
		s.noteLossLocked(pod)
		s.removeLocked(pod.UID)
		s.mu.Unlock()
		return
	}
	s.mu.Lock()
	if pod.DeletionTimestamp != nil {
		s.noteLossLocked(pod)
	}
	if old, found := s.podGang[pod.UID]; found && old != m.Key {
		s.removeLocked(pod.UID)
	}
	e := s.gangs[m.Key]
	if e == nil {
		e = newGang(m.Key, s.now())
		e.PriorityClass, e.Priority = s.priority.resolve(m.Key)
		s.gangs[m.Key] = e
	}
	e.LabelMin = m.MinMember
	prev, existed := e.Members[pod.UID]
	if !existed || gang.IsGated(prev) != gang.IsGated(pod) {
		switch {
		case !gang.IsGated(pod):
			e.Ungated++
		case existed:
			e.Ungated--
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
	if existed && InSubgroup(prev) {
		e.Subgrouped--
	}
	if InSubgroup(pod) {
		e.Subgrouped++
	}
	if !existed {
		// A pod's priority is immutable: counted once, when it joins.
		e.OwnPriorities[corev1helpers.PodPriority(pod)]++
	}
	e.Members[pod.UID] = pod
	s.podGang[pod.UID] = m.Key
	if pod.Spec.NodeName != "" {
		e.Assigned.Insert(pod.UID)
		e.Assumed.Delete(pod.UID)
		e.Allowed.Delete(pod.UID)
		s.held.Delete(pod.UID)
	}
	notify := !existed || gang.IsGated(prev) != gang.IsGated(pod) || roleChanged
	change := MemberChange{Key: m.Key, LabelMin: m.MinMember, Ungated: e.Ungated, Pod: pod, RoleChanged: roleChanged}
	if notify && len(e.RoleUngated) > 0 {
		change.Roles = maps.Clone(e.RoleUngated)
	}
	onChange := s.onChange
	s.mu.Unlock()
	if notify {
		s.memberArrived(change)
		if onChange != nil {
			onChange(change)
		}
	}
}

// MemberChange is one pod joining its gang, or losing its scheduling gates.
type MemberChange struct {
	Key      gang.Key
	LabelMin int32
	// Ungated is the gang's count of ungated members right after the change: the
	// change that makes it equal the quorum is the one that completes the gang.
	Ungated int
	// Roles are the gang's ungated members by role right after the change (nil when
	// no member has a role).
	Roles map[string]int
	// RoleChanged: the pod was an ungated member already and its role changed.
	RoleChanged bool
	Pod         *corev1.Pod
}

// Hold records that the member was turned away for want of a quorum.
func (s *Service) Hold(uid types.UID) {
	s.mu.Lock()
	s.held.Insert(uid)
	s.mu.Unlock()
}

// GangOf returns the gang the Service files the pod under, if any.
func (s *Service) GangOf(uid types.UID) (gang.Key, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	k, ok := s.podGang[uid]
	return k, ok
}

// IsHeld reports whether the member was turned away for want of a quorum and has
// not been let in since.
func (s *Service) IsHeld(uid types.UID) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.held.Has(uid)
}

// Release reports whether the member was held for want of a quorum, and forgets it.
func (s *Service) Release(uid types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.held.Has(uid) {
		return false
	}
	s.held.Delete(uid)
	return true
}

// Remove forgets a pod (deleted, finished, or no longer a member of this profile).
func (s *Service) Remove(pod *corev1.Pod) {
	if pod == nil {
		return
	}
	if pod.Spec.NodeName != "" {
		s.RoomFreed()
	}
	s.mu.Lock()
	s.noteLossLocked(pod)
	s.noteLeftLocked(pod)
	s.removeLocked(pod.UID)
	s.mu.Unlock()
}

func (s *Service) removeLocked(uid types.UID) {
	s.held.Delete(uid)
	key, found := s.podGang[uid]
	if !found {
		return
	}
	delete(s.podGang, uid)
	e := s.gangs[key]
	if e == nil {
		return
	}
	if p, ok := e.Members[uid]; ok {
		if !gang.IsGated(p) {
			e.Ungated--
			e.countRole(string(workload.RoleOf(p)), -1)
		}
		if InSubgroup(p) {
			e.Subgrouped--
		}
		own := corev1helpers.PodPriority(p)
		if e.OwnPriorities[own]--; e.OwnPriorities[own] <= 0 {
			delete(e.OwnPriorities, own)
		}
		delete(e.Members, uid)
	}
	e.Assigned.Delete(uid)
	e.Assumed.Delete(uid)
	e.Allowed.Delete(uid)
	delete(e.ReservedOn, uid)
	if len(e.Members) == 0 && len(e.Assumed) == 0 && len(e.Allowed) == 0 {
		delete(s.gangs, key)
	}
}

// Pending returns the gang's members that still need a node (not bound, not
// waiting at Permit or permitted, not behind a scheduling gate); for a part's key
// (gang.Key.Part), its members'.
func (s *Service) Pending(key gang.Key) []*corev1.Pod {
	whole, part := key.Whole()
	keep := InPart(part)
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.gangs[whole]
	if e == nil {
		return nil
	}
	pending := e.Pending()
	out := make([]*corev1.Pod, 0, len(pending))
	for _, p := range pending {
		if keep == nil || keep(p) {
			out = append(out, p)
		}
	}
	return out
}

// PlacedNodes returns the nodes the gang's members are bound to, reserved on or
// permitted on (a node once per member); for a part's key (gang.Key.Part), its
// members'.
func (s *Service) PlacedNodes(key gang.Key) []string {
	whole, part := key.Whole()
	s.mu.RLock()
	defer s.mu.RUnlock()
	if e := s.gangs[whole]; e != nil {
		return e.PlacedNodes(InPart(part))
	}
	return nil
}

// PlacedNodesWhere returns the nodes of the gang's placed members that keep accepts
// (a node once per member), as PlacedNodes.
func (s *Service) PlacedNodesWhere(key gang.Key, keep func(*corev1.Pod) bool) []string {
	whole, part := key.Whole()
	inPart := InPart(part)
	s.mu.RLock()
	defer s.mu.RUnlock()
	if e := s.gangs[whole]; e != nil {
		return e.PlacedNodes(func(p *corev1.Pod) bool { return keep(p) && (inPart == nil || inPart(p)) })
	}
	return nil
}

// PlacedLive counts the gang's members placed (bound, assumed or allowed at
// Permit) that are not terminating: a member being deleted is lost to its gang
// already, though its room frees only when it is gone.
func (s *Service) PlacedLive(key gang.Key) int {
	whole, part := key.Whole()
	inPart := InPart(part)
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.gangs[whole]
	if e == nil {
		return 0
	}
	return len(e.PlacedNodes(func(p *corev1.Pod) bool {
		return liveMember(p) && (inPart == nil || inPart(p))
	}))
}

// WholeSize is how many placed members make gang key whole as the Service sees
// it (wholeSize: its quorum, or the size of the LeaderWorkerSet group it is when
// that is more); 0 when it files no member of the gang.
func (s *Service) WholeSize(key gang.Key) int {
	whole, _ := key.Whole()
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.gangs[whole]
	if e == nil {
		return 0
	}
	quorum, _, _ := s.Quorum(whole, e.LabelMin)
	return wholeSize(e, quorum)
}

// liveMember reports whether a placed member still holds its room: neither
// terminating nor failed (a failed member's room is free, and it needs a
// replacement as one lost with its node does).
func liveMember(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodFailed
}

// Priority returns the gang's priority as the queue orders it (its PodGroup's
// PriorityClass capped at its members' own priorities; nil: each member's own);
// known is false when the gang has no member of this profile.
func (s *Service) Priority(key gang.Key) (value *int32, known bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.gangs[key]
	if e == nil {
		return nil, false
	}
	if v, ok := e.QueuePriority(); ok {
		return &v, true
	}
	return nil, true
}
