package podgroup

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	testutil "github.com/kube-nexus/kubenexus/test/util"
)

type member struct {
	node          string
	phase         corev1.PodPhase
	gated         bool
	unschedulable string
	role          string
	// leaderFirst: a LeaderWorkerSet leader whose set asks for exclusive-topology.
	leaderFirst bool
}

func members(ms ...member) []corev1.Pod {
	var out []corev1.Pod
	for i, m := range ms {
		w := testutil.MakePod("m"+string(rune('a'+i)), "ns").PodGroup("g")
		if m.gated {
			w.Gate("kueue.x-k8s.io/admission")
		}
		if m.role != "" {
			w.Label(v1alpha1.LabelWorkloadRole, m.role)
		}
		if m.leaderFirst {
			w.Label("leaderworkerset.sigs.k8s.io/name", "prefill").Label("leaderworkerset.sigs.k8s.io/group-index", "0").
				Annotation("leaderworkerset.sigs.k8s.io/size", "4").Annotation(v1alpha1.AnnotationLWSExclusiveTopology, v1alpha1.LabelRack)
		}
		p := w.Obj()
		p.Spec.NodeName = m.node
		p.Status.Phase = m.phase
		if m.unschedulable != "" {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: m.unschedulable}}
		}
		out = append(out, *p)
	}
	return out
}

func repeat(m member, n int) []member {
	out := make([]member, n)
	for i := range out {
		out[i] = m
	}
	return out
}

