package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/test/e2e/demo"
)

// checkPyTorchJobRepair: a PyTorchJob run by the training-operator's own
// controller (its default mode: KubeNexus gangs the pods) of a master and a
// worker, each a whole node of three dedicated tainted nodes; a bare pod fills the
// third. The worker is evicted (Eviction API) while a pod of no gang waits: the
// training-operator creates the worker again, and it binds on the node it left,
// not the waiting pod; the PodGroup the manager created for the job — the same
// object throughout, owned by the PyTorchJob — goes Repairing (Evicted), then
// Repaired.
func checkPyTorchJobRepair(t *testing.T, c *demo.Cluster) {
	ctx := context.Background()
	const ns, taint, job, gang = demo.NSML, "e2e.kubenexus.io/ddp-repair", "ddp-repair", "ddp-repair-pytorch"
	var names []string
	for i := range 3 {
		name := fmt.Sprintf("ddp-repair-%d", i)
		res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"), corev1.ResourcePods: resource.MustParse("110")}
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
				Labels: map[string]string{"type": "kwok", taint: "true", corev1.LabelHostname: name}},
			Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: taint, Value: "true", Effect: corev1.TaintEffectNoSchedule}}},
			Status: corev1.NodeStatus{Capacity: res, Allocatable: res.DeepCopy()},
		}
		if err := c.Client.Create(ctx, node); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	liftNotReadyTaint(t, c, taint, names...)
	spec := func(container string) corev1.PodSpec {
		return corev1.PodSpec{
			SchedulerName: v1alpha1.DefaultSchedulerName,
			NodeSelector:  map[string]string{taint: "true"},
			Tolerations:   []corev1.Toleration{{Key: taint, Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: container, Image: "nvcr.io/nvidia/pytorch:24.05-py3", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}},
			TerminationGracePeriodSeconds: ptr.To[int64](5),
		}
	}
	tmpl, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&corev1.PodTemplateSpec{Spec: spec("pytorch")})
	if err != nil {
		t.Fatal(err)
	}
	delete(tmpl, "metadata")
	replica := map[string]any{"replicas": int64(1), "restartPolicy": "OnFailure", "template": tmpl}
	pj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
		"metadata": map[string]any{"name": job, "namespace": ns},
		"spec":     map[string]any{"pytorchReplicaSpecs": map[string]any{"Master": replica, "Worker": runtime.DeepCopyJSONValue(replica)}}}}
	if err := c.Client.Create(ctx, pj); err != nil {
		t.Fatalf("creating PyTorchJob %s: %v", job, err)
	}
	members := func() []corev1.Pod {
		var pods corev1.PodList
		if err := c.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"training.kubeflow.org/job-name": job}); err != nil {
			t.Fatal(err)
		}
		return pods.Items
	}
	pg := &v1alpha1.PodGroup{}
	if err := poll(2*time.Minute, func() error {
		running := 0
		for _, p := range members() {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running++
			}
		}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: gang}, pg); err != nil {
			return fmt.Errorf("PodGroup %s: %w", gang, err)
		}
		if running != 2 || pg.Status.Phase != v1alpha1.PodGroupRunning {
			return fmt.Errorf("PyTorchJob %s: %d/2 running, PodGroup %q", job, running, pg.Status.Phase)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if refs := pg.OwnerReferences; len(refs) != 1 || refs[0].Kind != "PyTorchJob" || refs[0].Name != job {
		t.Errorf("PodGroup %s is owned by %v, want PyTorchJob %s", gang, refs, job)
	}
	used := map[string]bool{}
	for _, p := range members() {
		used[p.Spec.NodeName] = true
	}
	bare := func(name, node string) {
		t.Helper()
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: spec("main")}
		if node != "" {
			p.Spec.NodeSelector[corev1.LabelHostname] = node
		}
		if err := c.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range names {
		if !used[n] {
			bare("ddp-repair-blocker", n)
		}
	}
	podOf := func(name string) *corev1.Pod {
		p := &corev1.Pod{}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
			return nil
		}
		return p
	}
	if err := poll(time.Minute, func() error {
		if p := podOf("ddp-repair-blocker"); p == nil || p.Spec.NodeName == "" {
			return fmt.Errorf("the blocker is not bound")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	bare("ddp-repair-outsider", "")

	victim := podOf(job + "-worker-0")
	if victim == nil {
		t.Fatalf("no pod %s-worker-0", job)
	}
	if err := c.Client.SubResource("eviction").Create(ctx, victim, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: victim.Name, Namespace: ns}}); err != nil {
		t.Fatalf("evicting %s: %v", victim.Name, err)
	}
	evicted := time.Now()
	if err := poll(2*time.Minute, func() error {
		if p := podOf("ddp-repair-outsider"); p != nil && p.Spec.NodeName != "" {
			return fmt.Errorf("the pod of no gang took %s", p.Spec.NodeName)
		}
		p := podOf(victim.Name)
		if p == nil || p.UID == victim.UID || p.Spec.NodeName == "" {
			return fmt.Errorf("the training-operator's new %s is not bound yet", victim.Name)
		}
		if p.Spec.NodeName != victim.Spec.NodeName {
			return fmt.Errorf("the new %s bound on %s, not on %s the worker left", victim.Name, p.Spec.NodeName, victim.Spec.NodeName)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	took := time.Since(evicted)
	var cond *metav1.Condition
	var uid types.UID
	if err := poll(time.Minute, func() error {
		got := &v1alpha1.PodGroup{}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: gang}, got); err != nil {
			return err
		}
		uid = got.UID
		cond = meta.FindStatusCondition(got.Status.Conditions, v1alpha1.PodGroupConditionRepairing)
		if cond == nil || cond.Reason != v1alpha1.RepairOutcomeRepaired || !strings.Contains(cond.Message, "("+v1alpha1.RepairCauseEvicted+")") {
			return fmt.Errorf("PodGroup %s: Repairing %+v, want Repaired after an eviction", gang, cond)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	if uid != pg.UID {
		t.Errorf("PodGroup %s is another object after the repair (UID %s, was %s)", gang, uid, pg.UID)
	}
	if p := podOf("ddp-repair-outsider"); p != nil && p.Spec.NodeName != "" {
		t.Errorf("the pod of no gang was bound to %s", p.Spec.NodeName)
	}
	t.Logf("PyTorchJob repair: %s evicted from %s; the training-operator's new one bound there %s later", victim.Name, victim.Spec.NodeName, took.Round(100*time.Millisecond))
}
