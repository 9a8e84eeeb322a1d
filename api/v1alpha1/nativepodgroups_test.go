package v1alpha1

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
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
	if pg.Spec.NativeTopologyKey != "" || pg.Spec.DisruptWhole || pg.Spec.NativeParent != "" {
		t.Errorf("no constraints: topology key %q, disrupt whole %v; want none", pg.Spec.NativeTopologyKey, pg.Spec.DisruptWhole)
	}

	constrained := gang.DeepCopy()
	constrained.Spec.SchedulingConstraints = &schedulingv1beta1.PodGroupSchedulingConstraints{Topology: []schedulingv1beta1.TopologyConstraint{{Key: LabelRack}}}
	constrained.Spec.DisruptionMode = &schedulingv1beta1.DisruptionMode{All: &schedulingv1beta1.AllDisruptionMode{}}
	if pg, err := FromNativePodGroup(nativeUnstructured(t, constrained)); err != nil || pg.Spec.NativeTopologyKey != LabelRack || !pg.Spec.DisruptWhole {
		t.Errorf("topology and disruptionMode All: %+v, %v; want key %s, disrupted whole", pg, err, LabelRack)
	}
	child := gang.DeepCopy()
	parent := "serve"
	child.Spec.ParentCompositePodGroupName = &parent
	if pg, err := FromNativePodGroup(nativeUnstructured(t, child)); err != nil || pg.Spec.NativeParent != "serve" {
		t.Errorf("a composite's child: %+v, %v; want parent serve", pg, err)
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

func compositeUnstructured(t *testing.T, c *schedulingv1alpha3.CompositePodGroup) *unstructured.Unstructured {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetGroupVersionKind(CompositePodGroupGVK)
	return u
}

func TestFromCompositePodGroup(t *testing.T) {
	child := func(name string, min int32, key string) *PodGroup {
		pg := &PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name}}
		pg.Spec.MinMember, pg.Spec.NativeTopologyKey, pg.Spec.NativeParent = min, key, "serve"
		return pg
	}
	composite := func(minGroups int32, key string) *schedulingv1alpha3.CompositePodGroup {
		c := &schedulingv1alpha3.CompositePodGroup{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "serve", UID: "c1"},
			Spec: schedulingv1alpha3.CompositePodGroupSpec{
				PriorityClassName: "high",
				SchedulingPolicy:  schedulingv1alpha3.CompositePodGroupSchedulingPolicy{Gang: &schedulingv1alpha3.CompositeGangSchedulingPolicy{MinGroupCount: minGroups}},
			},
		}
		if key != "" {
			c.Spec.SchedulingConstraints = &schedulingv1alpha3.CompositePodGroupSchedulingConstraints{Topology: []schedulingv1alpha3.TopologyConstraint{{Key: key}}}
		}
		return c
	}
	tests := map[string]struct {
		composite *schedulingv1alpha3.CompositePodGroup
		children  []*PodGroup
		wantMin   int32
		wantRoles map[string]int32
		wantNeed  int32
		wantKey   string
		wantGroup []NativeGroupKey
		wantErr   string
	}{
		"every child: the sum, a minimum per child, each child's key a sub-group": {
			composite: composite(2, LabelRack),
			children:  []*PodGroup{child("prefill", 2, LabelGPUClique), child("decode", 4, LabelGPUClique)},
			wantMin:   6, wantRoles: map[string]int32{"decode": 4, "prefill": 2}, wantKey: LabelRack,
			wantGroup: []NativeGroupKey{{Role: "decode", Key: LabelGPUClique}, {Role: "prefill", Key: LabelGPUClique}},
		},
		"one of three: the smallest minimum, any one child at its minimum": {
			composite: composite(1, ""),
			children:  []*PodGroup{child("a", 3, ""), child("b", 2, ""), child("c", 5, "")},
			wantMin:   2, wantRoles: map[string]int32{"a": 3, "b": 2, "c": 5}, wantNeed: 1,
		},
		"two of three: the two smallest": {
			composite: composite(2, ""),
			children:  []*PodGroup{child("a", 3, ""), child("b", 2, ""), child("c", 5, "")},
			wantMin:   5, wantRoles: map[string]int32{"a": 3, "b": 2, "c": 5}, wantNeed: 2,
		},
		"a child not created yet counts one member, so that the gang waits for it": {
			composite: composite(3, ""),
			children:  []*PodGroup{child("a", 3, ""), child("b", 2, "")},
			wantMin:   6, wantRoles: map[string]int32{"a": 3, "b": 2},
		},
		"basic policy: no gang": {
			composite: func() *schedulingv1alpha3.CompositePodGroup {
				c := composite(1, "")
				c.Spec.SchedulingPolicy = schedulingv1alpha3.CompositePodGroupSchedulingPolicy{Basic: &schedulingv1alpha3.CompositeBasicSchedulingPolicy{}}
				return c
			}(),
			wantErr: "spec.schedulingPolicy is basic",
		},
		"minGroupCount 0": {composite: composite(0, ""), wantErr: "spec.schedulingPolicy.gang.minGroupCount is 0; it must be at least 1"},
		"too many members": {
			composite: composite(2, ""),
			children:  []*PodGroup{child("a", 60000, ""), child("b", 60000, "")},
			wantErr:   "add up to 120000 members; at most 100000",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pg, err := FromCompositePodGroup(compositeUnstructured(t, tc.composite), tc.children)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "CompositePodGroup ml/serve") {
					t.Fatalf("error %v, want one naming ml/serve and %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if pg.Spec.MinMember != tc.wantMin || pg.Spec.NativeTopologyKey != tc.wantKey || pg.Spec.PriorityClassName != "high" || pg.UID != "c1" || pg.Kind != "CompositePodGroup" || pg.APIVersion != "scheduling.k8s.io/v1alpha3" {
				t.Errorf("read as minMember %d, key %q, priorityClassName %q, uid %q, %s %s", pg.Spec.MinMember, pg.Spec.NativeTopologyKey, pg.Spec.PriorityClassName, pg.UID, pg.APIVersion, pg.Kind)
			}
			if diff := cmp.Diff(tc.wantRoles, pg.Spec.MinMemberPerRole); diff != "" {
				t.Errorf("minMemberPerRole (-want +got):\n%s", diff)
			}
			if pg.Spec.MinRolesMet != tc.wantNeed {
				t.Errorf("minRolesMet %d, want %d", pg.Spec.MinRolesMet, tc.wantNeed)
			}
			if diff := cmp.Diff(tc.wantGroup, pg.Spec.NativeGroupKeys); diff != "" {
				t.Errorf("group keys (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCompositeGangOf(t *testing.T) {
	c := &schedulingv1alpha3.CompositePodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "inner"}}
	c.Spec.SchedulingPolicy.Gang = &schedulingv1alpha3.CompositeGangSchedulingPolicy{MinGroupCount: 1}
	parent := "outer"
	c.Spec.ParentCompositePodGroupName = &parent
	if got := CompositeGangOf(compositeUnstructured(t, c)); got != (CompositeGang{Parent: "outer", Gang: true}) {
		t.Errorf("got %+v", got)
	}
	c.Spec.SchedulingPolicy = schedulingv1alpha3.CompositePodGroupSchedulingPolicy{Basic: &schedulingv1alpha3.CompositeBasicSchedulingPolicy{}}
	c.Spec.ParentCompositePodGroupName = nil
	if got := CompositeGangOf(compositeUnstructured(t, c)); got != (CompositeGang{}) {
		t.Errorf("basic root: got %+v", got)
	}
}

func TestCompositePodGroupStatus(t *testing.T) {
	c := &schedulingv1alpha3.CompositePodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "serve"}}
	c.Spec.SchedulingPolicy.Gang = &schedulingv1alpha3.CompositeGangSchedulingPolicy{MinGroupCount: 2}
	u := compositeUnstructured(t, c)
	st := PodGroupStatus{Conditions: []metav1.Condition{{Type: PodGroupConditionScheduled, Status: metav1.ConditionFalse, Reason: ReasonInsufficientCapacity, Message: "InsufficientCapacity: 3 of 6 fit"}}}
	out, err := CompositePodGroupStatus(u, st)
	if err != nil {
		t.Fatal(err)
	}
	got := &schedulingv1alpha3.CompositePodGroupStatus{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(out, got); err != nil {
		t.Fatal(err)
	}
	cond := meta.FindStatusCondition(got.Conditions, CompositeInitiallyScheduled)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != schedulingv1beta1.PodGroupReasonUnschedulable || cond.Message != "InsufficientCapacity: 3 of 6 fit" {
		t.Errorf("condition %+v, want %s False/Unschedulable with KubeNexus's message", cond, CompositeInitiallyScheduled)
	}
	if meta.FindStatusCondition(got.Conditions, schedulingv1beta1.PodGroupInitiallyScheduled) != nil {
		t.Errorf("a composite got a PodGroup's condition: %+v", got.Conditions)
	}
}

func TestCompositeChildren(t *testing.T) {
	parent, other := "serve", "other"
	child := func(name string, p *string) unstructured.Unstructured {
		pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name}}
		pg.Spec.SchedulingPolicy.Gang = &schedulingv1beta1.GangSchedulingPolicy{MinCount: 2}
		pg.Spec.ParentCompositePodGroupName = p
		return *nativeUnstructured(t, pg)
	}
	var list []*unstructured.Unstructured
	for _, u := range []unstructured.Unstructured{child("prefill", &parent), child("lone", nil), child("elsewhere", &other), child("decode", &parent)} {
		list = append(list, &u)
	}
	var names []string
	for _, kid := range CompositeChildren(list, "serve") {
		names = append(names, kid.Name)
	}
	if diff := cmp.Diff([]string{"prefill", "decode"}, names); diff != "" {
		t.Errorf("children of serve (-want +got):\n%s", diff)
	}
}
