package gangs

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/api/workload"
)

// Gang is everything the scheduler knows about one gang of a profile. Member counts
// are kept incrementally from pod events, so that every lookup in a scheduling
// cycle is O(1) and a gang of N members costs O(N) in total, not O(N²). Readers
// hold the Service's lock (RLock) while they look at it, writers its Lock.
type Gang struct {
	Key gang.Key
	// FirstSeen orders gangs in the queue; it never changes once set.
	FirstSeen time.Time
	// LabelMin is the quorum stated by the members' labels (0 for object dialects).
	LabelMin int32
	// PriorityClass is the PodGroup's spec.priorityClassName and Priority its value
	// (nil: it names none, or one that does not exist). The gang's priority is that
	// value capped at its lowest member's own (QueuePriority).
	PriorityClass string
	Priority      *int32
	// OwnPriorities counts the members by their own priority (spec.priority, as the
	// API server admitted them): the cap on the gang's priority.
	OwnPriorities map[int32]int

	// Members are the gang's non-terminal pods of this scheduler profile.
	Members map[types.UID]*corev1.Pod
	// Ungated counts members without scheduling gates, and RoleUngated counts them by
	// role (workload.RoleOf; members without a role are not counted there): the
	// PodGroup's per-role minimums are checked against it.
	Ungated     int
	RoleUngated map[string]int
	// Subgrouped counts members that belong to a subgroup (workload.SubgroupOf): a
	// LeaderWorkerSet group, released only whole.
	Subgrouped int
	// Assigned are members bound to a node.
	Assigned sets.Set[types.UID]

	// Assumed are members reserved in this scheduler and waiting at Permit.
	Assumed sets.Set[types.UID]
	// Allowed are members released by Permit once the quorum was reached, until
	// their binding shows up as assigned.
	Allowed sets.Set[types.UID]
	// ReservedOn records the node each member was reserved on (Reserve), for the
	// members assumed or allowed before their binding shows.
	ReservedOn map[types.UID]string

	// BackoffUntil is when a rejected gang may be tried again, and LastRejection
	// why it was rejected (members in backoff report it).
	BackoffUntil  time.Time
	LastRejection string
	// UntilRoom is set when the backoff was for want of room (a member fit no node,
	// not a Permit timeout): it lasts only until room frees (Service.RoomEpoch moves
	// past RoomEpoch, or the Service wakes the gang, room.go).
	UntilRoom bool
	RoomEpoch uint64
	// Yielded is set when the gang let the gangs ahead of it try the room that
	// freed first (Service.YieldsForRoom): its rejection then does not count as a
	// try of that room.
	Yielded bool
	// RoomMadeUntil is when the room preemption made for the gang stops being its
	// own (GangPreemption's grace): until then it never yields it.
	RoomMadeUntil time.Time
	// Activated is set once the gang's waiting members were activated for the
	// current attempt; a rejection clears it.
	Activated bool
}

func newGang(key gang.Key, now time.Time) *Gang {
	return &Gang{
		Key:           key,
		FirstSeen:     now,
		Members:       map[types.UID]*corev1.Pod{},
		Assigned:      sets.New[types.UID](),
		Assumed:       sets.New[types.UID](),
		Allowed:       sets.New[types.UID](),
		OwnPriorities: map[int32]int{},
	}
}

// QueuePriority is the gang's priority in the queue and for preemption: its
// PodGroup's PriorityClass value, capped at the lowest own priority among its
// members, so that naming a class in a PodGroup (which anyone who may create one
// can do) orders the gang as one block but never lifts it above what its pods were
// admitted with. ok is false when the PodGroup names no class that exists (each
// member's own priority applies) or no member is known yet.
func (g *Gang) QueuePriority() (v int32, ok bool) {
	if g.Priority == nil || len(g.OwnPriorities) == 0 {
		return 0, false
	}
	v = *g.Priority
	for p := range g.OwnPriorities {
		v = min(v, p)
	}
	return v, true
}

// countRole adds delta to the ungated members of role (a member without a role is
// not counted).
func (g *Gang) countRole(role string, delta int) {
	if role == "" {
		return
	}
	if g.RoleUngated == nil {
		g.RoleUngated = map[string]int{}
	}
	if n := g.RoleUngated[role] + delta; n > 0 {
		g.RoleUngated[role] = n
	} else {
		delete(g.RoleUngated, role)
	}
}

// PlacedRoles counts by role the members bound, permitted or reserved, counting pod
// (when not nil) as reserved if the Service has not delivered it yet.
func (g *Gang) PlacedRoles(pod *corev1.Pod) map[string]int {
	have := map[string]int{}
	for uid, p := range g.Members {
		if g.Assigned.Has(uid) || g.Assumed.Has(uid) || g.Allowed.Has(uid) {
			have[string(workload.RoleOf(p))]++
		}
	}
	if pod == nil {
		return have
	}
	if _, counted := g.Members[pod.UID]; !counted {
		have[string(workload.RoleOf(pod))]++
	}
	return have
}

// Placed counts members bound, permitted or reserved: the gang's progress.
func (g *Gang) Placed() int {
	n := len(g.Assigned)
	for uid := range g.Assumed {
		if !g.Assigned.Has(uid) {
			n++
		}
	}
	for uid := range g.Allowed {
		if !g.Assigned.Has(uid) && !g.Assumed.Has(uid) {
			n++
		}
	}
	return n
}

// PlacedNodes returns the nodes of the members bound, waiting at Permit or
// permitted (a node once per member), of those keep accepts (nil: all).
func (g *Gang) PlacedNodes(keep func(*corev1.Pod) bool) []string {
	var out []string
	for uid, p := range g.Members {
		if g.Assigned.Has(uid) && p.Spec.NodeName != "" && (keep == nil || keep(p)) {
			out = append(out, p.Spec.NodeName)
		}
	}
	for uid, n := range g.ReservedOn {
		if !g.Assigned.Has(uid) && (g.Assumed.Has(uid) || g.Allowed.Has(uid)) && (keep == nil || (g.Members[uid] != nil && keep(g.Members[uid]))) {
			out = append(out, n)
		}
	}
	return out
}

// Pending returns the members that still need a scheduling attempt, by
// namespace/name (the form fwk.Handle.Activate takes).
func (g *Gang) Pending() map[string]*corev1.Pod {
	out := map[string]*corev1.Pod{}
	for uid, p := range g.Members {
		if g.Assigned.Has(uid) || g.Assumed.Has(uid) || g.Allowed.Has(uid) || gang.IsGated(p) {
			continue
		}
		out[p.Namespace+"/"+p.Name] = p
	}
	return out
}

// InSubgroup reports whether pod belongs to a subgroup of its gang: a part released
// only whole (workload.SubgroupOf: a LeaderWorkerSet group inside a larger PodGroup).
func InSubgroup(pod *corev1.Pod) bool {
	_, _, ok := workload.SubgroupOf(pod)
	return ok
}

// InPart is the filter of a part's members (nil for the whole gang: part ""): the
// members of the subgroup the part names.
func InPart(part string) func(*corev1.Pod) bool {
	if part == "" {
		return nil
	}
	return func(p *corev1.Pod) bool {
		key, _, ok := workload.SubgroupOf(p)
		return ok && key == part
	}
}
