package v1alpha1

// The adapter for Kubernetes' own gang API: PodGroups of scheduling.k8s.io/v1beta1
// (served from 1.37 when the API server runs with the GenericWorkload feature gate
// and --runtime-config=scheduling.k8s.io/v1beta1=true), named by pods in
// spec.schedulingGroup.podGroupName. The API changed between 1.35 (v1alpha1
// Workloads, pods' spec.workloadRef) and 1.37 and may change again: everything that
// knows its shape is in this file; the scheduler's cache, the gang identity and the
// status controller see it as one more PodGroup API, as they see scheduler-plugins'
// and Volcano's.

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// NativePodGroupGVK is Kubernetes' PodGroup kind (scheduling.k8s.io/v1beta1).
var NativePodGroupGVK = schedulingv1beta1.SchemeGroupVersion.WithKind("PodGroup")

// NativePodGroupResource is its resource name, for discovery.
const NativePodGroupResource = "podgroups"

// CompositePodGroupGVK is Kubernetes' CompositePodGroup kind
// (scheduling.k8s.io/v1alpha3, served from 1.37 with the CompositePodGroup feature
// gate and --runtime-config=scheduling.k8s.io/v1alpha3=true): PodGroups whose
// spec.parentCompositePodGroupName names it are its children.
var CompositePodGroupGVK = schedulingv1alpha3.SchemeGroupVersion.WithKind("CompositePodGroup")

// NewCompositePodGroup returns an empty CompositePodGroup to read into.
func NewCompositePodGroup() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(CompositePodGroupGVK)
	return u
}

// NewNativePodGroupList returns an empty list of Kubernetes PodGroups to read into.
func NewNativePodGroupList() *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(NativePodGroupGVK.GroupVersion().WithKind("PodGroupList"))
	return l
}

// NewNativePodGroup returns an empty native PodGroup to read into.
func NewNativePodGroup() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(NativePodGroupGVK)
	return u
}

// NativeGroupOf returns the PodGroup the pod names in spec.schedulingGroup, if any.
func NativeGroupOf(pod *corev1.Pod) (string, bool) {
	if sg := pod.Spec.SchedulingGroup; sg != nil && sg.PodGroupName != nil {
		return *sg.PodGroupName, true
	}
	return "", false
}

// FromNativePodGroup reads a native PodGroup into the KubeNexus type: minMember is
// the gang policy's minCount, or 1 under the basic policy (members are placed one by
// one, as Kubernetes does); priorityClassName is copied. The result's APIVersion is
// scheduling.k8s.io/v1beta1. spec.schedulingConstraints.topology's one key (a node
// label; the API allows one) becomes NativeTopologyKey, which topology.PolicyOf maps
// to the KubeNexusConfig's level of that label, required; spec.disruptionMode All
// becomes DisruptWhole. Not read: resourceClaims (claims shared by the group are
// counted per pod by the plan, as each pod's own).
func FromNativePodGroup(u *unstructured.Unstructured) (*PodGroup, error) {
	in := &schedulingv1beta1.PodGroup{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, in); err != nil {
		return nil, fmt.Errorf("PodGroup %s/%s (%s): %w", u.GetNamespace(), u.GetName(), NativePodGroupGVK.GroupVersion(), err)
	}
	pg := &PodGroup{ObjectMeta: in.ObjectMeta}
	pg.APIVersion, pg.Kind = NativePodGroupGVK.GroupVersion().String(), "PodGroup"
	pg.Spec.PriorityClassName = in.Spec.PriorityClassName
	switch p := in.Spec.SchedulingPolicy; {
	case p.Gang != nil && p.Gang.MinCount >= 1:
		pg.Spec.MinMember = p.Gang.MinCount
	case p.Gang != nil:
		return nil, fmt.Errorf("PodGroup %s/%s (%s): spec.schedulingPolicy.gang.minCount is %d; it must be at least 1", in.Namespace, in.Name, NativePodGroupGVK.GroupVersion(), p.Gang.MinCount)
	default:
		pg.Spec.MinMember = 1
	}
	if c := in.Spec.SchedulingConstraints; c != nil && len(c.Topology) > 0 {
		pg.Spec.NativeTopologyKey = c.Topology[0].Key
	}
	pg.Spec.DisruptWhole = in.Spec.DisruptionMode != nil && in.Spec.DisruptionMode.All != nil
	if in.Spec.ParentCompositePodGroupName != nil {
		pg.Spec.NativeParent = *in.Spec.ParentCompositePodGroupName
	}
	return pg, nil
}

