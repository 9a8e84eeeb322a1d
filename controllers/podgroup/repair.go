package podgroup

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	podv1 "k8s.io/kubernetes/pkg/api/v1/pod"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
)

// maxListedNodes bounds status.repair.nodes.
const maxListedNodes = 16

// repairDecision is what one reconcile does about a running gang's lost members:
// the status.repair and Repairing condition to write, and what to do after the
// status is written.
type repairDecision struct {
	// repair is the new status.repair (nil: none).
	repair *v1alpha1.GangRepairStatus
	// cond is the Repairing condition to set (nil: leave it as it is).
	cond *metav1.Condition
	// hold: the room of the lost members is to be held (the reservation is created
	// when it does not exist); dropHold: the reservation named by the previous
	// status.repair is to be deleted.
	hold     bool
	dropHold bool
	// restart: delete the members created before repair.restartTime.
	restart bool
	// ended is the outcome of a repair that ended in this reconcile ("": none), after
	// took (from the loss).
	ended string
	took  time.Duration
	// started: the loss was seen in this reconcile.
	started bool
	// requeue is when to look again without an event (0: no need).
	requeue time.Duration
}

// recoveryOf returns the gang's recovery policy and its timeout, defaults applied:
// a PodGroup that sets no policy gets its workload's (workload.DefaultRecovery of
// workloadKindOf), one of no workload Repair.
func recoveryOf(pg *v1alpha1.PodGroup) (v1alpha1.RecoveryPolicy, time.Duration) {
	var policy v1alpha1.RecoveryPolicy
	timeout := int32(v1alpha1.DefaultRecoveryTimeoutSeconds)
	if r := pg.Spec.Recovery; r != nil {
		policy = r.Policy
		if r.TimeoutSeconds > 0 {
			timeout = r.TimeoutSeconds
		}
	}
	if policy == "" {
		policy = workload.DefaultRecovery(workloadKindOf(pg))
	}
	return policy, time.Duration(timeout) * time.Second
}

// workloadKindOf is the kind of the workload a PodGroup belongs to: its
// controller's, else its only owner's (the manager's PodGroups name the workload
// they were sized from as their one owner); empty for none.
func workloadKindOf(pg *v1alpha1.PodGroup) schema.GroupKind {
	ref := metav1.GetControllerOf(pg)
	if ref == nil && len(pg.OwnerReferences) == 1 {
		ref = &pg.OwnerReferences[0]
	}
	if ref == nil {
		return schema.GroupKind{}
	}
	return schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind).GroupKind()
}

// tally splits a gang's members: live (bound, not terminating, not finished),
// succeeded, and lost (bound and terminating or failed).
func tally(members []corev1.Pod) (live, succeeded int, lost []*corev1.Pod) {
	for i := range members {
		p := &members[i]
		switch {
		case p.Status.Phase == corev1.PodSucceeded:
			succeeded++
		case p.Spec.NodeName == "":
		case p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodFailed:
			lost = append(lost, p)
		default:
			live++
		}
	}
	return live, succeeded, lost
}

// causeOf says why members were lost, from what Kubernetes wrote on them: the
// DisruptionTarget condition's reason (the taint manager for a NotReady,
// unreachable or tainted node, the pod garbage collector for a deleted node, the
// device taint manager, the scheduler's preemption, the Eviction API or the
// kubelet), else a failure, else a deletion. ok is false when none of the lost
// members shows a disruption or a failure.
func causeOf(lost []*corev1.Pod) (cause string, ok bool) {
	failed := false
	for _, p := range lost {
		if workload.Preempted(p) {
			return v1alpha1.RepairCausePreempted, true
		}
		if _, c := podv1.GetPodCondition(&p.Status, corev1.DisruptionTarget); c != nil && c.Status == corev1.ConditionTrue {
			switch c.Reason {
			case "DeletionByTaintManager", "DeletionByPodGC":
				return v1alpha1.RepairCauseNodeLost, true
			case "DeletionByDeviceTaintManager":
				return v1alpha1.RepairCauseDeviceTainted, true
			case corev1.PodReasonPreemptionByScheduler:
				return v1alpha1.RepairCausePreempted, true
			default:
				return v1alpha1.RepairCauseEvicted, true
			}
		}
		if p.Status.Phase == corev1.PodFailed {
			failed = true
		}
	}
	if failed {
		return v1alpha1.RepairCauseMemberFailed, true
	}
	return v1alpha1.RepairCauseMemberDeleted, false
}