func TestComputeStatus(t *testing.T) {
	pending := member{phase: corev1.PodPending}
	bound := member{node: "n1", phase: corev1.PodPending}
	running := member{node: "n1", phase: corev1.PodRunning}
	tests := map[string]struct {
		members    []member
		roles      map[string]int32 // spec.minMemberPerRole
		wantPhase  v1alpha1.PodGroupPhase
		wantReason string
		wantMsg    string
		wantCounts [4]int32 // scheduled, running, succeeded, failed
	}{
		"3 of 8 members exist": {
			members:   repeat(pending, 3),
			wantPhase: v1alpha1.PodGroupPending, wantReason: v1alpha1.ReasonWaitingForMembers, wantMsg: "WaitingForMembers 3/8",
		},
		"gated members do not count": {
			members:   append(repeat(pending, 7), member{phase: corev1.PodPending, gated: true}),
			wantPhase: v1alpha1.PodGroupPending, wantReason: v1alpha1.ReasonWaitingForMembers, wantMsg: "WaitingForMembers 7/8",
		},
		"quorum exists, scheduler has not decided": {
			members:   repeat(pending, 8),
			wantPhase: v1alpha1.PodGroupScheduling, wantReason: "Scheduling", wantMsg: "0/8 members scheduled",
		},
		"gang rejected for capacity": {
			members:   append(repeat(pending, 7), member{phase: corev1.PodPending, unschedulable: "0/7 nodes are available: 7 Insufficient cpu. InsufficientCapacity: gang rejected"}),
			wantPhase: v1alpha1.PodGroupScheduling, wantReason: v1alpha1.ReasonInsufficientCapacity, wantMsg: "7 Insufficient cpu",
		},
		"gang timed out at Permit": {
			members:   append(repeat(pending, 7), member{phase: corev1.PodPending, unschedulable: "Timeout: gang rejected: ns/g could not place 8 members within 1m0s"}),
			wantPhase: v1alpha1.PodGroupScheduling, wantReason: v1alpha1.ReasonTimeout, wantMsg: "could not place 8 members",
		},
		"all bound": {
			members:   repeat(bound, 8),
			wantPhase: v1alpha1.PodGroupScheduled, wantReason: v1alpha1.ReasonGangScheduled, wantMsg: "8/8 members scheduled",
			wantCounts: [4]int32{8, 0, 0, 0},
		},
		"all running": {
			members:   repeat(running, 8),
			wantPhase: v1alpha1.PodGroupRunning, wantReason: v1alpha1.ReasonGangScheduled,
			wantCounts: [4]int32{8, 8, 0, 0},
		},
		"workers finished before their launcher: still running": {
			members:   append(repeat(member{node: "n1", phase: corev1.PodSucceeded}, 7), running),
			wantPhase: v1alpha1.PodGroupRunning, wantReason: v1alpha1.ReasonGangScheduled, wantMsg: "1/8 members running, 7 succeeded",
			wantCounts: [4]int32{8, 1, 7, 0},
		},
		"required topology fits no domain": {
			members:   append(repeat(pending, 7), member{phase: corev1.PodPending, unschedulable: "0/8 nodes are available: TopologyUnsatisfiable: gang ns/g needs 8 members (8 × 8 nvidia.com/gpu) in one rack; the largest rack fits 4"}),
			wantPhase: v1alpha1.PodGroupScheduling, wantReason: v1alpha1.ReasonTopologyUnsatisfiable, wantMsg: "the largest rack fits 4",
		},
		"all succeeded": {
			members:   repeat(member{node: "n1", phase: corev1.PodSucceeded}, 8),
			wantPhase: v1alpha1.PodGroupSucceeded, wantReason: v1alpha1.ReasonGangScheduled,
			wantCounts: [4]int32{8, 0, 8, 0},
		},
		"every member exists but the driver role has none": {
			members: repeat(member{phase: corev1.PodPending, role: "executor"}, 8), roles: map[string]int32{"driver": 1, "executor": 4},
			wantPhase: v1alpha1.PodGroupPending, wantReason: v1alpha1.ReasonWaitingForMembers,
			wantMsg: "WaitingForMembers 8/8: the gang starts when 8 members exist, with every role's minimum; roles short: driver 0/1",
		},
		"leader-first LeaderWorkerSet leaders in a larger PodGroup: it says it cannot start, and what to do": {
			members:   repeat(member{phase: corev1.PodPending, leaderFirst: true}, 2),
			wantPhase: v1alpha1.PodGroupPending, wantReason: v1alpha1.ReasonWaitingForMembers,
			wantMsg: "WaitingForMembers 2/8: the gang starts when 8 members exist; LeaderWorkerSet prefill asks for exclusive-topology, so LWS creates a group's workers only once its leader is bound, " +
				"which this PodGroup holds until its members exist: it cannot start. Drop the annotation and set spec.networkTopology",
		},
		"8 executors bound, the driver not yet": {
			members:   append(repeat(member{node: "n1", phase: corev1.PodPending, role: "executor"}, 8), member{phase: corev1.PodPending, role: "driver"}),
			roles:     map[string]int32{"driver": 1},
			wantPhase: v1alpha1.PodGroupScheduling, wantReason: "Scheduling", wantMsg: "8/8 members scheduled; roles short: driver 0/1",
			wantCounts: [4]int32{8, 0, 0, 0},
		},
		"the driver and 7 executors bound": {
			members:   append(repeat(member{node: "n1", phase: corev1.PodPending, role: "executor"}, 7), member{node: "n2", phase: corev1.PodPending, role: "driver"}),
			roles:     map[string]int32{"driver": 1, "executor": 4},
			wantPhase: v1alpha1.PodGroupScheduled, wantReason: v1alpha1.ReasonGangScheduled, wantMsg: "8/8 members scheduled",
			wantCounts: [4]int32{8, 0, 0, 0},
		},
		"a failed member leaves too few": {
			members:   append(repeat(running, 7), member{node: "n1", phase: corev1.PodFailed}),
			wantPhase: v1alpha1.PodGroupFailed, wantReason: ReasonMembersFailed,
			wantCounts: [4]int32{8, 7, 0, 1},
		},
	}
	now := metav1.NewTime(time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC))
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pg := testutil.MakePodGroup("g", "ns").MinMember(8).Obj()
			pg.Spec.MinMemberPerRole = tc.roles
			pg.Generation = 3
			st := ComputeStatus(pg, members(tc.members...), now)
			if st.Phase != tc.wantPhase {
				t.Errorf("phase = %s, want %s", st.Phase, tc.wantPhase)
			}
			if len(st.Conditions) != 1 || st.Conditions[0].Reason != tc.wantReason {
				t.Fatalf("conditions = %+v, want one with reason %s", st.Conditions, tc.wantReason)
			}
			if !strings.Contains(st.Conditions[0].Message, tc.wantMsg) {
				t.Errorf("message = %q, want it to contain %q", st.Conditions[0].Message, tc.wantMsg)
			}
			if got := [4]int32{st.Scheduled, st.Running, st.Succeeded, st.Failed}; got != tc.wantCounts {
				t.Errorf("counts (scheduled, running, succeeded, failed) = %v, want %v", got, tc.wantCounts)
			}
			if st.ObservedGeneration != 3 {
				t.Errorf("observedGeneration = %d, want 3", st.ObservedGeneration)
			}
			if (st.Phase == v1alpha1.PodGroupPending) != (st.ScheduleStartTime == nil) {
				t.Errorf("scheduleStartTime = %v for phase %s", st.ScheduleStartTime, st.Phase)
			}
		})
	}
}

