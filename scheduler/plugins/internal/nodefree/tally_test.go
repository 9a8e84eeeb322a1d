package nodefree

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestTimesSaturates(t *testing.T) {
	tebi := resource.MustParse("1Ti")
	if got := Times(tebi.MilliValue(), 10000); got <= 0 {
		t.Fatalf("10000 slots of 1Ti hold %d milli-bytes: wrapped around", got)
	}
	if got := Times(tebi.MilliValue(), -10000); got >= 0 {
		t.Fatalf("minus 10000 slots of 1Ti: %d, want negative", got)
	}
	for _, tc := range []struct {
		v    int64
		n    int
		want int64
	}{{2000, 3, 6000}, {2000, -3, -6000}, {2000, 0, 0}, {-5, 3, 0}} {
		if got := Times(tc.v, tc.n); got != tc.want {
			t.Errorf("Times(%d, %d) = %d, want %d", tc.v, tc.n, got, tc.want)
		}
	}
}

func TestTallyAddsPodsAndSlots(t *testing.T) {
	tally := Tally[string]{}
	req := map[corev1.ResourceName]int64{corev1.ResourceCPU: 2000}
	tally.AddPod("a", req, 2)
	tally.AddPod("a", req, -1)
	tally.Add("b", req, 3)
	if got := tally["a"][corev1.ResourceCPU]; got != 2000 {
		t.Errorf("a cpu %d, want 2000", got)
	}
	if got := tally["a"][corev1.ResourcePods]; got != 1000 {
		t.Errorf("a pod slots %d, want 1000 (one pod)", got)
	}
	if got := tally["b"][corev1.ResourceCPU]; got != 6000 {
		t.Errorf("b cpu %d, want 6000", got)
	}
	if _, ok := tally["b"][corev1.ResourcePods]; ok {
		t.Error("Add counted a pod slot")
	}
}
