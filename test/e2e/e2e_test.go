// Package e2e_test runs the `make demo` flow end to end — a control plane built from
// source, KubeNexus installed with helm from its chart, the manager and scheduler
// binaries as processes, kwok nodes, real Deployment and Job controllers, the real
// Kubeflow training-operator v1.8.1 in two modes — and checks
// the outcome a user would look at.
package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/controllers/kubenexusconfig/render"
	"github.com/kube-nexus/kubenexus/test/e2e/demo"
	"github.com/kube-nexus/kubenexus/test/util/testenv"
)

func TestDemoFlow(t *testing.T) {
	root := testenv.RepoRoot()
	bin := filepath.Join(root, "bin")
	testenv.RequireBinaries(t, bin, "`make test` (make build; hack/build-tools.sh etcd kube-apiserver kube-controller-manager kwok helm training-operator kueue lws kuberay promql-names)",
		"kubenexus-manager", "kubenexus-scheduler", "k8s/etcd", "k8s/kube-apiserver", "k8s/kube-controller-manager", "k8s/kwok", "k8s/helm", "k8s/training-operator", "k8s/kueue", "k8s/lws", "k8s/kuberay", "k8s/promql-names")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := testenv.LogDir(t)
	c, err := demo.Up(ctx, demo.Options{Root: root, Bin: bin, Dir: dir, Log: testenv.LogWriter{T: t}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Down()
	defer func() {
		if t.Failed() {
			t.Log(demo.LogTails(dir, 3000, "kubenexus-manager", "kubenexus-scheduler", "kube-controller-manager", "kwok", "training-operator", "training-operator-scheduler-plugins", "kueue", "lws", "kuberay"))
		}
	}()
	if err := c.CreateFleet(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Submit(ctx); err != nil {
		t.Fatal(err)
	}
	settleErr := c.Settle(ctx, 5*time.Minute)
	placements, err := c.Report(ctx)
	if err != nil {
		t.Fatal(err)
	}
	demo.Print(testenv.LogWriter{T: t}, placements)
	demo.PrintCapacity(testenv.LogWriter{T: t}, c.Capacity())
	if settleErr != nil {
		t.Fatalf("the mix did not settle: %v", settleErr)
	}

	wantTier := map[string]string{demo.NSML: "gold", demo.NSData: "silver", demo.NSWeb: "bronze", demo.NSResearch: "silver", demo.NSHPC: "silver"}
	for _, p := range placements {
		if p.Tier != wantTier[p.Namespace] {
			t.Errorf("%s: pods carry tier %q, want %q from namespace %s", p.Name, p.Tier, wantTier[p.Namespace], p.Namespace)
		}
		switch {
		case p.TooBig:
			// Nothing, not even the members that fit, is bound; the PodGroup says why.
			if p.Bound != 0 || p.Pods != p.Size || p.GangPhase != string(v1alpha1.PodGroupScheduling) ||
				p.GangReason != v1alpha1.ReasonInsufficientCapacity && p.GangReason != v1alpha1.ReasonTimeout {
				t.Errorf("gang %s (larger than the fleet): %d of %d pods bound, PodGroup %q reason %q", p.Gang, p.Bound, p.Pods, p.GangPhase, p.GangReason)
			}
			if p.GangReason == v1alpha1.ReasonInsufficientCapacity && !strings.Contains(p.GangMessage, "fits no node") {
				t.Errorf("gang %s: the PodGroup's message does not say a member fits no node: %q", p.Gang, p.GangMessage)
			}
		case p.ForeignGang != "":
			// The training-operator's own scheduler-plugins or Volcano PodGroup,
			// honoured by KubeNexus: every member bound, the PodGroup seen Running
			// (KubeNexus keeps its status; the operator deletes it once the job has
			// finished), and the job run to completion. A Volcano PodGroup is admitted
			// (Inqueue) before the operator creates any pod.
			if p.Bound != p.Size || p.Pods != p.Size || !slices.Contains(p.SigsPhases, "Running") && !slices.Contains(p.SigsPhases, "Finished") && !slices.Contains(p.SigsPhases, "Completed") {
				t.Errorf("%s gang %s: %d/%d bound of %d pods, PodGroup phases %v", p.ForeignGang, p.Gang, p.Bound, p.Size, p.Pods, p.SigsPhases)
			}
			if p.ForeignGang == v1alpha1.VolcanoPodGroupGroup && !slices.Contains(p.SigsPhases, "Inqueue") {
				t.Errorf("Volcano gang %s: PodGroup phases %v, never Inqueue", p.Gang, p.SigsPhases)
			}
			if p.JobState != "Succeeded" {
				t.Errorf("%s %s/%s is %q, want Succeeded", p.Kind, p.Namespace, p.Name, p.JobState)
			}
		case p.Gang != "":
			// All or nothing: every member bound, and the gang ran to Succeeded.
			if p.Bound != p.Size || p.Pods != p.Size || p.GangPhase != string(v1alpha1.PodGroupSucceeded) {
				t.Errorf("gang %s: %d/%d bound of %d pods, PodGroup %q", p.Gang, p.Bound, p.Size, p.Pods, p.GangPhase)
			}
			if p.Kubeflow() && p.JobState != "Succeeded" {
				t.Errorf("%s %s/%s is %q, want Succeeded", p.Kind, p.Namespace, p.Name, p.JobState)
			}
		case p.NUMA != "":
			// Pinned to one cell: bound on nodes whose cells the report names.
			if p.Bound != p.Size || len(p.Notes) != len(p.Nodes) {
				t.Errorf("%s (%s): %d/%d bound, NUMA notes %v", p.Name, p.NUMA, p.Bound, p.Size, p.Notes)
			}
		case p.VRAM != "":
			// 70Gi per GPU: 80 GB cards only (silver may use the A100s, not the H100s).
			if !p.JobComplete || !slices.Equal(p.GPUModels, []string{"NVIDIA-A100-SXM4-80GB"}) {
				t.Errorf("%s (vram %s): complete %v, GPUs %v, want the 80 GB A100s", p.Name, p.VRAM, p.JobComplete, p.GPUModels)
			}
		case p.Kind == "Job":
			if !p.JobComplete {
				t.Errorf("Job %s did not complete", p.Name)
			}
		case p.Kind == "Deployment":
			if p.Bound != p.Size || len(p.Zones) != 3 {
				t.Errorf("services %s: %d/%d bound over zones %v, want all 3 zones", p.Name, p.Bound, p.Size, p.Zones)
			}
			checkZoneSkew(t, c, p)
		}
	}
	checkExplainAndETA(ctx, t, c, placements)
	checkGangMembers(t, c, placements)
	checkPlacement(t, placements)
	checkTrainingOperatorWebhook(t, c)
	checkHardwareTiers(t, c, placements)
	checkGangPreemption(t, c)
	checkConsolidation(t, c)
	checkGangRepair(t, c)
	checkPyTorchJobRepair(t, c)
	checkKueue(t, c)
	checkLeaderWorkerSet(t, c)
	checkLeaderWorkerSetRepair(t, c)
	checkServing(t, c)
	checkKubeRay(t, c)
	checkTrainer(t, c)
	checkQuickstart(t, c)
	checkDashboard(t, c)
	checkSharedGPUs(ctx, t, c)
	helmUpgradeAndUninstall(t, c)
	for _, p := range placements {
		if p.Name == "llm-finetune" {
			for _, m := range p.GPUModels {
				if m != "NVIDIA-H100-80GB-HBM3" && m != "NVIDIA-A100-SXM4-80GB" {
					t.Errorf("8-GPU workers landed on %s", m)
				}
			}
		}
	}
}

// checkPlacement: every gang that ran is in one rack (each fits one rack of the
// hardware its tier prefers: GPU boards of one kind are racked together), and no
// workload that asks for no GPU runs on a GPU node (the CPU servers have room).
func checkPlacement(t *testing.T, placements []demo.Placement) {
	t.Helper()
	for _, p := range placements {
		if p.Gang != "" && !p.TooBig && p.Bound > 0 && len(p.Racks) != 1 {
			t.Errorf("gang %s spans racks %v; it fits one", p.Gang, p.Racks)
		}
		switch p.Kind {
		case "Deployment", "Job", "SparkApplication":
			if p.GPUs == 0 && p.Bound > 0 && !slices.Equal(p.GPUModels, []string{"cpu-only"}) {
				t.Errorf("%s %s asks for no GPU but ran on %v", p.Kind, p.Name, p.GPUModels)
			}
		}
	}
}

// checkGangMembers: every pod of a gang workload is a member of its gang — the
// pods the training-operator creates included (the MPIJob's launcher and workers,
// ganged by the pod webhook from the MPIJob; bert's, by the operator's own
// scheduling.x-k8s.io/pod-group label).
func checkGangMembers(t *testing.T, c *demo.Cluster, placements []demo.Placement) {
	for _, p := range placements {
		if p.Gang == "" {
			continue
		}
		var pods corev1.PodList
		if err := c.Client.List(context.Background(), &pods, client.InNamespace(p.Namespace), client.MatchingLabels(p.Selector)); err != nil {
			t.Fatal(err)
		}
		for _, pod := range pods.Items {
			m, ok, err := gang.Of(&pod)
			if !ok || err != nil || m.Key.Name != p.Gang {
				t.Errorf("%s %s: pod %s is not in gang %s (gang %q, labels %v, annotations %v, %v)", p.Kind, p.Name, pod.Name, p.Gang, m.Key.Name, pod.Labels, pod.Annotations, err)
			}
		}
	}
}

// checkTrainingOperatorWebhook: the training-operator's own validating webhook
// guards each instance's namespace: a PyTorchJob without a "pytorch" container is
// refused.
func checkTrainingOperatorWebhook(t *testing.T, c *demo.Cluster) {
	for _, ns := range []string{demo.NSML, demo.NSResearch, demo.NSHPC} {
		job := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
			"metadata": map[string]any{"name": "no-pytorch-container", "namespace": ns},
			"spec": map[string]any{"pytorchReplicaSpecs": map[string]any{"Worker": map[string]any{
				"replicas": int64(1),
				"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "main", "image": "busybox"}}}},
			}}},
		}}
		err := c.Client.Create(context.Background(), job)
		if err == nil || !strings.Contains(err.Error(), "denied the request") || !strings.Contains(err.Error(), "container with name pytorch") {
			t.Errorf("PyTorchJob without a pytorch container in %s: got %v, want the training-operator's webhook to refuse it", ns, err)
		}
	}
}

// checkHardwareTiers: every pod runs on a node whose HardwareTier admits its
// tenant tier (the demo's tiers lend to nobody), and gold's GPU gangs sit on the
// premium tier, the highest rank they may use.
func checkHardwareTiers(t *testing.T, c *demo.Cluster, placements []demo.Placement) {
	ctx := context.Background()
	var tiers v1alpha1.HardwareTierList
	if err := c.Client.List(ctx, &tiers); err != nil {
		t.Fatal(err)
	}
	for _, p := range placements {
		for _, name := range p.Nodes {
			node := &corev1.Node{}
			if err := c.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
				t.Fatal(err)
			}
			for _, hw := range tiers.Items {
				sel, err := metav1.LabelSelectorAsSelector(&hw.Spec.NodeSelector)
				if err != nil {
					t.Fatal(err)
				}
				if !sel.Matches(labels.Set(node.Labels)) {
					continue
				}
				if !slices.Contains(hw.Spec.AllowedTenantTiers, v1alpha1.TenantTier(p.Tier)) {
					t.Errorf("%s (tier %s) runs on %s, in HardwareTier %s which admits %v", p.Name, p.Tier, name, hw.Name, hw.Spec.AllowedTenantTiers)
				}
				if p.Tier == "gold" && p.Gang != "" && hw.Name != "premium" {
					t.Errorf("gold gang %s has a member on %s (HardwareTier %s), not on premium", p.Gang, name, hw.Name)
				}
			}
		}
	}
}

