package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/test/e2e/demo"
)

// checkConsolidation: on four 8-GPU nodes of their own (tainted, so the demo's mix
// keeps off them) a Deployment's eight preemptible 2-GPU pods run two to a node,
// leaving 4 GPUs free on each: 16 in all, none of them a whole node. A gang of two
// 8-GPU members of the same priority fits only in total; GangPreemption moves the
// pods of two nodes (4 evictions), kube-controller-manager's ReplicaSet controller
// recreates them, and their replacements run on the other two nodes while the gang
// runs on the emptied ones.
func checkConsolidation(t *testing.T, c *demo.Cluster) {
	ctx := context.Background()
	const ns, taint = "e2e-consolidation", "e2e.kubenexus.io/consolidation"
	if err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	var nodes []string
	for i := range 4 {
		name := fmt.Sprintf("consolidate-%d", i)
		nodes = append(nodes, name)
		res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi"),
			corev1.ResourcePods: resource.MustParse("110"), v1alpha1.ResourceNvidiaGPU: resource.MustParse("8")}
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
				Labels: map[string]string{"type": "kwok", taint: "true", "kubernetes.io/hostname": name}},
			Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: taint, Value: "true", Effect: corev1.TaintEffectNoSchedule}}},
			Status: corev1.NodeStatus{Capacity: res, Allocatable: res.DeepCopy()},
		}
		if err := c.Client.Create(ctx, node); err != nil {
			t.Fatal(err)
		}
	}
	liftNotReadyTaint(t, c, taint, nodes...)
	spec := func(gpus int64, labels map[string]string) corev1.PodSpec {
		q := *resource.NewQuantity(gpus, resource.DecimalSI)
		return corev1.PodSpec{
			SchedulerName: v1alpha1.DefaultSchedulerName,
			NodeSelector:  map[string]string{taint: "true"},
			Tolerations:   []corev1.Toleration{{Key: taint, Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "main", Image: "busybox", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"), v1alpha1.ResourceNvidiaGPU: q},
				Limits:   corev1.ResourceList{v1alpha1.ResourceNvidiaGPU: q}}}},
			TerminationGracePeriodSeconds: ptr.To[int64](1),
		}
	}
	// Placeholders of 4 GPUs on each node make the Deployment's pods land two to a
	// node; they go once it runs.
	for i, n := range nodes {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("hold-%d", i), Namespace: ns}, Spec: spec(4, nil)}
		p.Spec.NodeName = n
		if err := c.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	fillerLabels := map[string]string{"app": "fillers", v1alpha1.LabelPreemptible: "true", v1alpha1.LabelWorkloadType: "batch"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "fillers", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](8),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "fillers"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: fillerLabels}, Spec: spec(2, nil)},
		},
	}
	if err := c.Client.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	fillers := func() (running map[string]string, seen int) {
		var pods corev1.PodList
		if err := c.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app": "fillers"}); err != nil {
			t.Fatal(err)
		}
		running = map[string]string{}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running[p.Name] = p.Spec.NodeName
			}
		}
		return running, len(pods.Items)
	}
	var first map[string]string
	if err := poll(2*time.Minute, func() error {
		if first, _ = fillers(); len(first) != 8 {
			return fmt.Errorf("fillers: %d/8 running", len(first))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for i := range nodes {
		if err := c.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("hold-%d", i), Namespace: ns}}, client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
	}
	perNode := map[string]int{}
	for _, n := range first {
		perNode[n]++
	}
	for _, n := range nodes {
		if perNode[n] != 2 {
			t.Fatalf("fillers per node %v, want 2 on each of %v", perNode, nodes)
		}
	}

	if err := c.Client.Create(ctx, &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: ns}, Spec: v1alpha1.PodGroupSpec{MinMember: 2}}); err != nil {
		t.Fatal(err)
	}
	submitted := time.Now()
	for i := range 2 {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("train-%d", i), Namespace: ns,
			Labels: map[string]string{v1alpha1.LabelPodGroup: "train", v1alpha1.LabelWorkloadType: "training"}}, Spec: spec(8, nil)}
		if err := c.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	trainNodes := map[string]bool{}
	var took time.Duration
	if err := poll(2*time.Minute, func() error {
		var pods corev1.PodList
		if err := c.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelPodGroup: "train"}); err != nil {
			return err
		}
		clear(trainNodes)
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				trainNodes[p.Spec.NodeName] = true
			}
		}
		if len(trainNodes) != 2 {
			return fmt.Errorf("gang train: running on %v, want 2 nodes", trainNodes)
		}
		took = time.Since(submitted)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Every filler runs again, none on the gang's nodes; exactly the 4 of two nodes moved.
	var now map[string]string
	var seen int
	if err := poll(2*time.Minute, func() error {
		if now, seen = fillers(); len(now) != 8 {
			return fmt.Errorf("fillers: %d/8 running", len(now))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	moved := 0
	for name := range first {
		if _, ok := now[name]; !ok {
			moved++
		}
	}
	if moved > 4 || moved == 0 {
		t.Errorf("%d fillers moved, want at most 4 (and some)", moved)
	}
	for name, n := range now {
		if trainNodes[n] {
			t.Errorf("filler %s runs on %s, a node of the gang", name, n)
		}
	}
	var events corev1.EventList
	if err := c.Client.List(ctx, &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	consolidating := ""
	for _, e := range events.Items {
		if e.InvolvedObject.Kind == "PodGroup" && e.InvolvedObject.Name == "train" && e.Reason == "Consolidating" {
			consolidating = e.Message
		}
	}
	if !strings.Contains(consolidating, "consolidating: moving pod "+ns+"/fillers-") {
		t.Errorf("PodGroup train's Consolidating event %q, want one naming the fillers moved", consolidating)
	}
	t.Logf("consolidation: gang of 2 × 8 GPUs running %.1fs after submission, %d preemptible pods moved (%d filler pods seen), replacements on other nodes; %s", took.Seconds(), moved, seen, consolidating)
}
