package gangs

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	podv1 "k8s.io/kubernetes/pkg/api/v1/pod"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/nodefree"
)

// LostHoldWindow bounds how long the room of a whole gang's lost member is held
// for its replacement by the scheduler alone: the manager's repair reservation
// (PodGroup spec.recovery) takes over within it.
const LostHoldWindow = time.Minute

// LostRoom is the room a member of a whole gang left when it was lost (failed,
// evicted, or terminating because its node or a device failed), which the
// scheduler holds for the gang's replacement from the moment it sees the loss —
// before the manager's repair reservation exists: a member that fails on a
// healthy node frees its room at once, and a pending pod of no gang would take it.
type LostRoom struct {
	Key  gang.Key
	UID  types.UID
	Node string
	// Requests are the lost member's, in milli-units.
	Requests map[corev1.ResourceName]int64
	At       time.Time
	// Whole is how many placed members make the gang whole (wholeSize), as it was
	// when the member was lost: the gang may have no member left to read it from.
	Whole int
}

// noteLossLocked records pod as a lost member when it was placed in its gang,
// failed or was disrupted (evicted, its node or a device lost: the DisruptionTarget
// condition) — or was deleted while its gang is losing members so — not preempted,
// and its gang was whole before the loss (counting the members lost with it).
// Callers hold Lock.
func (s *Service) noteLossLocked(pod *corev1.Pod) {
	// Only a failure or a disruption other than preemption (a preemptor needs that
	// room) is a loss whose room is held: a pod deleted with neither shown was
	// deleted by a user or by its workload's controller or deletion. Unless its gang
	// lost a member so a moment ago: a workload's controller recreating the group
	// (LeaderWorkerSet's RecreateGroupOnPodRestart deletes the leader and the other
	// workers of a group whose worker failed) deletes the rest, and their
	// replacements come with the new group; holding only the first member's room let
	// a pending group take the rest of the domain (the e2e's LeaderWorkerSet repair).
	_, c := podv1.GetPodCondition(&pod.Status, corev1.DisruptionTarget)
	disrupted := c != nil && c.Status == corev1.ConditionTrue
	if workload.Preempted(pod) || !disrupted && pod.Status.Phase != corev1.PodFailed && !s.losingLocked(pod) {
		return
	}
	if room, ok := s.roomLocked(pod); ok {
		s.lost[pod.UID] = room
		s.lostCount.Store(int32(len(s.lost)))
	}
}

// losingLocked reports whether pod's gang lost a member (a failure or a
// disruption) less than LostHoldWindow ago. Callers hold Lock.
func (s *Service) losingLocked(pod *corev1.Pod) bool {
	key, found := s.podGang[pod.UID]
	if !found || pod.DeletionTimestamp == nil {
		return false
	}
	now := s.now()
	for _, l := range s.lost {
		if l.Key == key && now.Sub(l.At) < LostHoldWindow {
			return true
		}
	}
	return false
}

// wholeSize is how many placed members make gang e whole: its quorum, or the size
// of the LeaderWorkerSet group it is when that is more (a group created leader
// first is a gang of its leader, minMember 1, whose workers are created once the
// leader is; it runs whole only with them). Callers hold the lock.
func wholeSize(e *Gang, quorum int32) int {
	n := int(quorum)
	for _, p := range e.Members {
		n = max(n, workload.LeaderFirstGroupSize(p))
	}
	return n
}

// noteLeftLocked keeps, for LostHoldWindow, the room of a member that left
// kube-scheduler's pod informer with no deletion under way: that informer watches
// non-terminal pods only, so a member that fails reaches the Service as the
// deletion of its last running state. Whether it failed (a loss) or succeeded
// (none) comes from the failed pods' watch (Failed). Callers hold Lock.
func (s *Service) noteLeftLocked(pod *corev1.Pod) {
	if pod.DeletionTimestamp != nil || workload.Finished(pod) {
		return
	}
	now := s.now()
	for uid, l := range s.left {
		if now.Sub(l.At) >= LostHoldWindow {
			delete(s.left, uid)
		}
	}
	if room, ok := s.roomLocked(pod); ok {
		s.left[pod.UID] = room
	}
}