func TestAutoPodGroup(t *testing.T) {
	key := gang.Key{Namespace: "ns", Name: "etl"}
	labelled := func(name string, min string, owner *metav1.OwnerReference) corev1.Pod {
		p := testutil.MakePod(name, "ns").
			Label("pod-group.scheduling.kubenexus.io/name", "etl").
			Label("pod-group.scheduling.kubenexus.io/min-available", min).Obj()
		if owner != nil {
			p.OwnerReferences = []metav1.OwnerReference{*owner}
		}
		return *p
	}
	job := &metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: "etl", UID: types.UID("job-uid"), Controller: ptr.To(true)}

	got := autoPodGroup(t, key, []corev1.Pod{labelled("a", "4", job), labelled("b", "4", job)}, nil)
	want := &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{
			Name: "etl", Namespace: "ns",
			Labels:          map[string]string{"app.kubernetes.io/managed-by": "kubenexus"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "etl", UID: "job-uid"}},
		},
		Spec: v1alpha1.PodGroupSpec{MinMember: 4},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("AutoPodGroup mismatch (-want +got):\n%s", diff)
	}

	// A JobSet's pods are controlled by its child Jobs: the group belongs to the JobSet,
	// found through the Job's controller reference (JobSet v0.8 writes no jobset-uid
	// label), else named by the pods' jobset-uid label (v0.10).
	jsKey := gang.Key{Namespace: "ns", Name: "train-jobset"}
	jsPod := func(uidLabel bool) *corev1.Pod {
		w := testutil.MakePod("train-workers-0-0", "ns").
			Label("jobset.sigs.k8s.io/jobset-name", "train").
			Label("jobset.sigs.k8s.io/replicatedjob-name", "workers").
			Label("pod-group.scheduling.kubenexus.io/name", "train-jobset").Label("pod-group.scheduling.kubenexus.io/min-available", "8").
			OwnerUID("batch/v1", "Job", "train-workers-0", "job-uid")
		if uidLabel {
			w.Label("jobset.sigs.k8s.io/jobset-uid", "jobset-uid")
		}
		return w.Obj()
	}
	jobOwners := func(_ string, ref metav1.OwnerReference) (*metav1.OwnerReference, error) {
		if ref.UID == "job-uid" {
			return &metav1.OwnerReference{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "train", UID: "jobset-uid", Controller: ptr.To(true)}, nil
		}
		return nil, nil
	}
	wantJobSet := []metav1.OwnerReference{{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "train", UID: "jobset-uid"}}
	for name, tc := range map[string]struct {
		pod          *corev1.Pod
		controllerOf workload.ControllerOfFunc
	}{
		"v0.8, through the Job":          {jsPod(false), jobOwners},
		"v0.10, through the Job":         {jsPod(true), jobOwners},
		"v0.10, by the jobset-uid label": {jsPod(true), nil},
	} {
		if got := autoPodGroup(t, jsKey, []corev1.Pod{*tc.pod}, tc.controllerOf); got == nil || !cmp.Equal(got.OwnerReferences, wantJobSet) {
			t.Errorf("JobSet %s: PodGroup %v, want owned by %v", name, got, wantJobSet)
		}
	}
	// JobSet v0.8 without a readable chain: the pod's own controller, the Job.
	if got := autoPodGroup(t, jsKey, []corev1.Pod{*jsPod(false)}, nil); got == nil || len(got.OwnerReferences) != 1 || got.OwnerReferences[0].Kind != "Job" {
		t.Errorf("JobSet v0.8 pod with no chain to read: PodGroup %v, want owned by its Job", got)
	}

	// A LeaderWorkerSet v0.7 group: the worker's StatefulSet is controlled by the
	// leader pod, whose StatefulSet the LeaderWorkerSet controls.
	lwsKey := gang.Key{Namespace: "ns", Name: "llm-leaderworkerset-1"}
	worker := testutil.MakePod("llm-1-2", "ns").
		Label("leaderworkerset.sigs.k8s.io/name", "llm").Label("leaderworkerset.sigs.k8s.io/group-index", "1").
		Label("leaderworkerset.sigs.k8s.io/worker-index", "2").
		Label("pod-group.scheduling.kubenexus.io/name", "llm-leaderworkerset-1").Label("pod-group.scheduling.kubenexus.io/min-available", "4").
		OwnerUID("apps/v1", "StatefulSet", "llm-1", "sts-group").Obj()
	lwsOwners := map[types.UID]*metav1.OwnerReference{
		"sts-group":  {APIVersion: "v1", Kind: "Pod", Name: "llm-1", UID: "leader-pod", Controller: ptr.To(true)},
		"leader-pod": {APIVersion: "apps/v1", Kind: "StatefulSet", Name: "llm", UID: "sts-leader", Controller: ptr.To(true)},
		"sts-leader": {APIVersion: "leaderworkerset.x-k8s.io/v1", Kind: "LeaderWorkerSet", Name: "llm", UID: "lws-uid", Controller: ptr.To(true)},
	}
	got = autoPodGroup(t, lwsKey, []corev1.Pod{*worker}, func(_ string, ref metav1.OwnerReference) (*metav1.OwnerReference, error) {
		return lwsOwners[ref.UID], nil
	})
	wantLWS := []metav1.OwnerReference{{APIVersion: "leaderworkerset.x-k8s.io/v1", Kind: "LeaderWorkerSet", Name: "llm", UID: "lws-uid"}}
	if got == nil || !cmp.Equal(got.OwnerReferences, wantLWS) {
		t.Errorf("LeaderWorkerSet group: PodGroup %v, want owned by %v", got, wantLWS)
	}

	// A failed read is returned, not turned into a wrong owner.
	failing := errors.New("apiserver unavailable")
	if _, err := AutoPodGroup(jsKey, []corev1.Pod{*jsPod(false)}, func(string, metav1.OwnerReference) (*metav1.OwnerReference, error) { return nil, failing }); !errors.Is(err, failing) {
		t.Errorf("AutoPodGroup with a failing owner read: error %v, want %v", err, failing)
	}

	objectDialect := *testutil.MakePod("c", "ns").PodGroup("etl").Obj()
	if pg := autoPodGroup(t, key, []corev1.Pod{objectDialect}, nil); pg != nil {
		t.Errorf("AutoPodGroup created %v for pods that name a PodGroup object; the user owns that object", pg.Name)
	}
	if pg := autoPodGroup(t, key, nil, nil); pg != nil {
		t.Errorf("AutoPodGroup created a group without members")
	}
}

func autoPodGroup(t *testing.T, key gang.Key, members []corev1.Pod, controllerOf workload.ControllerOfFunc) *v1alpha1.PodGroup {
	t.Helper()
	pg, err := AutoPodGroup(key, members, controllerOf)
	if err != nil {
		t.Fatal(err)
	}
	return pg
}
