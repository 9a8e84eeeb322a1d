package podgroup

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	testutil "github.com/kube-nexus/kubenexus/test/util"
)

var t0 = time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)

// in is a domain function that answers domain.
func in(domain string) func() string { return func() string { return domain } }

// runningGang is a PodGroup of minMember 4 whose last status said Running, and
// its four members bound to n1..n4, created before t0.
func runningGang(recovery *v1alpha1.GangRecovery) (*v1alpha1.PodGroup, []corev1.Pod) {
	pg := testutil.MakePodGroup("g", "ns").MinMember(4).Obj()
	pg.UID = "pg-uid"
	pg.Spec.Recovery = recovery
	pg.Status.Phase = v1alpha1.PodGroupRunning
	var pods []corev1.Pod
	for i, node := range []string{"n1", "n2", "n3", "n4"} {
		p := testutil.MakePod("g-"+string(rune('0'+i)), "ns").PodGroup("g").Req("cpu", "2", "nvidia.com/gpu", "8").
			Node(node).Phase(corev1.PodRunning).Created(t0.Add(-time.Hour)).Obj()
		pods = append(pods, *p)
	}
	return pg, pods
}

// lose marks member i lost: terminating with the DisruptionTarget reason given
// ("": none), or failed with failed.
func lose(p *corev1.Pod, reason string, failed bool) {
	if failed {
		p.Status.Phase = corev1.PodFailed
	} else {
		p.DeletionTimestamp = &metav1.Time{Time: t0}
	}
	if reason != "" {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: reason})
	}
}

func TestRepairStartsOnTheLossOfARunningMember(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reason string
		failed bool
		cause  string
	}{
		{"node NotReady: the taint manager", "DeletionByTaintManager", false, v1alpha1.RepairCauseNodeLost},
		{"node deleted: the pod garbage collector", "DeletionByPodGC", false, v1alpha1.RepairCauseNodeLost},
		{"a device tainted NoExecute", "DeletionByDeviceTaintManager", false, v1alpha1.RepairCauseDeviceTainted},
		{"drained", "EvictionByEvictionAPI", false, v1alpha1.RepairCauseEvicted},
		{"node pressure", "TerminationByKubelet", true, v1alpha1.RepairCauseEvicted},
		{"the container failed", "", true, v1alpha1.RepairCauseMemberFailed},
		{"deleted by someone", "", false, v1alpha1.RepairCauseMemberDeleted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pg, pods := runningGang(nil)
			lose(&pods[2], tc.reason, tc.failed)
			d := decideRepair(pg, pods, t0, in("topology.kubenexus.io/rack=r1"))
			if d.repair == nil || !d.started {
				t.Fatalf("no repair started: %+v", d)
			}
			if d.repair.Cause != tc.cause || d.repair.LostMembers != 1 || strings.Join(d.repair.Nodes, ",") != "n3" {
				t.Errorf("repair %+v, want cause %s, 1 lost member on n3", d.repair, tc.cause)
			}
			if tc.cause == v1alpha1.RepairCauseMemberDeleted {
				// Deleted with nothing shown: no room is held on that evidence.
				if d.hold || d.repair.Reservation != "" || !strings.Contains(d.cond.Message, "not held") {
					t.Errorf("a plain deletion held room: %+v, %+v", d.repair, d.cond)
				}
				return
			}
			if !d.hold || d.repair.Reservation != "g-repair" || d.restart {
				t.Errorf("hold %v (reservation %q), restart %v: want the room held by g-repair, no restart", d.hold, d.repair.Reservation, d.restart)
			}
			if d.cond == nil || d.cond.Status != metav1.ConditionTrue || d.cond.Reason != tc.cause ||
				!strings.Contains(d.cond.Message, "held in topology.kubenexus.io/rack=r1") {
				t.Errorf("condition %+v", d.cond)
			}
			if d.requeue != 300*time.Second {
				t.Errorf("requeue after %v, want the default timeout 5m", d.requeue)
			}
		})
	}
}

