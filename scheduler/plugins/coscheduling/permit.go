package coscheduling

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/gangs"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/profileclassifier"
)

// Permit lets the member through once the gang's bound, permitted and reserved
// members reach minMember, and every role of the PodGroup's minMemberPerRole its
// minimum, releasing every member waiting with it; until then the member waits, for
// the PodGroup's scheduleTimeoutSeconds at most. Members of a subgroup (a
// LeaderWorkerSet group inside a larger PodGroup) count, and are released, only
// once their whole group is placed.
func (pl *Plugin) Permit(ctx context.Context, cs fwk.CycleState, pod *corev1.Pod, _ string) (*fwk.Status, time.Duration) {
	s := gangState(cs)
	if s == nil {
		return nil, 0
	}
	logger := klog.FromContext(ctx)
	pl.index.Lock()
	e := pl.index.Get(s.key)
	if e == nil { // Reserve created it; only a concurrent removal gets here
		pl.index.Unlock()
		return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("%s: %s is no longer known", ErrReasonGangRejected, s.key)), 0
	}
	placed := e.Placed()
	var short []string
	complete, completedNow := placed >= int(s.minMember), placed-1 < int(s.minMember)
	roles := gang.RolesOf(s.podGroup)
	var groups *progress // with subgroups: what counts, and the groups not placed whole
	switch {
	case e.Subgrouped > 0 || gangs.InSubgroup(pod):
		// A subgroup's members count only once it is placed whole, and are released
		// only whole: also when the gang is already running (a scale-up adds whole
		// LeaderWorkerSet groups).
		with, without := subgroupProgress(e, pod, false), subgroupProgress(e, pod, true)
		met := func(p progress) bool { return p.placed >= int(s.minMember) && gang.RolesMet(roles, p.roles) }
		placed, groups = with.placed, &with
		complete = met(with) && !with.waitsForGroup(pod)
		completedNow = met(with) && !met(without)
		if with.placed >= int(s.minMember) {
			short = gang.RoleShortfall(roles, with.roles)
		}
	case complete && len(roles.Min) > 0:
		// Per-role minimums: the gang is released once every role has its members
		// placed too, and this member completed it if its role was short without it.
		have := e.PlacedRoles(pod)
		short = gang.RoleShortfall(roles, have)
		complete = len(short) == 0
		if role := string(workload.RoleOf(pod)); complete && !completedNow {
			have[role]--
			completedNow = !gang.RolesMet(roles, have)
		}
	}
	if complete {
		release := e.Assumed.UnsortedList()
		if groups != nil {
			// Members of groups not placed whole keep waiting.
			release = release[:0]
			for uid := range e.Assumed {
				m := e.Members[uid]
				if uid == pod.UID {
					m = pod
				}
				if m == nil || !groups.waitsForGroup(m) {
					release = append(release, uid)
				}
			}
		}
		e.Allowed.Insert(release...)
		e.Assumed.Delete(release...)
		e.Activated = false
		pl.index.Unlock()
		for _, uid := range release {
			if uid == pod.UID {
				continue
			}
			if wp := pl.handle.GetWaitingPod(uid); wp != nil {
				wp.Allow(Name)
			}
		}
		if completedNow { // this member completed the quorum
			gangsScheduled.Inc()
			observeWait(cs, pod, s.podGroup)
			logger.V(3).Info("Gang reached its quorum", "podGroup", s.key.String(), "placed", placed, "minMember", s.minMember)
			pl.recordEvent(s.key, s.podGroup, corev1.EventTypeNormal, v1alpha1.ReasonGangScheduled,
				"%d/%d members placed; releasing the gang for binding", placed, s.minMember)
		}
		return nil, 0
	}
	var activate map[string]*corev1.Pod
	if !e.Activated {
		e.Activated = true
		activate = e.Pending()
	}
	pl.index.Unlock()
	if len(activate) > 0 {
		// Members rejected earlier may sit in backoff; bring them to the head of the
		// queue so the gang is attempted as a block while this one waits.
		pl.handle.Activate(logger, activate)
	}
	msg := fmt.Sprintf("%s: %d/%d members of %s placed", ErrReasonWaitingForQuorum, placed, s.minMember, s.key)
	if len(short) > 0 {
		msg += "; " + gang.DescribeShortfall(roles, short)
	}
	if groups != nil && len(groups.short) > 0 {
		msg += "; " + groups.describe()
	}
	return fwk.NewStatus(fwk.Wait, msg), pl.scheduleTimeout(s.podGroup)
}

// observeWait records how long the gang waited, from its PodGroup's creation (else
// the member's) to now, under the tenant tier and class ProfileClassifier gave the
// member ("unknown" without it).
func observeWait(cs fwk.CycleState, pod *corev1.Pod, pg *v1alpha1.PodGroup) {
	created := pod.CreationTimestamp.Time
	if pg != nil {
		created = pg.CreationTimestamp.Time
	}
	tier, class := "unknown", "unknown"
	if prof, ok := profileclassifier.ProfileOf(cs); ok {
		tier, class = string(prof.Tier), string(prof.Class)
	}
	gangWait.WithLabelValues(tier, class).Observe(max(time.Since(created).Seconds(), 0))
}
