package workload

import (
	"strings"
	"testing"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

func TestNUMAPolicyOf(t *testing.T) {
	for _, tc := range []struct {
		ann     map[string]string
		want    v1alpha1.NUMAPolicy
		wantErr string
	}{
		{ann: nil, want: ""},
		{ann: map[string]string{v1alpha1.AnnotationNUMAPolicy: "single-numa"}, want: v1alpha1.NUMAPolicySingleNUMA},
		{ann: map[string]string{v1alpha1.AnnotationNUMAPolicy: "isolated"}, want: v1alpha1.NUMAPolicyIsolated},
		{ann: map[string]string{v1alpha1.AnnotationNUMAPolicy: "none"}, want: ""},
		// The predecessor's key and the kubelet's spelling.
		{ann: map[string]string{v1alpha1.AnnotationNUMAPolicyLegacy: "single-numa-node"}, want: v1alpha1.NUMAPolicySingleNUMA},
		// The current key wins.
		{ann: map[string]string{v1alpha1.AnnotationNUMAPolicy: "best-effort", v1alpha1.AnnotationNUMAPolicyLegacy: "single-numa-node"}, want: v1alpha1.NUMAPolicyBestEffort},
		{ann: map[string]string{v1alpha1.AnnotationNUMAPolicy: "strict"}, wantErr: `annotation numa.scheduling.kubenexus.io/policy="strict" is not a NUMA policy: use best-effort, restricted, single-numa, isolated or none`},
		{ann: map[string]string{v1alpha1.AnnotationNUMAPolicy: strings.Repeat("x", 300)}, wantErr: "xxx…\" is not a NUMA policy"},
	} {
		got, err := NUMAPolicyOf(tc.ann)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || len(err.Error()) > 200 {
				t.Errorf("%v: error %v, want %q", tc.ann, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%v: got %q, %v; want %q", tc.ann, got, err, tc.want)
		}
	}
}

func TestVRAMRequestOf(t *testing.T) {
	if _, ok, err := VRAMRequestOf(nil); ok || err != nil {
		t.Fatalf("no annotation: ok %v err %v", ok, err)
	}
	if b, ok, err := VRAMRequestOf(map[string]string{v1alpha1.AnnotationVRAMRequest: "40Gi"}); !ok || err != nil || b != 40<<30 {
		t.Fatalf("40Gi: %d %v %v", b, ok, err)
	}
	for _, bad := range []string{"lots", "0", "-1Gi", "1Ei"} {
		if _, ok, err := VRAMRequestOf(map[string]string{v1alpha1.AnnotationVRAMRequest: bad}); !ok || err == nil || !strings.Contains(err.Error(), v1alpha1.AnnotationVRAMRequest) {
			t.Errorf("%q: ok %v err %v, want an error naming the annotation", bad, ok, err)
		}
	}
}