func TestNoRepairWhenNothingWasLost(t *testing.T) {
	pg, pods := runningGang(nil)
	// Elastic: a fifth member above minMember goes; the gang is still whole.
	extra := pods[0].DeepCopy()
	extra.Name, extra.Spec.NodeName = "g-4", "n5"
	lose(extra, "EvictionByEvictionAPI", false)
	if d := decideRepair(pg, append(pods, *extra), t0, in("")); d.repair != nil || d.cond != nil {
		t.Errorf("a surplus member's loss started a repair: %+v", d)
	}
	// The workload was deleted: every member goes, none disrupted or failed.
	pg, pods = runningGang(nil)
	for i := range pods {
		lose(&pods[i], "", false)
	}
	if d := decideRepair(pg, pods, t0, in("")); d.repair != nil {
		t.Errorf("deleting the workload started a repair: %+v", d.repair)
	}
	// A gang that never ran whole has nothing to repair.
	pg, pods = runningGang(nil)
	pg.Status.Phase = v1alpha1.PodGroupScheduling
	lose(&pods[0], "", true)
	if d := decideRepair(pg, pods, t0, in("")); d.repair != nil {
		t.Errorf("a gang still being scheduled started a repair: %+v", d.repair)
	}
	// Members that succeeded count for the gang.
	pg, pods = runningGang(nil)
	pods[0].Status.Phase = corev1.PodSucceeded
	if d := decideRepair(pg, pods, t0, in("")); d.repair != nil {
		t.Errorf("a member that succeeded started a repair: %+v", d.repair)
	}
}

func TestRepairEndsWhenTheReplacementRuns(t *testing.T) {
	pg, pods := runningGang(nil)
	lose(&pods[1], "DeletionByTaintManager", false)
	d := decideRepair(pg, pods, t0, in(""))
	pg.Status.Repair = d.repair

	// Still one short: held, looked at again when the timeout ends.
	pods = append(pods[:1], pods[2:]...)
	d = decideRepair(pg, pods, t0.Add(10*time.Second), in(""))
	if d.repair == nil || !d.hold || d.ended != "" || d.requeue != 290*time.Second {
		t.Fatalf("while waiting for the replacement: %+v", d)
	}
	// The replacement binds.
	repl := testutil.MakePod("g-1b", "ns").PodGroup("g").Node("n9").Phase(corev1.PodRunning).Obj()
	d = decideRepair(pg, append(pods, *repl), t0.Add(25*time.Second), in(""))
	if d.repair != nil || d.ended != v1alpha1.RepairOutcomeRepaired || d.took != 25*time.Second || !d.dropHold {
		t.Fatalf("after the replacement bound: %+v", d)
	}
	if d.cond.Status != metav1.ConditionFalse || d.cond.Reason != v1alpha1.RepairOutcomeRepaired || !strings.Contains(d.cond.Message, "whole again 25s after it lost 1 member(s) (NodeLost)") {
		t.Errorf("condition %+v", d.cond)
	}
}

