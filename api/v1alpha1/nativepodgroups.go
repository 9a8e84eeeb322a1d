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

	corev1 "k8s.io/api/core/v1"
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
	return pg, nil
}

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
	out := append([]metav1.Condition(nil), current...)
	if c := meta.FindStatusCondition(out, schedulingv1beta1.PodGroupInitiallyScheduled); c != nil && c.Status == metav1.ConditionTrue {
		return out
	}
	ours := meta.FindStatusCondition(st.Conditions, PodGroupConditionScheduled)
	if ours == nil {
		return out
	}
	want := metav1.Condition{
		Type:               schedulingv1beta1.PodGroupInitiallyScheduled,
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