// decideRepair decides, from the gang's previous status (pg.Status) and its
// members now, whether a repair starts, goes on, restarts the gang or ends. A
// repair starts when a gang that was Scheduled or Running has fewer live members
// (with the succeeded ones) than minMember — or, once a member of a
// LeaderWorkerSet group created leader first is seen disrupted or failed, than
// the group's size (groupSize) — not when every member goes at once
// with no disruption or failure shown (the workload was deleted, or its
// controller restarts it) — and ends when the gang is whole again. domain gives the
// domain the room is held in ("": any node), asked only when a repair starts.
func decideRepair(pg *v1alpha1.PodGroup, members []corev1.Pod, now time.Time, domain func() string) repairDecision {
	policy, timeout := recoveryOf(pg)
	live, succeeded, lost := tally(members)
	cur := pg.Status.Repair
	cause, shown := causeOf(lost)
	minMember := int(pg.Spec.MinMember)
	if shown || cur != nil {
		minMember = max(minMember, groupSize(members))
	}
	whole := live+succeeded >= minMember
	if cur == nil {
		wasPlaced := pg.Status.Phase == v1alpha1.PodGroupRunning || pg.Status.Phase == v1alpha1.PodGroupScheduled
		if !wasPlaced || whole {
			return repairDecision{}
		}
		if !shown && live == 0 {
			return repairDecision{}
		}
		return startRepair(pg, policy, timeout, cause, minMember, minMember-live-succeeded, lost, now, domain())
	}
	if whole {
		outcome := v1alpha1.RepairOutcomeRepaired
		if cur.RestartTime != nil {
			outcome = v1alpha1.RepairOutcomeRestarted
		}
		took := now.Sub(cur.StartTime.Time)
		return repairDecision{ended: outcome, took: took, dropHold: cur.Reservation != "",
			cond: repairingCond(pg, metav1.ConditionFalse, outcome, fmt.Sprintf("The gang is whole again %s after it lost %d member(s) (%s).",
				took.Round(time.Second), cur.LostMembers, cur.Cause))}
	}
	next := *cur
	switch {
	case cur.RestartTime == nil && policy != v1alpha1.RecoveryNone && !now.Before(cur.StartTime.Add(timeout)):
		next.RestartTime = &metav1.Time{Time: now}
		next.Reservation = ""
		return repairDecision{repair: &next, restart: true, dropHold: cur.Reservation != "", requeue: timeout,
			cond: repairingCond(pg, metav1.ConditionTrue, cur.Cause, fmt.Sprintf("Not whole again %s after it lost %d member(s) (%s): every member was deleted so that the workload's controller restarts the gang, to be placed whole (spec.recovery.timeoutSeconds %d).",
				timeout, cur.LostMembers, cur.Cause, int(timeout/time.Second)))}
	case cur.RestartTime != nil && !now.Before(cur.RestartTime.Add(restartWindow(timeout))),
		cur.RestartTime == nil && policy == v1alpha1.RecoveryNone && !now.Before(cur.StartTime.Add(timeout)):
		restarted := ""
		if cur.RestartTime != nil {
			restarted = " and was restarted"
		}
		return repairDecision{ended: v1alpha1.RepairOutcomeGaveUp, took: now.Sub(cur.StartTime.Time), dropHold: cur.Reservation != "",
			cond: repairingCond(pg, metav1.ConditionFalse, v1alpha1.RepairOutcomeGaveUp, fmt.Sprintf("Not whole again %s after it lost %d member(s) (%s)%s; nothing is held for it any more.",
				now.Sub(cur.StartTime.Time).Round(time.Second), cur.LostMembers, cur.Cause, restarted))}
	case cur.RestartTime != nil:
		// Members of the old generation that are still there are deleted again.
		return repairDecision{repair: cur, restart: true, requeue: cur.RestartTime.Add(restartWindow(timeout)).Sub(now)}
	default:
		if missing := minMember - live - succeeded; missing > int(cur.LostMembers) {
			return grownRepair(pg, policy, timeout, cur, minMember, missing, lost, now)
		}
		return repairDecision{repair: cur, hold: cur.Reservation != "", requeue: cur.StartTime.Add(timeout).Sub(now)}
	}
}

// groupSize is the size of the LeaderWorkerSet group the members are, when it is
// created leader first (workload.LeaderFirstGroupSize): its PodGroup asks for the
// leader alone, for LWS creates the workers once the leader is bound, but the
// group runs whole only with all of them — a worker lost is a loss to repair. 0
// for other gangs. Read only once a member is seen disrupted or failed, or a
// repair is under way: a group whose workers are not created yet has lost
// nothing, and one scaled away goes with no disruption shown.
func groupSize(members []corev1.Pod) int {
	n := 0
	for i := range members {
		n = max(n, workload.LeaderFirstGroupSize(&members[i]))
	}
	return n
}

// minRestartWindow is the least time a restarted gang has to be whole again before
// the manager gives up on it: its workload's controller must see every member gone
// and create the new generation, and the scheduler place it whole, which a loaded
// cluster does not do in a few seconds; and nothing is held for it meanwhile, so
// waiting costs no one room.
const minRestartWindow = time.Minute

// restartWindow is how long a restarted gang has to be whole again.
func restartWindow(timeout time.Duration) time.Duration { return max(timeout, minRestartWindow) }