// CompositeGang is what decides whether a CompositePodGroup gangs its children:
// its parent (a CompositePodGroup of its own, "" for a root) and whether its
// scheduling policy is gang (all-or-nothing over its children) rather than basic.
type CompositeGang struct {
	Parent string
	Gang   bool
}

// CompositeGangOf reads those two fields of a CompositePodGroup.
func CompositeGangOf(u *unstructured.Unstructured) CompositeGang {
	_, gang, _ := unstructured.NestedMap(u.Object, "spec", "schedulingPolicy", "gang")
	return CompositeGang{Parent: ParentCompositeOf(u), Gang: gang}
}

// ParentCompositeOf is the CompositePodGroup a Kubernetes PodGroup's (or
// CompositePodGroup's) spec.parentCompositePodGroupName names ("" for none).
func ParentCompositeOf(pg *unstructured.Unstructured) string {
	parent, _, _ := unstructured.NestedString(pg.Object, "spec", "parentCompositePodGroupName")
	return parent
}

// CompositeChildren reads the Kubernetes PodGroups of groups whose
// spec.parentCompositePodGroupName is composite (PodGroups that do not read are
// left out, as everywhere they are read).
func CompositeChildren(groups []*unstructured.Unstructured, composite string) []*PodGroup {
	var out []*PodGroup
	for _, g := range groups {
		if kid, err := FromNativePodGroup(g); err == nil && kid.Spec.NativeParent == composite {
			out = append(out, kid)
		}
	}
	return out
}

// FromCompositePodGroup reads a root CompositePodGroup whose policy is gang, with
// its child PodGroups (read by FromNativePodGroup), into one KubeNexus gang: its
// members are the children's pods and each child is a role (a member's role is the
// PodGroup its spec.schedulingGroup names, workload.RoleOf) whose minimum is the
// child's minCount. minGroupCount children must meet their minimum: when it covers
// every child, minMember is the sum of the children's minimums and each child's
// minimum is a per-role minimum; when it is smaller, minMember is the sum of the
// minGroupCount smallest minimums and no child has a minimum of its own (any
// members of that number start the gang). While fewer children exist than
// minGroupCount, each missing one counts one member, so that the gang waits for it.
// The composite's topology key is the gang's required level (NativeTopologyKey),
// each child's its role's (NativeGroupKeys); disruptionMode All keeps preemption
// from shrinking the gang; priorityClassName is copied. The result's APIVersion is
// scheduling.k8s.io/v1alpha3 and Kind CompositePodGroup.
func FromCompositePodGroup(u *unstructured.Unstructured, children []*PodGroup) (*PodGroup, error) {
	in := &schedulingv1alpha3.CompositePodGroup{}
	what := func() string {
		return fmt.Sprintf("CompositePodGroup %s/%s (%s)", u.GetNamespace(), u.GetName(), CompositePodGroupGVK.GroupVersion())
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, in); err != nil {
		return nil, fmt.Errorf("%s: %w", what(), err)
	}
	g := in.Spec.SchedulingPolicy.Gang
	switch {
	case g == nil:
		return nil, fmt.Errorf("%s: spec.schedulingPolicy is basic: its children are scheduled each on its own, not as one gang", what())
	case g.MinGroupCount < 1:
		return nil, fmt.Errorf("%s: spec.schedulingPolicy.gang.minGroupCount is %d; it must be at least 1", what(), g.MinGroupCount)
	}
	pg := &PodGroup{ObjectMeta: in.ObjectMeta}
	pg.APIVersion, pg.Kind = CompositePodGroupGVK.GroupVersion().String(), CompositePodGroupGVK.Kind
	pg.Spec.PriorityClassName = in.Spec.PriorityClassName
	pg.Spec.DisruptWhole = in.Spec.DisruptionMode != nil && in.Spec.DisruptionMode.All != nil
	if c := in.Spec.SchedulingConstraints; c != nil && len(c.Topology) > 0 {
		pg.Spec.NativeTopologyKey = c.Topology[0].Key
	}
	kids := slices.Clone(children)
	slices.SortFunc(kids, func(a, b *PodGroup) int { return strings.Compare(a.Name, b.Name) })
	need := int(g.MinGroupCount)
	mins := make([]int32, 0, len(kids))
	for _, c := range kids {
		mins = append(mins, c.Spec.MinMember)
		if c.Spec.NativeTopologyKey != "" {
			pg.Spec.NativeGroupKeys = append(pg.Spec.NativeGroupKeys, NativeGroupKey{Role: c.Name, Key: c.Spec.NativeTopologyKey})
		}
	}
	pg.Spec.MinMemberPerRole = make(map[string]int32, len(kids))
	for _, c := range kids {
		pg.Spec.MinMemberPerRole[c.Name] = c.Spec.MinMember
	}
	if need < len(kids) {
		// Any need of the children, each with its minimum: the quorum is the sum of
		// the need smallest minimums.
		pg.Spec.MinRolesMet = int32(need)
		slices.Sort(mins)
		mins = mins[:need]
	}
	total := int64(max(need-len(kids), 0))
	for _, m := range mins {
		total += int64(m)
	}
	if total > MaxCompositeMembers {
		return nil, fmt.Errorf("%s: its children's minCounts add up to %d members; at most %d", what(), total, MaxCompositeMembers)
	}
	pg.Spec.MinMember = int32(total)
	return pg, nil
}

