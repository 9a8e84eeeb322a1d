package vram

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"

	testutil "github.com/kube-nexus/kubenexus/test/util"
)

func TestQueueingHints(t *testing.T) {
	pl := newPlugin(t)
	pod := testutil.MakePod("p", "ns").Annotation(v1alpha1.AnnotationVRAMRequest, "70Gi").Obj()
	node := func(labels map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: labels}}
	}
	for _, tc := range []struct {
		name string
		node *corev1.Node
		want fwk.QueueingHint
	}{
		{"48 GB cards", node(map[string]string{v1alpha1.LabelGPUMemory: "46068"}), fwk.QueueSkip},
		{"80 GB cards", node(map[string]string{v1alpha1.LabelGPUMemory: "81559"}), fwk.Queue},
		{"no label (its ResourceSlices may say)", node(nil), fwk.Queue},
		{"a malformed label", node(map[string]string{v1alpha1.LabelGPUMemory: "lots"}), fwk.QueueSkip},
	} {
		if got, err := pl.isSchedulableAfterNodeChange(klog.Background(), pod, nil, tc.node); err != nil || got != tc.want {
			t.Errorf("%s: %v (%v), want %v", tc.name, got, err, tc.want)
		}
	}
	if got, _ := isSchedulableAfterClaimChange(klog.Background(), pod, nil, nil); got != fwk.QueueSkip {
		t.Errorf("a pod without claims: %v", got)
	}
	claimPod := pod.DeepCopy()
	claimPod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("c")}}
	if got, _ := isSchedulableAfterClaimChange(klog.Background(), claimPod, nil, nil); got != fwk.Queue {
		t.Errorf("a claim pod: %v", got)
	}
}
