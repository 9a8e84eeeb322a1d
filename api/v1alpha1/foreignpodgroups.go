package v1alpha1

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SigsPodGroupGVK is scheduler-plugins' PodGroup kind.
var SigsPodGroupGVK = schema.GroupVersionKind{Group: SigsPodGroupGroup, Version: SigsPodGroupVersion, Kind: "PodGroup"}

// NewSigsPodGroup returns an empty scheduler-plugins PodGroup to read into.
func NewSigsPodGroup() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(SigsPodGroupGVK)
	return u
}

// FromSigsPodGroup reads a scheduler-plugins PodGroup into the KubeNexus type: its
// metadata, the spec fields both APIs have (minMember, minResources,
// scheduleTimeoutSeconds) and its scheduleStartTime. Its phase is not read (the
// phases differ). The result's APIVersion is scheduler-plugins'.
func FromSigsPodGroup(u *unstructured.Unstructured) (*PodGroup, error) {
	return fromForeignPodGroup(u, SigsPodGroupGVK, "minMember", "minResources", "scheduleTimeoutSeconds")
}

// FromVolcanoPodGroup reads a Volcano PodGroup into the KubeNexus type: its metadata
// and the spec fields both APIs have (minMember, minResources, priorityClassName).
// The result's APIVersion is Volcano's.
func FromVolcanoPodGroup(u *unstructured.Unstructured) (*PodGroup, error) {
	return fromForeignPodGroup(u, VolcanoPodGroupGVK, "minMember", "minResources", "priorityClassName")
}

// fromForeignPodGroup reads another scheduler's PodGroup: metadata, the named spec
// fields (their JSON shape is the same as ours) and status.scheduleStartTime.
func fromForeignPodGroup(u *unstructured.Unstructured, gvk schema.GroupVersionKind, fields ...string) (*PodGroup, error) {
	pg := &PodGroup{}
	spec := map[string]any{}
	for _, f := range fields {
		if v, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", f); ok && v != nil {
			spec[f] = v
		}
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"metadata": u.Object["metadata"], "spec": spec}, pg); err != nil {
		return nil, fmt.Errorf("PodGroup %s/%s (%s): %w", u.GetNamespace(), u.GetName(), gvk.GroupVersion(), err)
	}
	if s, ok, _ := unstructured.NestedString(u.Object, "status", "scheduleStartTime"); ok && s != "" {
		t := &metav1.Time{}
		if err := t.UnmarshalQueryParameter(s); err == nil && !t.IsZero() {
			pg.Status.ScheduleStartTime = t
		}
	}
	pg.APIVersion, pg.Kind = gvk.GroupVersion().String(), "PodGroup"
	return pg, nil
}

// SigsPodGroupStatus is the status scheduler-plugins' controller would write for a
// gang whose KubeNexus status is st: the same counts, and the phase in its
// vocabulary (Pending, Scheduling, Running, Finished, Failed; it has no Scheduled
// phase, so a gang bound but not yet running is Scheduling).
func SigsPodGroupStatus(st PodGroupStatus) map[string]any {
	phase := string(st.Phase)
	switch st.Phase {
	case PodGroupScheduled:
		phase = string(PodGroupScheduling)
	case PodGroupSucceeded:
		phase = SigsPodGroupFinished
	}
	out := map[string]any{"phase": phase}
	for k, v := range map[string]int32{"running": st.Running, "succeeded": st.Succeeded, "failed": st.Failed} {
		if v > 0 {
			out[k] = int64(v)
		}
	}
	if st.OccupiedBy != "" {
		out["occupiedBy"] = st.OccupiedBy
	}
	if st.ScheduleStartTime != nil {
		out["scheduleStartTime"] = st.ScheduleStartTime.UTC().Format("2006-01-02T15:04:05Z")
	}
	return out
}

// VolcanoPodGroupGVK is Volcano's PodGroup kind.
var VolcanoPodGroupGVK = schema.GroupVersionKind{Group: VolcanoPodGroupGroup, Version: VolcanoPodGroupVersion, Kind: "PodGroup"}

// NewVolcanoPodGroup returns an empty Volcano PodGroup to read into.
func NewVolcanoPodGroup() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(VolcanoPodGroupGVK)
	return u
}

// NewVolcanoPodGroupList returns an empty list of Volcano PodGroups to read into.
func NewVolcanoPodGroupList() *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(VolcanoPodGroupGVK.GroupVersion().WithKind("PodGroupList"))
	return l
}

// Volcano's PodGroup phases.
const (
	VolcanoPodGroupPending   = "Pending"
	VolcanoPodGroupInqueue   = "Inqueue"
	VolcanoPodGroupRunning   = "Running"
	VolcanoPodGroupCompleted = "Completed"
	VolcanoPodGroupUnknown   = "Unknown"
)

// VolcanoPodGroupStatus is the status the Volcano scheduler would write for a gang
// whose KubeNexus status is st. admitted says the gang was admitted (Inqueue) now or
// before: its minResources fit the cluster's free capacity. Volcano's phases: Pending
// (not admitted: its controller creates no pod yet), Inqueue (admitted, members being
// created and scheduled), Running (minMember running), Completed (minMember
// succeeded); a gang that can no longer reach minMember is Unknown, as Volcano
// reports a gang with failed members.
func VolcanoPodGroupStatus(st PodGroupStatus, admitted bool) map[string]any {
	var phase string
	switch st.Phase {
	case PodGroupSucceeded:
		phase = VolcanoPodGroupCompleted
	case PodGroupFailed:
		phase = VolcanoPodGroupUnknown
	case PodGroupRunning:
		phase = VolcanoPodGroupRunning
	default:
		phase = VolcanoPodGroupPending
		if admitted {
			phase = VolcanoPodGroupInqueue
		}
	}
	out := map[string]any{"phase": phase}
	for k, v := range map[string]int32{"running": st.Running, "succeeded": st.Succeeded, "failed": st.Failed} {
		if v > 0 {
			out[k] = int64(v)
		}
	}
	return out
}