// MaxCompositeMembers is the largest quorum a CompositePodGroup's children may add
// up to (a PodGroup's minMember limit).
const MaxCompositeMembers = 100000

// NativePodGroupStatus returns the status u (a native PodGroup) should have for a
// gang whose KubeNexus status is st: its own, with the PodGroupInitiallyScheduled
// condition of NativePodGroupConditions.
func NativePodGroupStatus(u *unstructured.Unstructured, st PodGroupStatus) (map[string]any, error) {
	in := &schedulingv1beta1.PodGroup{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, in); err != nil {
		return nil, fmt.Errorf("PodGroup %s/%s (%s): %w", u.GetNamespace(), u.GetName(), NativePodGroupGVK.GroupVersion(), err)
	}
	in.Status.Conditions = NativePodGroupConditions(in.Status.Conditions, st)
	return runtime.DefaultUnstructuredConverter.ToUnstructured(&in.Status)
}

// NativeScheduledReason is the reason of a True PodGroupInitiallyScheduled
// condition (kube-scheduler's word for it).
const NativeScheduledReason = "Scheduled"

// NativePodGroupConditions returns the status.conditions a native PodGroup should
// carry, given the ones it has and the gang's KubeNexus status st:
// PodGroupInitiallyScheduled is True ("Scheduled") once minMember members were
// bound, and stays True from then on, as the API defines it; until then it is False
// with kube-scheduler's reason Unschedulable when members wait for room (the message
// says why, as on the KubeNexus PodGroup), or WaitingForMembers while fewer than
// minMember exist. Other conditions (DisruptionTarget) are kept as they are.
func NativePodGroupConditions(current []metav1.Condition, st PodGroupStatus) []metav1.Condition {
	return initiallyScheduled(current, st, schedulingv1beta1.PodGroupInitiallyScheduled)
}

// CompositeInitiallyScheduled is the condition of a CompositePodGroup whose subtree
// was placed (kube-scheduler's name for it).
const CompositeInitiallyScheduled = "CompositePodGroupInitiallyScheduled"

// CompositePodGroupStatus returns the status u (a CompositePodGroup) should have
// for its gang's KubeNexus status st: its own, with the
// CompositePodGroupInitiallyScheduled condition kept as NativePodGroupConditions
// keeps a PodGroup's PodGroupInitiallyScheduled.
func CompositePodGroupStatus(u *unstructured.Unstructured, st PodGroupStatus) (map[string]any, error) {
	in := &schedulingv1alpha3.CompositePodGroup{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, in); err != nil {
		return nil, fmt.Errorf("CompositePodGroup %s/%s (%s): %w", u.GetNamespace(), u.GetName(), CompositePodGroupGVK.GroupVersion(), err)
	}
	in.Status.Conditions = initiallyScheduled(in.Status.Conditions, st, CompositeInitiallyScheduled)
	return runtime.DefaultUnstructuredConverter.ToUnstructured(&in.Status)
}

// initiallyScheduled keeps the condition condType of Kubernetes' group APIs in
// current from the gang's KubeNexus status st (see NativePodGroupConditions).
func initiallyScheduled(current []metav1.Condition, st PodGroupStatus, condType string) []metav1.Condition {
	out := append([]metav1.Condition(nil), current...)
	if c := meta.FindStatusCondition(out, condType); c != nil && c.Status == metav1.ConditionTrue {
		return out
	}
	ours := meta.FindStatusCondition(st.Conditions, PodGroupConditionScheduled)
	if ours == nil {
		return out
	}
	want := metav1.Condition{
		Type:               condType,
		Status:             ours.Status,
		ObservedGeneration: ours.ObservedGeneration,
		Reason:             ours.Reason,
		Message:            ours.Message,
	}
	switch {
	case ours.Status == metav1.ConditionTrue:
		want.Reason = NativeScheduledReason
	case ours.Reason != ReasonWaitingForMembers:
		want.Reason = schedulingv1beta1.PodGroupReasonUnschedulable
	}
	meta.SetStatusCondition(&out, want)
	return out
}
