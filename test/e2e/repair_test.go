package e2e_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/test/e2e/demo"
)

// checkGangRepair: on two racks of two nodes of their own (tainted, so the demo's
// mix keeps off them), a gang of two whole-node members required in one rack runs
// under a ReplicaSet (kube-controller-manager's), and bare pods fill the other
// rack. One member is evicted through the Eviction API (kwok finishes its
// deletion) while a pod of no gang waits for a node: the ReplicaSet's replacement
// binds in the gang's rack, on the node the member left, and the waiting pod does
// not; the PodGroup goes Repairing (Evicted) then Repaired, its repair reservation
// is deleted, and the manager counts the repair.
func checkGangRepair(t *testing.T, c *demo.Cluster) {
	ctx := context.Background()
	const ns, taint = "e2e-repair", "e2e.kubenexus.io/repair"
	if err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	rackOf := map[string]string{}
	for _, r := range []string{"a", "b"} {
		for i := range 2 {
			name := fmt.Sprintf("repair-%s-%d", r, i)
			rackOf[name] = "e2e-repair-" + r
			res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"), corev1.ResourcePods: resource.MustParse("110")}
			node := &corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
					Labels: map[string]string{"type": "kwok", taint: "true", "kubernetes.io/hostname": name, v1alpha1.LabelRack: rackOf[name]}},
				Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: taint, Value: "true", Effect: corev1.TaintEffectNoSchedule}}},
				Status: corev1.NodeStatus{Capacity: res, Allocatable: res.DeepCopy()},
			}
			if err := c.Client.Create(ctx, node); err != nil {
				t.Fatal(err)
			}
		}
	}
	liftNotReadyTaint(t, c, taint, "repair-a-0", "repair-a-1", "repair-b-0", "repair-b-1")
	spec := func(labels map[string]string) corev1.PodSpec {
		return corev1.PodSpec{
			SchedulerName: v1alpha1.DefaultSchedulerName,
			NodeSelector:  map[string]string{taint: "true"},
			Tolerations:   []corev1.Toleration{{Key: taint, Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "main", Image: "busybox", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}},
			TerminationGracePeriodSeconds: ptr.To[int64](5),
		}
	}
	pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: ns}, Spec: v1alpha1.PodGroupSpec{MinMember: 2,
		NetworkTopology: &v1alpha1.NetworkTopologyPolicy{Mode: v1alpha1.NetworkTopologyRequired, Level: v1alpha1.NetworkLevelRack}}}
	if err := c.Client.Create(ctx, pg); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{v1alpha1.LabelPodGroup: "train", "app": "train"}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: ns}, Spec: appsv1.ReplicaSetSpec{
		Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec(labels)}}}
	if err := c.Client.Create(ctx, rs); err != nil {
		t.Fatal(err)
	}
	members := func() []corev1.Pod {
		var pods corev1.PodList
		if err := c.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app": "train"}); err != nil {
			t.Fatal(err)
		}
		return pods.Items
	}
	gangRack := ""
	if err := poll(2*time.Minute, func() error {
		running := 0
		for _, p := range members() {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running++
				gangRack = rackOf[p.Spec.NodeName]
			}
		}
		got := &v1alpha1.PodGroup{}
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(pg), got); err != nil {
			return err
		}
		if running != 2 || got.Status.Phase != v1alpha1.PodGroupRunning {
			return fmt.Errorf("gang train: %d/2 running, PodGroup %q", running, got.Status.Phase)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// The other rack is filled; a pod of no gang then finds no node.
	other := "b"
	if gangRack == "e2e-repair-b" {
		other = "a"
	}
	bare := func(name, node string) {
		t.Helper()
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: spec(nil)}
		if node != "" {
			pod.Spec.NodeSelector["kubernetes.io/hostname"] = node
		}
		if err := c.Client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	bare("blocker-0", "repair-"+other+"-0")
	bare("blocker-1", "repair-"+other+"-1")
	bare("outsider", "")
	podNode := func(name string) string {
		p := &corev1.Pod{}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
			return ""
		}
		return p.Spec.NodeName
	}
	if err := poll(time.Minute, func() error {
		if podNode("blocker-0") == "" || podNode("blocker-1") == "" {
			return fmt.Errorf("blockers not bound")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	victim := members()[0]
	if err := c.Client.SubResource("eviction").Create(ctx, &victim, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: victim.Name, Namespace: ns}}); err != nil {
		t.Fatalf("evicting %s: %v", victim.Name, err)
	}
	var replacement corev1.Pod
	if err := poll(2*time.Minute, func() error {
		for _, p := range members() {
			if p.Name != victim.Name && p.Spec.NodeName == victim.Spec.NodeName && p.DeletionTimestamp == nil {
				replacement = p
				return nil
			}
		}
		if n := podNode("outsider"); n != "" {
			return fmt.Errorf("the pod of no gang took %s", n)
		}
		return fmt.Errorf("no replacement bound on %s yet", victim.Spec.NodeName)
	}); err != nil {
		t.Fatal(err)
	}
	if n := podNode("outsider"); n != "" {
		t.Errorf("the pod of no gang was bound to %s: the evicted member's room was not held for the gang", n)
	}
	var cond *metav1.Condition
	if err := poll(time.Minute, func() error {
		got := &v1alpha1.PodGroup{}
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(pg), got); err != nil {
			return err
		}
		cond = meta.FindStatusCondition(got.Status.Conditions, v1alpha1.PodGroupConditionRepairing)
		if cond == nil || cond.Reason != v1alpha1.RepairOutcomeRepaired {
			return fmt.Errorf("PodGroup train: Repairing condition %+v, want Repaired", cond)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	if err := poll(time.Minute, func() error {
		err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "train-repair"}, &v1alpha1.ResourceReservation{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("the repair reservation train-repair is still there (%v)", err)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	var events corev1.EventList
	if err := c.Client.List(ctx, &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	lost := false
	for _, e := range events.Items {
		if e.InvolvedObject.Kind == "PodGroup" && e.Reason == v1alpha1.EventReasonGangMembersLost && strings.Contains(e.Message, "("+v1alpha1.RepairCauseEvicted+" on "+victim.Spec.NodeName+")") {
			lost = true
		}
	}
	if !lost {
		t.Errorf("no %s event on PodGroup train naming the eviction on %s", v1alpha1.EventReasonGangMembersLost, victim.Spec.NodeName)
	}
	_, body, err := demo.Get(c.ManagerMetricsURL, "")
	m := regexp.MustCompile(`(?m)^kubenexus_gang_repairs_total\{outcome="repaired"\} ([0-9.e+]+)$`).FindStringSubmatch(body)
	if n, perr := strconv.ParseFloat(append(m, "", "")[1], 64); err != nil || perr != nil || n < 1 {
		t.Errorf("the manager's kubenexus_gang_repairs_total{outcome=\"repaired\"} does not count the repair: %q (%v)", m, err)
	}
	msg := ""
	if cond != nil {
		msg = cond.Message
	}
	t.Logf("gang repair: %s evicted from %s, replacement %s bound there; %s", victim.Name, victim.Spec.NodeName, replacement.Name, msg)
}

// liftNotReadyTaint removes the not-ready taint the API server's admission puts on
// new nodes (no node lifecycle controller runs here to lift it), keeping taint.
func liftNotReadyTaint(t *testing.T, c *demo.Cluster, taint string, nodes ...string) {
	t.Helper()
	ctx := context.Background()
	if err := poll(2*time.Minute, func() error {
		for _, name := range nodes {
			node := &corev1.Node{}
			if err := c.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
				return err
			}
			var keep []corev1.Taint
			for _, tn := range node.Spec.Taints {
				if tn.Key == taint {
					keep = append(keep, tn)
				}
			}
			if len(keep) != len(node.Spec.Taints) {
				node.Spec.Taints = keep
				if err := c.Client.Update(ctx, node); err != nil {
					return err
				}
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// checkLeaderWorkerSetRepair: a worker of a running LeaderWorkerSet group is
// evicted; LWS recreates the whole group (its default restart policy). The new
// generation is the same gang (name, PodGroup, owner), is bound whole again in one
// rack alone, and the third group — pending for want of a rack — does not take
// the rack the restarting group left.
func checkLeaderWorkerSetRepair(t *testing.T, c *demo.Cluster) {
	t.Helper()
	r, err := c.RunLWSRepairScenario(context.Background())
	if r != nil {
		t.Logf("LeaderWorkerSet repair: evicted %s; before %+v; after %+v (group 0 whole again after %s); group 0's Repairing condition %+v",
			r.Evicted, r.Before, r.After, r.Took.Round(100*time.Millisecond), r.Repairing)
	}
	if err != nil {
		t.Fatalf("LeaderWorkerSet repair: %v", err)
	}
	before, after := r.Before[0], r.After[0]
	if after.Gang != before.Gang || after.PodGroup != before.PodGroup || after.Owner != "LeaderWorkerSet/vllm" {
		t.Errorf("group 0 after LWS recreated it: gang %q, PodGroup %s, owner %q; want the same gang %q and PodGroup %s, owned by LeaderWorkerSet/vllm",
			after.Gang, after.PodGroup, after.Owner, before.Gang, before.PodGroup)
	}
	if len(after.Racks) != 1 {
		t.Errorf("group 0 recreated over racks %v, want one", after.Racks)
	}
	for _, g := range r.After[1:] {
		for _, rack := range g.Racks {
			if slices.Contains(after.Racks, rack) {
				t.Errorf("group %d has pods in rack %s beside group 0 (exclusive topology)", g.Index, rack)
			}
		}
	}
	if len(r.After) == 3 && r.After[2].Bound != 0 {
		t.Errorf("the pending third group bound %d pod(s) while group 0 was recreated (racks %v): it took the room group 0 left", r.After[2].Bound, r.After[2].Racks)
	}
	if t.Failed() {
		t.Logf("events in the namespace from the eviction on:\n%s", strings.Join(r.Events, "\n"))
	}
}