// Failed takes a pod seen failed (the failed pods' watch): the loss of a member
// that left kube-scheduler's informer before, or — when this comes first — of one
// the Service still files.
func (s *Service) Failed(pod *corev1.Pod) {
	if pod == nil || pod.Status.Phase != corev1.PodFailed {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if room, ok := s.left[pod.UID]; ok {
		delete(s.left, pod.UID)
		if !workload.Preempted(pod) && s.now().Sub(room.At) < LostHoldWindow {
			s.lost[pod.UID] = room
			s.lostCount.Store(int32(len(s.lost)))
		}
		return
	}
	if _, filed := s.podGang[pod.UID]; filed {
		s.noteLossLocked(pod)
	}
}

// roomLocked is the room pod leaves its gang when it is a placed member of a
// whole gang whose loss leaves it short (counting the members lost with it), and
// its PodGroup's recovery policy is not None. Callers hold Lock.
func (s *Service) roomLocked(pod *corev1.Pod) (LostRoom, bool) {
	// Before the KubeNexus cache has listed, the gang's quorum is not known; reading
	// it would wait for the list under the Service's lock, in an informer handler.
	if pod.Status.Phase == corev1.PodSucceeded || pod.Spec.NodeName == "" || !s.cacheSynced() {
		return LostRoom{}, false
	}
	if _, dup := s.lost[pod.UID]; dup {
		return LostRoom{}, false
	}
	key, found := s.podGang[pod.UID]
	if !found {
		return LostRoom{}, false
	}
	e := s.gangs[key]
	if e == nil || !e.Assigned.Has(pod.UID) {
		return LostRoom{}, false
	}
	live, lostWith := 0, 0
	for uid, p := range e.Members {
		if uid != pod.UID && e.Assigned.Has(uid) && liveMember(p) {
			live++
		}
	}
	for _, l := range s.lost {
		if l.Key == key {
			lostWith++
		}
	}
	quorum, pg, known := s.Quorum(key, e.LabelMin)
	whole := wholeSize(e, quorum)
	if !known || live+lostWith+1 < whole || live >= whole {
		return LostRoom{}, false // not whole before, or still whole after
	}
	if pg != nil && pg.Spec.Recovery != nil && pg.Spec.Recovery.Policy == v1alpha1.RecoveryNone {
		return LostRoom{}, false
	}
	// The member as filed: the failed pods' watch keeps no containers.
	return LostRoom{Key: key, UID: pod.UID, Node: pod.Spec.NodeName, Requests: nodefree.Requests(e.Members[pod.UID]), At: s.now(), Whole: whole}, true
}

// HasLost reports, without locking, whether any lost member's room is recorded.
func (s *Service) HasLost() bool { return s.lostCount.Load() > 0 }

// LostRooms returns the rooms of lost members held now: seen less than
// LostHoldWindow ago, of gangs not whole again (fewer live members placed than
// make them whole) and not deleted. Cheap when there are none.
func (s *Service) LostRooms(now time.Time) []LostRoom {
	if s.lostCount.Load() == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []LostRoom
	for uid, l := range s.lost {
		if now.Sub(l.At) >= LostHoldWindow {
			delete(s.lost, uid)
			continue
		}
		e := s.gangs[l.Key]
		var labelMin int32
		if e != nil {
			labelMin = e.LabelMin
		}
		quorum, _, known := s.Quorum(l.Key, labelMin)
		if e == nil && !known {
			// Every member gone, and no PodGroup left: the workload was deleted. (A
			// group its controller recreates has none for a moment; its PodGroup stays.)
			delete(s.lost, uid)
			continue
		}
		placed := 0
		if e != nil {
			placed = len(e.PlacedNodes(liveMember))
		}
		if placed >= max(int(quorum), l.Whole) {
			delete(s.lost, uid) // whole again
			continue
		}
		out = append(out, l)
	}
	s.lostCount.Store(int32(len(s.lost)))
	return out
}
