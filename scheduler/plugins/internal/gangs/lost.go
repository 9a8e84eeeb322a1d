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
}

// noteLossLocked records pod as a lost member when it was placed in its gang,
// failed or was disrupted (evicted, its node or a device lost: the DisruptionTarget
// condition), not preempted, and its gang was whole before the loss (counting the
// members lost with it). Callers hold Lock.
func (s *Service) noteLossLocked(pod *corev1.Pod) {
	// Before the KubeNexus cache has listed, the gang's quorum is not known; reading
	// it would wait for the list under the Service's lock, in an informer handler.
	if pod.Status.Phase == corev1.PodSucceeded || pod.Spec.NodeName == "" || !s.cacheSynced() {
		return
	}
	if _, dup := s.lost[pod.UID]; dup {
		return
	}
	// Only a failure or a disruption other than preemption (a preemptor needs that
	// room) is a loss whose room is held: a pod deleted with neither shown was
	// deleted by a user or by its workload's controller or deletion.
	_, c := podv1.GetPodCondition(&pod.Status, corev1.DisruptionTarget)
	disrupted := c != nil && c.Status == corev1.ConditionTrue
	if workload.Preempted(pod) || !disrupted && pod.Status.Phase != corev1.PodFailed {
		return
	}
	key, found := s.podGang[pod.UID]
	if !found {
		return
	}
	e := s.gangs[key]
	if e == nil || !e.Assigned.Has(pod.UID) {
		return
	}
	live, lostWith := 0, 0
	for uid, p := range e.Members {
		if uid != pod.UID && e.Assigned.Has(uid) && p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodFailed {
			live++
		}
	}
	for _, l := range s.lost {
		if l.Key == key {
			lostWith++
		}
	}
	quorum, pg, known := s.Quorum(key, e.LabelMin)
	if !known || live+lostWith+1 < int(quorum) || live >= int(quorum) {
		return // not whole before, or still whole after
	}
	if pg != nil && pg.Spec.Recovery != nil && pg.Spec.Recovery.Policy == v1alpha1.RecoveryNone {
		return
	}
	s.lost[pod.UID] = LostRoom{Key: key, UID: pod.UID, Node: pod.Spec.NodeName, Requests: nodefree.Requests(pod), At: s.now()}
	s.lostCount.Store(int32(len(s.lost)))
}

// HasLost reports, without locking, whether any lost member's room is recorded.
func (s *Service) HasLost() bool { return s.lostCount.Load() > 0 }

// LostRooms returns the rooms of lost members held now: seen less than
// LostHoldWindow ago, of gangs not whole again (fewer live members placed than
// their quorum). Cheap when there are none.
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
		if e == nil {
			delete(s.lost, uid) // every member gone: the workload was deleted
			continue
		}
		quorum, _, _ := s.Quorum(l.Key, e.LabelMin)
		if len(e.PlacedNodes(func(p *corev1.Pod) bool { return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodFailed })) >= int(quorum) {
			delete(s.lost, uid) // whole again
			continue
		}
		out = append(out, l)
	}
	s.lostCount.Store(int32(len(s.lost)))
	return out
}