// grownRepair is the decision of a reconcile that finds more members lost than
// the repair counted — members lost one after another, or a workload's controller
// deleting the rest to start the gang anew: the count, the nodes and the room held
// grow; the repair keeps its start, cause and domain.
func grownRepair(pg *v1alpha1.PodGroup, policy v1alpha1.RecoveryPolicy, timeout time.Duration, cur *v1alpha1.GangRepairStatus, needs, missing int, lost []*corev1.Pod, now time.Time) repairDecision {
	d := startRepair(pg, policy, timeout, cur.Cause, needs, missing, lost, now, cur.Domain)
	d.started = false
	d.repair.StartTime = cur.StartTime
	for _, n := range cur.Nodes {
		if len(d.repair.Nodes) < maxListedNodes && !slices.Contains(d.repair.Nodes, n) {
			d.repair.Nodes = append(d.repair.Nodes, n)
		}
	}
	sort.Strings(d.repair.Nodes)
	d.requeue = cur.StartTime.Add(timeout).Sub(now)
	return d
}

// startRepair is the decision of the reconcile that sees the loss of missing of
// the needs members that make the gang whole.
func startRepair(pg *v1alpha1.PodGroup, policy v1alpha1.RecoveryPolicy, timeout time.Duration, cause string, needs, missing int, lost []*corev1.Pod, now time.Time, domain string) repairDecision {
	rs := &v1alpha1.GangRepairStatus{StartTime: metav1.Time{Time: now}, Cause: cause, LostMembers: int32(missing), Domain: domain}
	for _, p := range lost {
		if len(rs.Nodes) < maxListedNodes && !slices.Contains(rs.Nodes, p.Spec.NodeName) {
			rs.Nodes = append(rs.Nodes, p.Spec.NodeName)
		}
	}
	sort.Strings(rs.Nodes)
	where := ""
	if len(rs.Nodes) > 0 {
		where = " on " + strings.Join(rs.Nodes, ", ")
	}
	d := repairDecision{repair: rs, started: true, requeue: timeout}
	lostMsg := fmt.Sprintf("Lost %d member(s) of the %d it needs (%s%s)", missing, needs, cause, where)
	switch policy {
	case v1alpha1.RecoveryRestartGang:
		rs.RestartTime = &metav1.Time{Time: now}
		d.restart = true
		d.cond = repairingCond(pg, metav1.ConditionTrue, cause, lostMsg+": every member was deleted so that the workload's controller restarts the gang, to be placed whole (spec.recovery.policy RestartGang).")
	case v1alpha1.RecoveryNone:
		d.cond = repairingCond(pg, metav1.ConditionTrue, cause, lostMsg+"; nothing is held or restarted (spec.recovery.policy None).")
	default: // Repair
		switch cause {
		case v1alpha1.RepairCausePreempted:
			// The room went to a pod of higher priority: holding it back would undo
			// the preemption. The replacements wait for room as any pod does.
			d.cond = repairingCond(pg, metav1.ConditionTrue, cause, fmt.Sprintf("%s: their room went to the preemptor and is not held; the gang is restarted whole if it is not whole again within %s.", lostMsg, timeout))
		case v1alpha1.RepairCauseMemberDeleted:
			// Deleted with no disruption or failure shown: by a user, or by the
			// workload's controller or its deletion, whose pods go one by one. No
			// room is held on so little evidence.
			d.cond = repairingCond(pg, metav1.ConditionTrue, cause, fmt.Sprintf("%s: deleted with no disruption or failure shown, so their room is not held; the gang is restarted whole if it is not whole again within %s.", lostMsg, timeout))
		default:
			return holdRoom(pg, d, lostMsg, timeout)
		}
	}
	return d
}

// holdRoom completes the decision of a Repair that holds the lost members' room.
func holdRoom(pg *v1alpha1.PodGroup, d repairDecision, lostMsg string, timeout time.Duration) repairDecision {
	rs := d.repair
	rs.Reservation = repairName(pg.Name)
	d.hold = true
	in := "on any node"
	if rs.Domain != "" {
		in = "in " + rs.Domain
	}
	d.cond = repairingCond(pg, metav1.ConditionTrue, rs.Cause, fmt.Sprintf("%s: their room is held %s for the replacements (ResourceReservation %s) for %s; then the gang is restarted whole.",
		lostMsg, in, rs.Reservation, timeout))
	return d
}

func repairingCond(pg *v1alpha1.PodGroup, status metav1.ConditionStatus, reason, msg string) *metav1.Condition {
	return &metav1.Condition{Type: v1alpha1.PodGroupConditionRepairing, Status: status, Reason: reason, Message: msg, ObservedGeneration: pg.Generation}
}

// repairName is "<podgroup>-repair", shortened to stay a valid name.
func repairName(pg string) string {
	const suffix = "-repair"
	if len(pg)+len(suffix) > 253 {
		pg = strings.TrimRight(pg[:253-len(suffix)], "-.")
	}
	return pg + suffix
}