// checkQuickstart applies the README's quickstart (config/samples/quickstart) and
// checks what the README says its objects' status will show.
func checkQuickstart(t *testing.T, c *demo.Cluster) {
	ctx := context.Background()
	dir := filepath.Join(testenv.RepoRoot(), "config", "samples", "quickstart")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no quickstart files in %s (%v)", dir, err)
	}
	for _, f := range files { // in order: the namespace first
		if err := c.ApplyFile(ctx, f); err != nil {
			t.Fatalf("applying %s: %v", filepath.Base(f), err)
		}
	}
	const ns = "quickstart"
	pg := func(name string) (*v1alpha1.PodGroup, error) {
		g := &v1alpha1.PodGroup{}
		return g, c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, g)
	}
	// The gang of plain pods runs whole.
	if err := poll(2*time.Minute, func() error {
		g, err := pg("train")
		if err != nil {
			return err
		}
		cond := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.PodGroupConditionScheduled)
		if g.Status.Phase != v1alpha1.PodGroupRunning || g.Status.Scheduled != 3 || g.Status.Running != 3 || cond == nil || cond.Status != metav1.ConditionTrue {
			return fmt.Errorf("quickstart PodGroup train: phase %q, scheduled %d, running %d, Scheduled condition %v; want Running, 3, 3, True",
				g.Status.Phase, g.Status.Scheduled, g.Status.Running, cond)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	// The label gang of the Job gets a PodGroup of 3 owned by the Job (not as its
	// controller: the Job controls its pods), and succeeds.
	if err := poll(3*time.Minute, func() error {
		g, err := pg("etl")
		if err != nil {
			return fmt.Errorf("the PodGroup of the quickstart's label gang: %w", err)
		}
		ownedByJob := slices.ContainsFunc(g.OwnerReferences, func(r metav1.OwnerReference) bool { return r.Kind == "Job" && r.Name == "etl" })
		if g.Spec.MinMember != 3 || !ownedByJob || g.Status.Phase != v1alpha1.PodGroupSucceeded {
			return fmt.Errorf("quickstart PodGroup etl: minMember %d, owners %v, phase %q; want 3, Job etl, Succeeded", g.Spec.MinMember, g.OwnerReferences, g.Status.Phase)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	// The reservation for a PodGroup that does not exist yet is placed and held.
	if err := poll(time.Minute, func() error {
		rr := &v1alpha1.ResourceReservation{}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "eval-hold"}, rr); err != nil {
			return err
		}
		if rr.Status.Phase != v1alpha1.ReservationReserved || rr.Status.NodeName == "" || rr.Status.ExpireTime == nil {
			return fmt.Errorf("quickstart ResourceReservation eval-hold: phase %q on %q, expireTime %v; want Reserved on a node with an expiry", rr.Status.Phase, rr.Status.NodeName, rr.Status.ExpireTime)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	// The pods carry the namespace's tier and a class from the pod webhook.
	var pods corev1.PodList
	if err := c.Client.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Labels[v1alpha1.LabelTenantTier] != "gold" || p.Labels[v1alpha1.LabelWorkloadType] == "" || p.Spec.SchedulerName != "kubenexus-scheduler" {
			t.Errorf("quickstart pod %s: tier %q, class %q, scheduler %q; want gold, a class, kubenexus-scheduler",
				p.Name, p.Labels[v1alpha1.LabelTenantTier], p.Labels[v1alpha1.LabelWorkloadType], p.Spec.SchedulerName)
		}
	}
}

// helmUpgradeAndUninstall: a values change reaches the scheduler through the chart's
// KubeNexusConfig, and uninstalling keeps the CRDs and the users' objects while
// removing what the release and the operator created.
func helmUpgradeAndUninstall(t *testing.T, c *demo.Cluster) {
	ctx := context.Background()
	if err := c.Helm("upgrade", "kubenexus", c.Chart(), "--reuse-values", "--set", "config.schedulerReplicas=2"); err != nil {
		t.Fatal(err)
	}
	replicas := func() (int32, error) {
		d := &appsv1.Deployment{}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: demo.Namespace, Name: render.Name}, d); err != nil {
			return 0, err
		}
		return *d.Spec.Replicas, nil
	}
	if err := poll(30*time.Second, func() error {
		if n, err := replicas(); err != nil || n != 2 {
			return fmt.Errorf("scheduler Deployment replicas %d (%v), want 2 after helm upgrade", n, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	if err := c.Helm("uninstall", "kubenexus", "--wait"); err != nil {
		t.Fatal(err)
	}
	// The CRDs are kept (helm.sh/resource-policy: keep), and with them the PodGroups.
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	if err := c.Client.Get(ctx, client.ObjectKey{Name: "podgroups.scheduling.kubenexus.io"}, crd); err != nil {
		t.Errorf("the PodGroup CRD is gone after helm uninstall: %v", err)
	}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: demo.NSData, Name: "etl-spark"}, &v1alpha1.PodGroup{}); err != nil {
		t.Errorf("PodGroup etl-spark is gone after helm uninstall: %v", err)
	}
	// The release's RBAC and webhooks are gone, and the garbage collector removes
	// what the operator applied for the KubeNexusConfig the release owned.
	for _, obj := range []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "kubenexus-manager"}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "kubenexus-scheduler-kube-scheduler"}},
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "kubenexus-pod-mutating"}},
	} {
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
			t.Errorf("%T %s still exists after helm uninstall (%v)", obj, obj.GetName(), err)
		}
	}
	// The KubeNexusConfig the manager applied from the chart's ConfigMap is owned by
	// the release's ClusterRole, and the scheduler Deployment by it: the collector
	// removes both. It learns of the KubeNexusConfig kind on its next discovery sync
	// (every 30 s) if the chart's CRDs arrived after it started, as they do here.
	if err := poll(2*time.Minute, func() error {
		err := c.Client.Get(ctx, client.ObjectKey{Name: v1alpha1.DefaultConfigName}, &v1alpha1.KubeNexusConfig{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("KubeNexusConfig %s is not garbage-collected: %v", v1alpha1.DefaultConfigName, err)
		}
		if _, err := replicas(); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the scheduler Deployment is not garbage-collected: %v", err)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
}

func poll(timeout time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkZoneSkew: the service's replicas differ by at most one between zones.
func checkZoneSkew(t *testing.T, c *demo.Cluster, p demo.Placement) {
	var pods corev1.PodList
	if err := c.Client.List(context.Background(), &pods, client.InNamespace(p.Namespace), client.MatchingLabels(p.Selector)); err != nil {
		t.Fatal(err)
	}
	perZone := map[string]int{}
	for _, pod := range pods.Items {
		n := &corev1.Node{}
		if err := c.Client.Get(context.Background(), client.ObjectKey{Name: pod.Spec.NodeName}, n); err != nil {
			t.Fatal(err)
		}
		perZone[n.Labels[v1alpha1.LabelTopologyZone]]++
	}
	lo, hi := len(pods.Items), 0
	for _, n := range perZone {
		lo, hi = min(lo, n), max(hi, n)
	}
	if hi-lo > 1 {
		t.Errorf("services per zone %v: skew %d", perZone, hi-lo)
	}
}

// checkLeaderWorkerSet: with LeaderWorkerSet's real controller, a set of two groups
// of three (a leader, two workers; 8 GPUs each) that asks for each group alone in one
// rack: LWS creates a group's workers only once its leader is bound, so each group
// is a leader-first gang — its leader placed only in a rack that holds the group —
// and both groups run whole, each in a rack of its own. Scaled to three groups, the
// third's leader finds no rack with room for its group (one has two free nodes) and
// is not bound, though a node would take it.
func checkLeaderWorkerSet(t *testing.T, c *demo.Cluster) {
	t.Helper()
	if err := c.StartLWS(context.Background()); err != nil {
		t.Fatal(err)
	}
	r, err := c.RunLWSScenario(context.Background())
	if r != nil {
		t.Logf("LeaderWorkerSet groups: %+v; after scaling to 3: %+v", r.Groups, r.ScaledGroups)
	}
	if err != nil {
		t.Fatalf("LeaderWorkerSet scenario: %v", err)
	}
	racks := map[string]bool{}
	for _, g := range r.Groups {
		if g.Bound != 3 || len(g.Racks) != 1 || !slices.Equal(g.Roles, []string{"leader", "worker", "worker"}) {
			t.Errorf("group %d: %d/3 bound in racks %v, roles %v; want all 3 in one rack, a leader and two workers", g.Index, g.Bound, g.Racks, g.Roles)
		}
		if g.Owner != "LeaderWorkerSet/vllm" || g.Tier != "silver" || g.GangSize != 1 || g.Gang == "" {
			t.Errorf("group %d: gang %q of size %d owned by %q, tier %q; want a leader-first gang (size 1) owned by LeaderWorkerSet/vllm, tier silver", g.Index, g.Gang, g.GangSize, g.Owner, g.Tier)
		}
		for _, rack := range g.Racks {
			if racks[rack] {
				t.Errorf("two groups in rack %s: exclusive-topology keeps each alone", rack)
			}
			racks[rack] = true
		}
	}
	if len(r.ScaledGroups) != 3 {
		t.Fatalf("after scaling to 3: %d groups", len(r.ScaledGroups))
	}
	// Its leader is refused (LWS creates the workers once it is bound): the rack of
	// two free nodes would take it, but not the group.
	if third := r.ScaledGroups[2]; third.Bound != 0 || third.Pods != 1 || !strings.Contains(third.Message, "needs 3 members (3 × 8 nvidia.com/gpu) in one rack; the largest rack fits 2") {
		t.Errorf("third group: %d of %d pods bound (want its leader alone, unbound: no rack holds the group), scheduler says %q", third.Bound, third.Pods, third.Message)
	}
}

// checkServing: one PodGroup needing 2 prefill and 2 decode pods over two real
// LeaderWorkerSets: the prefill set alone binds nothing though its pods fit, and the
// PodGroup says which role is short; both on three nodes for four pods bind nothing;
// a fourth node binds all four. Scaled up by a prefill group with room for one of
// its two pods, the running gang binds neither; with room for both, both.
func checkServing(t *testing.T, c *demo.Cluster) {
	t.Helper()
	r, err := c.RunServingScenario(context.Background())
	if r != nil {
		t.Logf("serving: %+v", *r)
	}
	if err != nil {
		t.Fatalf("serving scenario: %v", err)
	}
	if r.PrefillAloneBound != 0 || !strings.Contains(r.PrefillAloneMsg, "roles short: decode 0/2") {
		t.Errorf("prefill alone: %d bound, PodGroup says %q; want none bound and decode short", r.PrefillAloneBound, r.PrefillAloneMsg)
	}
	if r.ShortBound != 0 {
		t.Errorf("four pods on three nodes: %d bound, want none (reason %s)", r.ShortBound, r.ShortReason)
	}
	if r.Bound["prefill"] != 2 || r.Bound["decode"] != 2 {
		t.Errorf("with a fourth node: bound by role %v, want 2 prefill and 2 decode", r.Bound)
	}
	if r.ScaledPods != 2 || r.ScaledBoundShort != 0 || r.ScaledBound != 2 {
		t.Errorf("prefill scaled to two groups: %d of the new group's %d pods bound with room for one (want none), %d once room for both (want 2)",
			r.ScaledBoundShort, r.ScaledPods, r.ScaledBound)
	}
}

// checkKubeRay: with KubeRay's real operator, a RayCluster of a head and two
// 8-GPU workers (minReplicas 2) is one gang of three owned by the RayCluster: on one
// node, where the head and one worker would fit, nothing binds; on two, all three.
// The autoscaler's third worker joins the running gang and waits alone — the others
// stay bound — until a node has room.
func checkKubeRay(t *testing.T, c *demo.Cluster) {
	t.Helper()
	if err := c.StartKubeRay(context.Background()); err != nil {
		t.Fatal(err)
	}
	r, err := c.RunRayScenario(context.Background())
	if r != nil {
		t.Logf("KubeRay: %+v", *r)
	}
	if err != nil {
		t.Fatalf("KubeRay scenario: %v", err)
	}
	if r.OneNodePods != 3 || r.OneNodeBound != 0 {
		t.Errorf("one node: %d of %d pods bound, want none of 3", r.OneNodeBound, r.OneNodePods)
	}
	if r.Bound != 3 || r.GangSize != 3 || r.Owner != "RayCluster/"+"raytune" {
		t.Errorf("two nodes: %d/3 bound, gang of %d owned by %q; want 3, 3, RayCluster/raytune", r.Bound, r.GangSize, r.Owner)
	}
	if r.ScaledPods != 4 || r.ScaledBoundBefore != 3 || r.ScaledMessage == "" || r.ScaledBoundAfter != 4 {
		t.Errorf("autoscaled: %d pods, %d bound while the fourth waited (%q), %d once a node joined; want 4, 3, a reason, 4",
			r.ScaledPods, r.ScaledBoundBefore, r.ScaledMessage, r.ScaledBoundAfter)
	}

	// A RayJob's cluster: the same gang (head + minReplicas), owned by the RayJob.
	j, err := c.RunRayJobScenario(context.Background())
	if j != nil {
		t.Logf("RayJob: %+v", *j)
	}
	if err != nil {
		t.Fatalf("RayJob scenario: %v", err)
	}
	if j.Pods != 3 || j.Bound != 3 || j.GangSize != 3 || j.Gang != j.Cluster+"-ray" || j.Owner != "RayJob/"+demo.RayJobName {
		t.Errorf("RayJob's cluster %s: %d/%d bound, gang %q of %d owned by %q; want 3/3 bound in gang %s-ray of 3 owned by RayJob/%s",
			j.Cluster, j.Bound, j.Pods, j.Gang, j.GangSize, j.Owner, j.Cluster, demo.RayJobName)
	}
}

// checkTrainer: with Kubeflow Trainer's and JobSet's real controllers, a TrainJob of
// three 8-GPU training nodes in one rack, on a runtime whose nodes start once a
// model initializer completes (JobSet dependsOn): the initializer runs alone (a gang
// of its own), then the nodes are one gang of the TrainJob's numNodes, owned by the
// TrainJob, tier gold; with no rack holding three, none binds (a node would take
// each); once a node joins a rack, all three bind there. TrainJobs on Trainer's own
// coscheduling and Volcano PodGroupPolicies bind whole through the scheduler-plugins
// and Volcano PodGroups Trainer creates.
func checkTrainer(t *testing.T, c *demo.Cluster) {
	t.Helper()
	ctx := context.Background()
	if err := c.StartJobSet(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.StartTrainer(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := c.RunTrainScenario(ctx)
	if r != nil {
		t.Logf("Trainer: %+v", *r)
	}
	if err != nil {
		t.Fatalf("Trainer scenario: %v", err)
	}
	if i := r.Initializer; i.Pods != 1 || i.Bound != 1 || i.Gang != demo.TrainJobName+"-jobset" || i.GangSize != 1 {
		t.Errorf("model initializer: %d/%d bound in gang %q of %d; want 1/1 in %s-jobset of 1", i.Bound, i.Pods, i.Gang, i.GangSize, demo.TrainJobName)
	}
	w := r.Waiting
	if w.Pods != 3 || w.Bound != 0 || !strings.Contains(w.Message, "needs 3 members (3 × 8 nvidia.com/gpu) in one rack; the largest rack fits 2") {
		t.Errorf("training nodes on racks of 2: %d/%d bound, scheduler says %q; want none of 3, for want of a rack", w.Bound, w.Pods, w.Message)
	}
	p := r.Placed
	if p.Bound != 3 || len(p.Racks) != 1 || p.Gang != demo.TrainJobName+"-jobset-stage1" || p.GangSize != 3 || p.Owner != "TrainJob/"+demo.TrainJobName || p.Tier != "gold" {
		t.Errorf("training nodes: %d/3 bound in racks %v, gang %q of %d owned by %q, tier %q; want 3 in one rack, gang %s-jobset-stage1 of 3 owned by TrainJob/%s, tier gold",
			p.Bound, p.Racks, p.Gang, p.GangSize, p.Owner, p.Tier, demo.TrainJobName, demo.TrainJobName)
	}
	for job, st := range map[string]demo.TrainStep{demo.TrainJobCoscheduled: r.Coscheduled, demo.TrainJobVolcano: r.Volcano} {
		if st.Bound != 2 || st.Gang != job || st.GangSize != 2 || st.Owner != "TrainJob/"+job {
			t.Errorf("TrainJob %s on Trainer's PodGroupPolicy: %d/2 bound, PodGroup %q of %d owned by %q; want 2, %s of 2 owned by the TrainJob",
				job, st.Bound, st.Gang, st.GangSize, st.Owner, job)
		}
	}
}

// checkKueue: with the real Kueue controller and Job controller, an 8 × 8-GPU Job on
// 64 GPUs free in halves is admitted by quota and its pods wait unscheduled; with the
// placement-feasibility check it is held with a message and no pod until the GPUs
// free up, then admitted, placed whole and completed.
func checkKueue(t *testing.T, c *demo.Cluster) {
	t.Helper()
	r, err := c.RunKueueScenario(context.Background())
	demo.PrintKueue(testenv.LogWriter{T: t}, r)
	if err != nil {
		t.Fatalf("Kueue scenario: %v", err)
	}
	if !r.PlainAdmitted || r.PlainPods != 8 || r.PlainBound != 0 {
		t.Errorf("without the check: admitted %v, %d pods, %d bound; want admitted, 8 pods, none bound", r.PlainAdmitted, r.PlainPods, r.PlainBound)
	}
	for _, want := range []string{"8 × 8 nvidia.com/gpu", "hold 0 of the 8 pods now", "64 nvidia.com/gpu free on those nodes, but fragmented"} {
		if !strings.Contains(r.CheckedMessage, want) {
			t.Errorf("the check's message %q does not say %q", r.CheckedMessage, want)
		}
	}
	if r.CheckedPodsWhileHeld != 0 {
		t.Errorf("with the check: %d pods created while the Workload was held", r.CheckedPodsWhileHeld)
	}
	if r.CheckedFinalCheckState != "Ready" || r.CheckedBound != 8 || !r.CheckedComplete {
		t.Errorf("after capacity freed: check %q, %d/8 bound, complete %v", r.CheckedFinalCheckState, r.CheckedBound, r.CheckedComplete)
	}
	checkKueueTAS(t, c)
	// Kueue's deprecated v1beta1 is converted by Kueue's own conversion webhook: the
	// ClusterQueue written in v1beta2 reads back in v1beta1 naming the check.
	old := &unstructured.Unstructured{}
	old.SetAPIVersion("kueue.x-k8s.io/v1beta1")
	old.SetKind("ClusterQueue")
	if err := c.Client.Get(context.Background(), client.ObjectKey{Name: "gpu-checked"}, old); err != nil {
		t.Errorf("reading ClusterQueue gpu-checked in kueue.x-k8s.io/v1beta1 (Kueue's conversion webhook): %v", err)
	} else if spec, err := json.Marshal(old.Object["spec"]); err != nil || !strings.Contains(string(spec), demo.KueueAdmissionCheck) {
		t.Errorf("ClusterQueue gpu-checked in v1beta1 does not name %s: %s", demo.KueueAdmissionCheck, spec)
	}
	// Before the chart is uninstalled: Kueue keeps the AdmissionCheck while a
	// ClusterQueue names it.
	if err := c.ReleaseKueueCheck(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// checkKueueTAS: with Kueue's topology-aware scheduling on (a Topology, a flavor over
// it), a Job of 16 two-GPU members asking through Kueue's annotations for one rack in
// slices of 8 per NVLink domain, where only the free rack holds such slices: Kueue
// admits it with a topology assignment, the placement check agrees, and KubeNexus
// binds every member on the host Kueue pinned it to — one rack, whole slices.
func checkKueueTAS(t *testing.T, c *demo.Cluster) {
	t.Helper()
	r, err := c.RunKueueTASScenario(context.Background())
	demo.PrintKueueTAS(testenv.LogWriter{T: t}, r)
	if err != nil {
		t.Fatalf("Kueue TAS scenario: %v", err)
	}
	if !r.Admitted || len(r.TopologyLevels) == 0 || r.CheckState != "Ready" {
		t.Errorf("Kueue TAS: admitted %v, topology levels %v, check %q; want admitted with a topology assignment, check Ready", r.Admitted, r.TopologyLevels, r.CheckState)
	}
	if r.Bound != 16 || r.Pinned != 16 || r.Violations() != 0 || r.Racks["rack-kt1"] != 16 {
		t.Errorf("Kueue TAS: %d/16 bound, %d on Kueue's host, racks %v, NVLink domains %v (%d violations); want all 16 on their hosts in rack-kt1, 8 per NVLink domain",
			r.Bound, r.Pinned, r.Racks, r.Cliques, r.Violations())
	}
}
