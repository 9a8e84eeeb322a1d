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
	pg := &PodGroup{}
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"metadata": u.Object["metadata"], "spec": spec}, pg); err != nil {
		return nil, fmt.Errorf("PodGroup %s/%s (%s): %w", u.GetNamespace(), u.GetName(), SigsPodGroupGVK.GroupVersion(), err)
	}
	if s, ok, _ := unstructured.NestedString(u.Object, "status", "scheduleStartTime"); ok && s != "" {
		t := &metav1.Time{}
		if err := t.UnmarshalQueryParameter(s); err == nil && !t.IsZero() {
			pg.Status.ScheduleStartTime = t
		}
	}
	pg.APIVersion, pg.Kind = SigsPodGroupGVK.GroupVersion().String(), "PodGroup"
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