func TestRepairRestartsTheGangPastItsTimeoutThenGivesUp(t *testing.T) {
	pg, pods := runningGang(&v1alpha1.GangRecovery{Policy: v1alpha1.RecoveryRepair, TimeoutSeconds: 60})
	lose(&pods[3], "", true)
	d := decideRepair(pg, pods, t0, in(""))
	pg.Status.Repair = d.repair

	d = decideRepair(pg, pods, t0.Add(59*time.Second), in(""))
	if d.restart || d.repair.RestartTime != nil {
		t.Fatalf("restarted before the timeout: %+v", d)
	}
	d = decideRepair(pg, pods, t0.Add(60*time.Second), in(""))
	if !d.restart || d.repair == nil || d.repair.RestartTime == nil || !d.repair.RestartTime.Time.Equal(t0.Add(60*time.Second)) || !d.dropHold || d.repair.Reservation != "" {
		t.Fatalf("at the timeout: %+v", d)
	}
	if !strings.Contains(d.cond.Message, "every member was deleted") {
		t.Errorf("condition %+v", d.cond)
	}
	pg.Status.Repair = d.repair

	// The new generation is not placed within another timeout: given up.
	d = decideRepair(pg, nil, t0.Add(119*time.Second), in(""))
	if d.ended != "" || !d.restart {
		t.Fatalf("before the second timeout: %+v", d)
	}
	d = decideRepair(pg, nil, t0.Add(120*time.Second), in(""))
	if d.ended != v1alpha1.RepairOutcomeGaveUp || d.repair != nil || d.cond.Reason != v1alpha1.RepairOutcomeGaveUp {
		t.Fatalf("after the second timeout: %+v", d)
	}

	// A short timeout still gives the new generation a minute after the restart.
	short, _ := runningGang(&v1alpha1.GangRecovery{Policy: v1alpha1.RecoveryRepair, TimeoutSeconds: 10})
	short.Status.Repair = &v1alpha1.GangRepairStatus{StartTime: metav1.Time{Time: t0}, RestartTime: &metav1.Time{Time: t0.Add(10 * time.Second)}, Cause: v1alpha1.RepairCauseNodeLost, LostMembers: 1}
	if d := decideRepair(short, nil, t0.Add(69*time.Second), in("")); d.ended != "" || !d.restart {
		t.Fatalf("59 s after the restart of a gang of timeout 10 s: %+v, want the restart to go on", d)
	}
	if d := decideRepair(short, nil, t0.Add(70*time.Second), in("")); d.ended != v1alpha1.RepairOutcomeGaveUp {
		t.Fatalf("60 s after the restart: %+v, want GaveUp", d)
	}

	// Had it been whole again, the outcome is Restarted.
	var whole []corev1.Pod
	for i := range 4 {
		whole = append(whole, *testutil.MakePod("new-"+string(rune('0'+i)), "ns").PodGroup("g").Node("n1").Phase(corev1.PodRunning).Obj())
	}
	if d := decideRepair(pg, whole, t0.Add(90*time.Second), in("")); d.ended != v1alpha1.RepairOutcomeRestarted {
		t.Errorf("the new generation whole: outcome %q, want Restarted", d.ended)
	}
}

// Members lost after the repair started (one after another, or the workload's
// controller deleting the rest to start the gang anew) grow the repair and its
// hold; its start, cause and domain stay.
func TestRepairGrowsWithMembersLostSince(t *testing.T) {
	pg, pods := runningGang(nil)
	lose(&pods[0], "DeletionByTaintManager", false)
	d := decideRepair(pg, pods, t0, in("rack=a"))
	if d.repair == nil || d.repair.LostMembers != 1 || !d.hold {
		t.Fatalf("first loss: %+v", d)
	}
	pg.Status.Repair = d.repair
	lose(&pods[1], "", false)
	lose(&pods[2], "", false)
	d = decideRepair(pg, pods, t0.Add(10*time.Second), in("rack=b"))
	if d.started || d.repair == nil || d.repair.LostMembers != 3 || !d.hold || d.restart {
		t.Fatalf("three lost: %+v", d)
	}
	if r := d.repair; !r.StartTime.Time.Equal(t0) || r.Cause != v1alpha1.RepairCauseNodeLost || r.Domain != "rack=a" ||
		r.Reservation != "g-repair" || strings.Join(r.Nodes, ",") != "n1,n2,n3" {
		t.Errorf("grown repair %+v: want the start, cause, domain and reservation kept, nodes n1,n2,n3", r)
	}
	if !strings.Contains(d.cond.Message, "Lost 3 member(s)") {
		t.Errorf("condition %q: want the three lost members counted", d.cond.Message)
	}
	if h := holdFor(pg, d.repair, pods, t0.Add(10*time.Second), 300*time.Second); h == nil || h.Spec.Slots != 3 {
		t.Errorf("hold %+v: want 3 slots", h)
	}
	pg.Status.Repair = d.repair
	if d := decideRepair(pg, pods, t0.Add(20*time.Second), in("")); d.repair.LostMembers != 3 || d.cond != nil {
		t.Errorf("nothing more lost: %+v, want the repair as it is", d)
	}
}

// A gang whose quorum is smaller than what it loses (a LeaderWorkerSet group: a
// gang of its leader, whose workers go with it) holds a slot for every lost
// member it sees, not only for the quorum.
func TestHoldCoversEveryLostMember(t *testing.T) {
	pg, pods := runningGang(nil)
	pg.Spec.MinMember = 1
	for i := range pods {
		lose(&pods[i], "", false)
	}
	lose(&pods[0], "EvictionByEvictionAPI", false)
	d := decideRepair(pg, pods, t0, in(""))
	if d.repair == nil || d.repair.LostMembers != 1 || !d.hold {
		t.Fatalf("decision %+v: want a repair of 1 missing member that holds room", d)
	}
	if h := holdFor(pg, d.repair, pods, t0, 300*time.Second); h == nil || h.Spec.Slots != 4 {
		t.Errorf("hold %+v: want a slot for each of the 4 lost members", h)
	}
}

