package v1alpha1

import (
	"strings"
	"testing"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

func nativeUnstructured(t *testing.T, pg *schedulingv1beta1.PodGroup) *unstructured.Unstructured {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pg)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetGroupVersionKind(NativePodGroupGVK)
	return u
}

func TestFromNativePodGroup(t *testing.T) {
	gang := &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "train", UID: "u1"},
		Spec: schedulingv1beta1.PodGroupSpec{
			PriorityClassName: "high",
			SchedulingPolicy:  schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 4}},
		},
	}
	pg, err := FromNativePodGroup(nativeUnstructured(t, gang))
	if err != nil {
		t.Fatal(err)
	}
	if pg.Spec.MinMember != 4 || pg.Spec.PriorityClassName != "high" || pg.UID != "u1" || pg.APIVersion != "scheduling.k8s.io/v1beta1" {
		t.Errorf("gang policy read as minMember %d, priorityClassName %q, uid %q, apiVersion %q", pg.Spec.MinMember, pg.Spec.PriorityClassName, pg.UID, pg.APIVersion)
	}

	basic := gang.DeepCopy()
	basic.Spec.SchedulingPolicy = schedulingv1beta1.PodGroupSchedulingPolicy{Basic: &schedulingv1beta1.BasicSchedulingPolicy{}}
	if pg, err := FromNativePodGroup(nativeUnstructured(t, basic)); err != nil || pg.Spec.MinMember != 1 {
		t.Errorf("basic policy: minMember %v, err %v; want 1 (members placed one by one)", pg, err)
	}

	zero := gang.DeepCopy()
	zero.Spec.SchedulingPolicy.Gang.MinCount = 0
	if _, err := FromNativePodGroup(nativeUnstructured(t, zero)); err == nil || !strings.Contains(err.Error(), "spec.schedulingPolicy.gang.minCount is 0") {
		t.Errorf("minCount 0: error %v, want one naming spec.schedulingPolicy.gang.minCount", err)
	}
	if pg.Spec.NativeTopologyKey != "" || pg.Spec.DisruptWhole {
		t.Errorf("no constraints: topology key %q, disrupt whole %v; want none", pg.Spec.NativeTopologyKey, pg.Spec.DisruptWhole)
	}

	constrained := gang.DeepCopy()
	constrained.Spec.SchedulingConstraints = &schedulingv1beta1.PodGroupSchedulingConstraints{Topology: []schedulingv1beta1.TopologyConstraint{{Key: LabelRack}}}
	constrained.Spec.DisruptionMode = &schedulingv1beta1.DisruptionMode{All: &schedulingv1beta1.AllDisruptionMode{}}
	if pg, err := FromNativePodGroup(nativeUnstructured(t, constrained)); err != nil || pg.Spec.NativeTopologyKey != LabelRack || !pg.Spec.DisruptWhole {
		t.Errorf("topology and disruptionMode All: %+v, %v; want key %s, disrupted whole", pg, err, LabelRack)
	}
	single := constrained.DeepCopy()
	single.Spec.DisruptionMode = &schedulingv1beta1.DisruptionMode{Single: &schedulingv1beta1.SingleDisruptionMode{}}
	if pg, err := FromNativePodGroup(nativeUnstructured(t, single)); err != nil || pg.Spec.DisruptWhole {
		t.Errorf("disruptionMode Single: %+v, %v; want members disrupted one by one", pg, err)
	}
}

func TestNativePodGroupConditions(t *testing.T) {
	status := func(s metav1.ConditionStatus, reason, msg string) PodGroupStatus {
		return PodGroupStatus{Conditions: []metav1.Condition{{Type: PodGroupConditionScheduled, Status: s, Reason: reason, Message: msg}}}
	}
	initially := func(conds []metav1.Condition) *metav1.Condition {
		return meta.FindStatusCondition(conds, schedulingv1beta1.PodGroupInitiallyScheduled)
	}
	disruption := metav1.Condition{Type: schedulingv1beta1.DisruptionTarget, Status: metav1.ConditionTrue, Reason: "PreemptionByScheduler"}

	waiting := NativePodGroupConditions([]metav1.Condition{disruption}, status(metav1.ConditionFalse, ReasonWaitingForMembers, "WaitingForMembers 2/4"))
	if c := initially(waiting); c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonWaitingForMembers || c.Message != "WaitingForMembers 2/4" {
		t.Errorf("waiting for members: %+v", c)
	}
	if meta.FindStatusCondition(waiting, schedulingv1beta1.DisruptionTarget) == nil {
		t.Error("the DisruptionTarget condition was dropped")
	}

	short := NativePodGroupConditions(waiting, status(metav1.ConditionFalse, ReasonInsufficientCapacity, "InsufficientCapacity: 3 of 4 fit"))
	if c := initially(short); c.Reason != schedulingv1beta1.PodGroupReasonUnschedulable || c.Message != "InsufficientCapacity: 3 of 4 fit" {
		t.Errorf("no room: %+v, want reason Unschedulable with KubeNexus's message", c)
	}

	scheduled := NativePodGroupConditions(short, status(metav1.ConditionTrue, ReasonGangScheduled, "4/4 members scheduled"))
	if c := initially(scheduled); c.Status != metav1.ConditionTrue || c.Reason != NativeScheduledReason {
		t.Errorf("bound: %+v, want True/Scheduled", c)
	}

	// True is terminal: members that fail later do not turn it back.
	later := NativePodGroupConditions(scheduled, status(metav1.ConditionFalse, "MembersFailed", "2 members failed"))
	if c := initially(later); c.Status != metav1.ConditionTrue || c.Reason != NativeScheduledReason {
		t.Errorf("after members failed: %+v, want it to stay True", c)
	}
}
