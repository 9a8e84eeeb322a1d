package vram

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

func gpuNode(labels map[string]string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: labels},
		Status:     corev1.NodeStatus{Allocatable: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}},
	}
}

// newPlugin builds the plugin through New with the default args.
func newPlugin(t *testing.T) *Plugin {
	t.Helper()
	pl, err := New(context.Background(), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

func TestLabelMemoryAndBestFit(t *testing.T) {
	pl := newPlugin(t)
	s := &stateData{request: 40 << 30, gpus: 1}
	l40s, why := pl.memoryOf(s, gpuNode(map[string]string{v1alpha1.LabelGPUMemory: "49152"}))
	if why != "" || len(l40s.fitting) != 8 {
		t.Fatalf("48Gi GFD node: %+v %q", l40s, why)
	}
	h100, _ := pl.memoryOf(s, gpuNode(map[string]string{v1alpha1.LabelGPUVRAMFallback: "80Gi"}))
	if len(h100.fitting) != 8 || h100.source != v1alpha1.LabelGPUVRAMFallback {
		t.Fatalf("80Gi fallback node: %+v", h100)
	}
	// 40/48 and 40/80 of the smallest card that holds the request.
	if a, b := bestFit(s.request, l40s), bestFit(s.request, h100); a != 83 || b != 50 {
		t.Fatalf("scores %d and %d, want 83 and 50", a, b)
	}
	// A node with cards of both sizes is scored by the smallest that holds it.
	if got := bestFit(s.request, gpuMemory{fitting: []int64{80 << 30, 48 << 30}}); got != 83 {
		t.Fatalf("mixed cards: %d, want 83", got)
	}
	big := &stateData{request: 70 << 30, gpus: 1}
	if m, _ := pl.memoryOf(big, gpuNode(map[string]string{v1alpha1.LabelGPUMemory: "49152"})); len(m.fitting) != 0 || m.largest != 48<<30 || bestFit(big.request, m) != 0 {
		t.Fatalf("70Gi on 48Gi cards: %+v", m)
	}
	for _, bad := range []map[string]string{{v1alpha1.LabelGPUMemory: "80GB"}, {v1alpha1.LabelGPUVRAMFallback: "huge"}, {v1alpha1.LabelGPUMemory: "-1"}} {
		if _, why := pl.memoryOf(s, gpuNode(bad)); !strings.Contains(why, "must be") {
			t.Errorf("labels %v: %q, want a message naming the label", bad, why)
		}
	}
}