func TestRepairPolicies(t *testing.T) {
	pg, pods := runningGang(&v1alpha1.GangRecovery{Policy: v1alpha1.RecoveryRestartGang})
	lose(&pods[0], "DeletionByPodGC", false)
	d := decideRepair(pg, pods, t0, in(""))
	if !d.restart || d.hold || d.repair.RestartTime == nil {
		t.Errorf("RestartGang: %+v", d)
	}
	pg, pods = runningGang(&v1alpha1.GangRecovery{Policy: v1alpha1.RecoveryNone, TimeoutSeconds: 30})
	lose(&pods[0], "DeletionByPodGC", false)
	d = decideRepair(pg, pods, t0, in(""))
	if d.restart || d.hold || d.repair == nil || !strings.Contains(d.cond.Message, "nothing is held or restarted") {
		t.Errorf("None: %+v", d)
	}
	pg.Status.Repair = d.repair
	if d := decideRepair(pg, pods, t0.Add(30*time.Second), in("")); d.restart || d.ended != v1alpha1.RepairOutcomeGaveUp {
		t.Errorf("None past its timeout: %+v", d)
	}
	// A PodGroup that says nothing gets its workload's default: an MPIJob's gang is
	// restarted whole (mpirun takes no replacement rank), a PyTorchJob's repaired.
	// (The manager's own PodGroups name the workload as their one owner, not as a
	// controller.)
	for kind, restart := range map[string]bool{"MPIJob": true, "PyTorchJob": false} {
		pg, pods = runningGang(nil)
		pg.OwnerReferences = []metav1.OwnerReference{{APIVersion: "kubeflow.org/v1", Kind: kind, Name: "job", UID: "job-uid"}}
		lose(&pods[0], "DeletionByTaintManager", false)
		if d := decideRepair(pg, pods, t0, in("")); d.restart != restart || d.hold == restart {
			t.Errorf("gang of a %s, no recovery set: restart %v hold %v, want restart %v", kind, d.restart, d.hold, restart)
		}
	}
	pg, pods = runningGang(nil)
	pg.OwnerReferences = []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "ConfigMap", Name: "notes", UID: "cm-uid"},
		{APIVersion: "kubeflow.org/v2beta1", Kind: "MPIJob", Name: "job", UID: "job-uid", Controller: ptr.To(true)},
	}
	lose(&pods[0], "DeletionByTaintManager", false)
	if d := decideRepair(pg, pods, t0, in("")); !d.restart {
		t.Errorf("PodGroup controlled by an MPIJob among other owners: %+v, want restarted whole", d)
	}
	// GangPreemption's victims, evicted through the Eviction API (which rewrites
	// DisruptionTarget's reason), are known by its own condition.
	pg, pods = runningGang(nil)
	lose(&pods[0], "EvictionByEvictionAPI", false)
	pods[0].Status.Conditions = append(pods[0].Status.Conditions, corev1.PodCondition{Type: v1alpha1.PodConditionPreempted, Status: corev1.ConditionTrue})
	if d := decideRepair(pg, pods, t0, in("")); d.hold || d.repair.Cause != v1alpha1.RepairCausePreempted {
		t.Errorf("GangPreemption's victim: %+v", d)
	}
	// Preempted members' room went to the preemptor: not held back.
	pg, pods = runningGang(nil)
	lose(&pods[0], corev1.PodReasonPreemptionByScheduler, false)
	if d := decideRepair(pg, pods, t0, in("")); d.hold || d.repair.Cause != v1alpha1.RepairCausePreempted || d.repair.Reservation != "" {
		t.Errorf("preempted: %+v", d)
	}
}

