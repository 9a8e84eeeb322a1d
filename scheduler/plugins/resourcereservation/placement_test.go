package resourcereservation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestDominantResource: a reservation is fitted by the GPUs its slot asks for, as the
// configuration names them (the first named wins), and by CPU otherwise — never by a
// resource that merely has "gpu" in its name.
func TestDominantResource(t *testing.T) {
	gpus := []corev1.ResourceName{"nvidia.com/gpu", "amd.com/gpu"}
	for _, tc := range []struct {
		name string
		slot map[corev1.ResourceName]int64
		want corev1.ResourceName
	}{
		{"nvidia", map[corev1.ResourceName]int64{"cpu": 4000, "nvidia.com/gpu": 8000}, "nvidia.com/gpu"},
		{"amd, named second", map[corev1.ResourceName]int64{"cpu": 4000, "amd.com/gpu": 2000}, "amd.com/gpu"},
		{"both: the first named", map[corev1.ResourceName]int64{"amd.com/gpu": 1000, "nvidia.com/gpu": 1000}, "nvidia.com/gpu"},
		{"a resource named like a GPU that is not one", map[corev1.ResourceName]int64{"cpu": 2000, "example.com/gpu-burst-credits": 5000}, "cpu"},
		{"zero GPUs", map[corev1.ResourceName]int64{"cpu": 2000, "nvidia.com/gpu": 0}, "cpu"},
		{"CPU only", map[corev1.ResourceName]int64{"cpu": 2000, "memory": 1 << 30}, "cpu"},
	} {
		if got := dominantResource(tc.slot, gpus); got != tc.want {
			t.Errorf("%s: dominant resource %s, want %s", tc.name, got, tc.want)
		}
	}
}
