package podgroup

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	podv1 "k8s.io/kubernetes/pkg/api/v1/pod"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/api/workload/frameworks/lws"
)

// ReasonMembersFailed is the condition reason of a gang that can no longer reach
// minMember because members failed.
const ReasonMembersFailed = "MembersFailed"

// ComputeStatus derives a PodGroup's status from its member pods. It is pure: the
// reconciler reads, calls it, and writes the result.
func ComputeStatus(pg *v1alpha1.PodGroup, members []corev1.Pod, now metav1.Time) v1alpha1.PodGroupStatus {
	st := *pg.Status.DeepCopy()
	st.ObservedGeneration = pg.Generation
	min := int(pg.Spec.MinMember)

	var scheduled, running, succeeded, failed, waiting int
	var unschedulableMsg string
	// With per-role minimums: present and scheduled members by role.
	roles := gang.RolesOf(pg)
	presentRoles, scheduledRoles := map[string]int{}, map[string]int{}
	for i := range members {
		p := &members[i]
		role := string(workload.RoleOf(p))
		switch p.Status.Phase {
		case corev1.PodRunning:
			running++
		case corev1.PodSucceeded:
			succeeded++
		case corev1.PodFailed:
			failed++
		}
		if p.Spec.NodeName != "" {
			scheduled++
			scheduledRoles[role]++
			presentRoles[role]++
			continue
		}
		if workload.Finished(p) {
			continue
		}
		if !gang.IsGated(p) {
			waiting++
			presentRoles[role]++
		}
		if _, c := podv1.GetPodCondition(&p.Status, corev1.PodScheduled); c != nil && c.Status == corev1.ConditionFalse &&
			c.Reason == corev1.PodReasonUnschedulable && unschedulableMsg == "" {
			unschedulableMsg = c.Message
		}
	}
	st.Scheduled, st.Running, st.Succeeded, st.Failed = int32(scheduled), int32(running), int32(succeeded), int32(failed)
	present := scheduled + waiting // members that exist and may count towards the quorum

	cond := metav1.Condition{Type: v1alpha1.PodGroupConditionScheduled, ObservedGeneration: pg.Generation}
	switch {
	case succeeded >= min && running == 0 && waiting == 0:
		st.Phase = v1alpha1.PodGroupSucceeded
		cond.Status, cond.Reason = metav1.ConditionTrue, v1alpha1.ReasonGangScheduled
		cond.Message = fmt.Sprintf("%d/%d members succeeded", succeeded, min)
	case failed > 0 && len(members)-failed < min:
		st.Phase = v1alpha1.PodGroupFailed
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonMembersFailed
		cond.Message = fmt.Sprintf("%d members failed; %d of the %d needed remain", failed, len(members)-failed, min)
	case running > 0 && running+succeeded >= min:
		// Members that finished first (workers before their launcher) still count:
		// the gang started and is running.
		st.Phase = v1alpha1.PodGroupRunning
		cond.Status, cond.Reason = metav1.ConditionTrue, v1alpha1.ReasonGangScheduled
		cond.Message = fmt.Sprintf("%d/%d members running", running, min)
		if succeeded > 0 {
			cond.Message = fmt.Sprintf("%d/%d members running, %d succeeded", running, min, succeeded)
		}
	case scheduled >= min && gang.RolesMet(roles, scheduledRoles):
		st.Phase = v1alpha1.PodGroupScheduled
		cond.Status, cond.Reason = metav1.ConditionTrue, v1alpha1.ReasonGangScheduled
		cond.Message = fmt.Sprintf("%d/%d members scheduled", scheduled, min)
	case present >= min && gang.RolesMet(roles, presentRoles):
		st.Phase = v1alpha1.PodGroupScheduling
		cond.Status = metav1.ConditionFalse
		cond.Reason, cond.Message = schedulingReason(unschedulableMsg, scheduled, min)
		if unschedulableMsg == "" && scheduled >= min {
			cond.Message += "; " + gang.DescribeShortfall(roles, gang.RoleShortfall(roles, scheduledRoles))
		}
	default:
		st.Phase = v1alpha1.PodGroupPending
		cond.Status, cond.Reason = metav1.ConditionFalse, v1alpha1.ReasonWaitingForMembers
		cond.Message = fmt.Sprintf("WaitingForMembers %d/%d: the gang starts when %d members exist", present, min, min)
		if short := gang.RoleShortfall(roles, presentRoles); len(short) > 0 {
			which := "every role's minimum"
			switch {
			case len(roles.Sets) > 0:
				which = "the minimums its composites need"
			case roles.Need > 0 && roles.Need < len(roles.Min):
				which = fmt.Sprintf("the minimums of %d of its roles", roles.Need)
			}
			cond.Message = fmt.Sprintf("WaitingForMembers %d/%d: the gang starts when %d members exist, with %s; %s",
				present, min, min, which, gang.DescribeShortfall(roles, short))
		}
		if set := leaderFirstSet(members); set != "" {
			cond.Message += fmt.Sprintf("; LeaderWorkerSet %s asks for exclusive-topology, so LWS creates a group's workers only once its leader is bound, "+
				"which this PodGroup holds until its members exist: it cannot start. Drop the annotation and set spec.networkTopology: "+
				"each LeaderWorkerSet group of the PodGroup is placed in one domain of that level", set)
		}
	}
	if st.Phase != v1alpha1.PodGroupPending && st.ScheduleStartTime == nil {
		st.ScheduleStartTime = &now
	}
	if owner := occupiedBy(members); owner != "" {
		st.OccupiedBy = owner
	}
	meta.SetStatusCondition(&st.Conditions, cond)
	return st
}

// leaderFirstSet names the LeaderWorkerSet of a member whose group is created
// leader first (exclusive-topology; workload.LeaderFirstGroupSize), "" when none is.
func leaderFirstSet(members []corev1.Pod) string {
	for i := range members {
		if workload.LeaderFirstGroupSize(&members[i]) > 0 {
			return members[i].Labels[lws.LabelName]
		}
	}
	return ""
}

// schedulingReason says why a gang with its quorum is not placed yet, from what the
// scheduler wrote on the members: it prefixes gang rejections with the reason.
func schedulingReason(msg string, scheduled, min int) (string, string) {
	switch {
	case strings.Contains(msg, v1alpha1.ReasonTimeout+":"):
		return v1alpha1.ReasonTimeout, msg
	case strings.Contains(msg, v1alpha1.ReasonTopologyUnsatisfiable+":"):
		return v1alpha1.ReasonTopologyUnsatisfiable, msg
	case msg != "":
		return v1alpha1.ReasonInsufficientCapacity, msg
	}
	return "Scheduling", fmt.Sprintf("%d/%d members scheduled", scheduled, min)
}

// occupiedBy names the controller that owns the members, as namespace/name.
func occupiedBy(members []corev1.Pod) string {
	for i := range members {
		if ref := metav1.GetControllerOf(&members[i]); ref != nil {
			return members[i].Namespace + "/" + ref.Name
		}
	}
	return ""
}
