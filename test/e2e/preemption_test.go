package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/test/e2e/demo"
)

// checkGangPreemption: on two nodes of their own (tainted, so the demo's mix keeps
// off them), a running priority-10 gang of four is evicted whole — through the
// Eviction API, kwok finishing the pods' deletion — for a priority-1000 gang of
// four, which then runs; the PodGroups' phases and events say so.
func checkGangPreemption(t *testing.T, c *demo.Cluster) {
	ctx := context.Background()
	const ns, taint = "e2e-preemption", "e2e.kubenexus.io/preemption"
	for name, v := range map[string]int32{"e2e-low": 10, "e2e-high": 1000} {
		if err := c.Client.Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: v}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	if err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"), corev1.ResourcePods: resource.MustParse("110")}
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("preempt-%d", i), Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
				Labels: map[string]string{"type": "kwok", taint: "true", "kubernetes.io/hostname": fmt.Sprintf("preempt-%d", i)}},
			Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: taint, Value: "true", Effect: corev1.TaintEffectNoSchedule}}},
			Status: corev1.NodeStatus{Capacity: res, Allocatable: res.DeepCopy()},
		}
		if err := c.Client.Create(ctx, node); err != nil {
			t.Fatal(err)
		}
	}
	// Without a node lifecycle controller the not-ready taint admission adds stays;
	// lift it as CreateFleet does, keeping ours.
	liftNotReadyTaint(t, c, taint, "preempt-0", "preempt-1")
	gangOf := func(name, class string) {
		t.Helper()
		if err := c.Client.Create(ctx, &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1alpha1.PodGroupSpec{MinMember: 4}}); err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i), Namespace: ns, Labels: map[string]string{v1alpha1.LabelPodGroup: name}},
				Spec: corev1.PodSpec{
					SchedulerName:     v1alpha1.DefaultSchedulerName,
					PriorityClassName: class,
					NodeSelector:      map[string]string{taint: "true"},
					Tolerations:       []corev1.Toleration{{Key: taint, Operator: corev1.TolerationOpExists}},
					Containers: []corev1.Container{{Name: "main", Image: "busybox", Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}},
					TerminationGracePeriodSeconds: ptr.To[int64](5),
				},
			}
			if err := c.Client.Create(ctx, pod); err != nil {
				t.Fatal(err)
			}
		}
	}
	running := func(group string) (int, int) {
		var pods corev1.PodList
		if err := c.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelPodGroup: group}); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				n++
			}
		}
		return n, len(pods.Items)
	}
	phase := func(group string) v1alpha1.PodGroupPhase {
		pg := &v1alpha1.PodGroup{}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: group}, pg); err != nil {
			t.Fatal(err)
		}
		return pg.Status.Phase
	}

	gangOf("low", "e2e-low")
	if err := poll(2*time.Minute, func() error {
		if n, _ := running("low"); n != 4 || phase("low") != v1alpha1.PodGroupRunning {
			return fmt.Errorf("low gang: %d/4 running, PodGroup %q", n, phase("low"))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	gangOf("high", "e2e-high")
	if err := poll(2*time.Minute, func() error {
		if n, _ := running("high"); n != 4 || phase("high") != v1alpha1.PodGroupRunning {
			return fmt.Errorf("high gang: %d/4 running, PodGroup %q", n, phase("high"))
		}
		if _, left := running("low"); left != 0 {
			return fmt.Errorf("low gang: %d pods left", left)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if p := phase("low"); p == v1alpha1.PodGroupRunning {
		t.Errorf("low PodGroup is still %q with every member evicted", p)
	}
	var events corev1.EventList
	if err := c.Client.List(ctx, &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	preempting := false
	for _, e := range events.Items {
		if e.InvolvedObject.Kind == "PodGroup" && e.InvolvedObject.Name == "high" && e.Reason == "Preempting" &&
			strings.Contains(e.Message, "evicting gang "+ns+"/low (4 pods, priority 10)") {
			preempting = true
		}
	}
	if !preempting {
		t.Errorf("no Preempting event on PodGroup high naming gang %s/low", ns)
	}
	t.Logf("gang preemption: PodGroup high %q, PodGroup low %q after its 4 members were evicted", phase("high"), phase("low"))
}
