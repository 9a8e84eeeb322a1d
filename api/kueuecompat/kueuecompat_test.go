package kueuecompat

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	legacy "sigs.k8s.io/kueue/apis/kueue/v1beta1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

func TestObjectAndConversions(t *testing.T) {
	if _, ok := Object(&kueue.Workload{}, Legacy).(*legacy.Workload); !ok {
		t.Errorf("Object(v1beta2 Workload, v1beta1) is not a v1beta1 Workload")
	}
	if _, ok := Object(&kueue.Workload{}, Current).(*kueue.Workload); !ok {
		t.Errorf("Object(v1beta2 Workload, v1beta2) is not the object itself")
	}
	if _, ok := Object(&metav1.PartialObjectMetadata{}, Legacy).(*metav1.PartialObjectMetadata); !ok {
		t.Errorf("Object of a non-Kueue object must be the object itself")
	}

	// A v1beta1 ClusterQueue's admissionChecks become v1beta2's strategy rules.
	old := &legacy.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: "gpus", Labels: map[string]string{"tenant.kubenexus.io/tier": "gold"}},
		Spec: legacy.ClusterQueueSpec{AdmissionChecks: []legacy.AdmissionCheckReference{"placement"}}}
	cq := &kueue.ClusterQueue{}
	if err := ToCurrent(old, cq); err != nil {
		t.Fatal(err)
	}
	if cq.Name != "gpus" || cq.Labels["tenant.kubenexus.io/tier"] != "gold" || cq.APIVersion != Current.String() {
		t.Errorf("converted ClusterQueue = %s %s %v", cq.APIVersion, cq.Name, cq.Labels)
	}
	if s := cq.Spec.AdmissionChecksStrategy; s == nil || len(s.AdmissionChecks) != 1 || s.AdmissionChecks[0].Name != "placement" {
		t.Errorf("admission checks after conversion = %+v, want the rule for placement", s)
	}

	// A v1beta2 Workload's check states survive the way to v1beta1 and back.
	wl := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "ml"},
		Status: kueue.WorkloadStatus{AdmissionChecks: []kueue.AdmissionCheckState{{Name: "placement", State: kueue.CheckStateRetry, Message: "4 × 8 nvidia.com/gpu: …"}}}}
	l, err := toLegacy(wl, Current.WithKind("Workload"))
	if err != nil {
		t.Fatal(err)
	}
	lw, ok := l.(*legacy.Workload)
	if !ok || lw.APIVersion != Legacy.String() || len(lw.Status.AdmissionChecks) != 1 || lw.Status.AdmissionChecks[0].State != legacy.CheckStateRetry {
		t.Fatalf("v1beta1 Workload = %#v", l)
	}
	back := &kueue.Workload{}
	if err := ToCurrent(lw, back); err != nil {
		t.Fatal(err)
	}
	if back.Status.AdmissionChecks[0].Message != "4 × 8 nvidia.com/gpu: …" {
		t.Errorf("round trip lost the check's message: %+v", back.Status.AdmissionChecks)
	}
	// A v1beta2 object passed to ToCurrent is copied as it is.
	same := &kueue.Workload{}
	if err := ToCurrent(wl, same); err != nil || same.Name != "job" || len(same.Status.AdmissionChecks) != 1 {
		t.Errorf("ToCurrent(v1beta2) = %+v, %v", same, err)
	}
}
