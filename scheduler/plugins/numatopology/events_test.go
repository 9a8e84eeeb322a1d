package numatopology

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

func TestQueueingHints(t *testing.T) {
	guaranteed := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	pod := func(node string, ann map[string]string, limits corev1.ResourceList) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Annotations: ann},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{
				Resources: corev1.ResourceRequirements{Requests: guaranteed, Limits: limits},
			}}},
		}
	}
	hinted := map[string]string{v1alpha1.AnnotationNUMAPolicy: "single-numa"}
	for _, tc := range []struct {
		name    string
		deleted *corev1.Pod
		want    fwk.QueueingHint
	}{
		{"a pending pod frees nothing", pod("", hinted, guaranteed), fwk.QueueSkip},
		{"a Burstable pod without a hint took no cell", pod("n1", nil, nil), fwk.QueueSkip},
		{"a Guaranteed pod may have pinned CPUs", pod("n1", nil, guaranteed), fwk.Queue},
		{"a pod with a hint took a cell", pod("n1", hinted, nil), fwk.Queue},
	} {
		if got, err := isSchedulableAfterPodDelete(klog.Background(), nil, tc.deleted, nil); err != nil || got != tc.want {
			t.Errorf("%s: %v (%v), want %v", tc.name, got, err, tc.want)
		}
	}
	labelled := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.LabelNUMANodeCount: "2"}}}
	if got, _ := isSchedulableAfterNodeChange(klog.Background(), nil, nil, labelled); got != fwk.Queue {
		t.Errorf("a node with NUMA labels: %v", got)
	}
	if got, _ := isSchedulableAfterNodeChange(klog.Background(), nil, nil, &corev1.Node{}); got != fwk.QueueSkip {
		t.Errorf("a node without NUMA labels: %v", got)
	}
}