func TestHoldFor(t *testing.T) {
	pg, pods := runningGang(nil)
	lose(&pods[0], "DeletionByTaintManager", false)
	d := decideRepair(pg, pods, t0, in("topology.kubenexus.io/rack=r1"))
	rr := holdFor(pg, d.repair, pods, t0.Add(100*time.Second), 300*time.Second)
	if rr.Name != "g-repair" || rr.Spec.Slots != 1 || rr.Spec.TTLSeconds != 200 || rr.Spec.NodeSelector["topology.kubenexus.io/rack"] != "r1" {
		t.Errorf("reservation %s: slots %d, ttl %d, selector %v", rr.Name, rr.Spec.Slots, rr.Spec.TTLSeconds, rr.Spec.NodeSelector)
	}
	if got := rr.Spec.Resources["nvidia.com/gpu"]; got.Value() != 8 || rr.Labels[v1alpha1.LabelReservationAccumulate] != "true" || rr.Spec.Owner.UID != "pg-uid" {
		t.Errorf("reservation %+v", rr)
	}
	if _, ok := rr.Spec.Resources[corev1.ResourcePods]; ok {
		t.Error("the pod count is held")
	}
}

// A LeaderWorkerSet group created leader first is a gang of its leader (minMember
// 1), whole only with its workers: a worker evicted starts a repair of the group,
// which grows when LWS then deletes the rest to recreate it. Its workers not
// created yet, or the group scaled away with no disruption shown, are no loss.
func TestRepairOfALeaderFirstGroup(t *testing.T) {
	group := func() (*v1alpha1.PodGroup, []corev1.Pod) {
		pg, pods := runningGang(nil)
		pg.Spec.MinMember = 1
		pods = pods[:3]
		for i := range pods {
			pods[i].Labels["leaderworkerset.sigs.k8s.io/name"] = "vllm"
			pods[i].Annotations = map[string]string{v1alpha1.AnnotationLWSExclusiveTopology: "topology.kubenexus.io/rack", "leaderworkerset.sigs.k8s.io/size": "3"}
		}
		return pg, pods
	}
	pg, pods := group()
	if d := decideRepair(pg, pods[:1], t0, in("")); d.repair != nil || d.cond != nil {
		t.Errorf("the leader alone, its workers not created yet: %+v", d)
	}
	lose(&pods[0], "", false)
	if d := decideRepair(pg, pods, t0, in("")); d.repair != nil || d.cond != nil {
		t.Errorf("the leader deleted with no disruption shown (scaled away): %+v", d)
	}

	pg, pods = group()
	lose(&pods[1], "EvictionByEvictionAPI", false)
	d := decideRepair(pg, pods, t0, in("topology.kubenexus.io/rack=r1"))
	if d.repair == nil || d.repair.LostMembers != 1 || !d.hold || d.repair.Cause != v1alpha1.RepairCauseEvicted {
		t.Fatalf("a worker evicted: %+v", d)
	}
	if !strings.Contains(d.cond.Message, "Lost 1 member(s) of the 3 it needs") {
		t.Errorf("condition message %q, want it to count the group's 3", d.cond.Message)
	}
	if rr := holdFor(pg, d.repair, pods, t0, 300*time.Second); rr.Spec.Slots != 1 {
		t.Errorf("reservation of %d slots, want 1", rr.Spec.Slots)
	}
	// LWS deletes the leader and the other worker; the evicted one is gone.
	pg.Status.Repair = d.repair
	lose(&pods[0], "", false)
	lose(&pods[2], "", false)
	d = decideRepair(pg, pods[0:1:1], t0.Add(time.Second), in(""))
	if d.repair == nil || d.repair.LostMembers != 3 || !d.hold {
		t.Fatalf("the group deleted to be recreated: %+v", d)
	}
	if rr := holdFor(pg, d.repair, pods[0:1:1], t0, 300*time.Second); rr.Spec.Slots != 3 {
		t.Errorf("reservation of %d slots, want 3", rr.Spec.Slots)
	}
	// The new group's leader alone bound is not whole yet; all three are.
	pg.Status.Repair = d.repair
	_, next := group()
	for i := range next {
		next[i].UID = types.UID("new-" + next[i].Name)
	}
	if d := decideRepair(pg, next[:1], t0.Add(5*time.Second), in("")); d.ended != "" {
		t.Errorf("the new leader alone: repair ended %q", d.ended)
	}
	if d := decideRepair(pg, next, t0.Add(9*time.Second), in("")); d.ended != v1alpha1.RepairOutcomeRepaired {
		t.Errorf("the new group bound whole: %+v", d)
	}
}
