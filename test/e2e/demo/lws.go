package demo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/test/util/testenv"
)

// LeaderWorkerSet's side of the e2e: LWS v0.7.0's own controller-manager (built in
// hack/tools/frameworks) runs as a local process with its webhooks registered by URL, and a
// LeaderWorkerSet of two groups (a leader and two workers each, 8 GPUs a pod) that
// asks for each group alone in one rack. Not in make demo: it would add LWS's build
// (about two minutes on 2 cores) to the demo's cold start.
const (
	lwsName      = "vllm"
	lwsNamespace = "team-serving"
	lwsPool      = "lws-demo"
	lwsTaintKey  = "kubenexus.io/lws-demo"
	lwsSize      = 3
)

// lwsRacks are the scenario's racks, by node count: two of three nodes (a group
// each) and one of two, where a third group's members would fit only partly.
var lwsRacks = []int{3, 3, 2}

// StartLWS runs LeaderWorkerSet's controller-manager with the demo's serving
// certificate and registers its webhooks by URL (its CRD was installed with the
// others).
func (c *Cluster) StartLWS(ctx context.Context) error {
	ports, err := testenv.FreePorts(2)
	if err != nil {
		return err
	}
	webhookPort, probePort := ports[0], ports[1]
	config := fmt.Sprintf(`apiVersion: config.lws.x-k8s.io/v1alpha1
kind: Configuration
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
health:
  healthProbeBindAddress: 127.0.0.1:%d
metrics:
  bindAddress: "0"
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
`, probePort, webhookPort, c.certDir)
	path := filepath.Join(c.opts.Dir, "lws-config.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		return err
	}
	c.logf("starting LeaderWorkerSet v0.7.0's controller-manager (local process, webhooks on 127.0.0.1:%d)", webhookPort)
	if err := c.startController(ctx, "lws", probePort, "--config="+path, "--zap-log-level=2"); err != nil {
		return err
	}
	return c.registerAllWebhooks(ctx, "LeaderWorkerSet", "lws", testenv.LeaderWorkerSetWebhooks, webhookPort)
}

// LWSGroup is what one LeaderWorkerSet group's pods show.
type LWSGroup struct {
	Index, Pods, Bound int
	// Racks are the racks of its bound pods; Roles its pods' workload.kubenexus.io/role.
	Racks, Roles []string
	// Gang is the gang the webhook put its pods in and GangSize its min-available;
	// Owner is the kind/name its PodGroup is owned by; Tier the pods' tier.
	Gang, Owner, Tier string
	GangSize          int
	// Message is the PodScheduled message of a pod left pending.
	Message string
	// Leader is the UID of its leader pod (a group LWS recreated has a new one);
	// PodGroup the UID of its gang's PodGroup ("": none).
	Leader, PodGroup types.UID
}

// LWSReport is what the LeaderWorkerSet scenario saw: the groups once two were
// placed, then after a scale-up to three.
type LWSReport struct {
	Groups, ScaledGroups []LWSGroup
}

// RunLWSScenario creates the LeaderWorkerSet, waits for its two groups to be placed,
// then scales it to three groups, for which no rack has room (the third rack's two
// nodes would take two of its three pods), and reads every group.
func (c *Cluster) RunLWSScenario(ctx context.Context) (*LWSReport, error) {
	c.logf("LeaderWorkerSet: %s of %d-pod groups (8 GPUs a pod), each alone in one rack (exclusive-topology), on racks of %v nodes", lwsName, lwsSize, lwsRacks)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: lwsNamespace, Labels: map[string]string{
		v1alpha1.LabelNamespaceEnabled: "true", v1alpha1.LabelTenantTier: string(v1alpha1.TenantTierSilver)}}}
	if err := c.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	var labels []map[string]string
	for r, n := range lwsRacks {
		for range n {
			labels = append(labels, map[string]string{kueuePoolKey: lwsPool, v1alpha1.LabelRack: fmt.Sprintf("rack-lws-%d", r)})
		}
	}
	if err := c.taintedPool(ctx, "lws", labels, lwsTaintKey); err != nil {
		return nil, err
	}
	lws := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
		"metadata": map[string]any{"name": lwsName, "namespace": lwsNamespace,
			"annotations": map[string]any{v1alpha1.AnnotationLWSExclusiveTopology: v1alpha1.LabelRack}},
		"spec": map[string]any{
			"replicas": int64(2),
			"leaderWorkerTemplate": map[string]any{
				"size": int64(lwsSize),
				"workerTemplate": map[string]any{"spec": map[string]any{
					"nodeSelector": map[string]any{kueuePoolKey: lwsPool},
					"tolerations":  []any{map[string]any{"key": lwsTaintKey, "operator": "Exists"}},
					"containers": []any{map[string]any{"name": "vllm", "image": "vllm/vllm-openai:v0.11.0",
						"resources": map[string]any{
							"requests": map[string]any{"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "8"},
							"limits":   map[string]any{"nvidia.com/gpu": "8"}}}},
				}},
			},
		},
	}}
	if err := c.Client.Create(ctx, lws); err != nil {
		return nil, fmt.Errorf("creating LeaderWorkerSet %s: %w", lwsName, err)
	}
	r := &LWSReport{}
	err := waitFor(ctx, 3*time.Minute, func() error {
		groups, err := c.lwsGroups(ctx)
		r.Groups = groups
		if err != nil {
			return err
		}
		if len(groups) != 2 || groups[0].Bound != lwsSize || groups[1].Bound != lwsSize {
			return fmt.Errorf("groups %+v: want 2 of %d bound", groups, lwsSize)
		}
		return nil
	})
	if err != nil {
		return r, err
	}
	// Scale up by one group: the third rack has two nodes, no rack three free. (LWS
	// writes the object too: read, change and write again on a conflict.)
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(lws), lws); err != nil {
			return err
		}
		if err := unstructured.SetNestedField(lws.Object, int64(3), "spec", "replicas"); err != nil {
			return err
		}
		return c.Client.Update(ctx, lws)
	}); err != nil {
		return r, err
	}
	err = waitFor(ctx, 2*time.Minute, func() error {
		groups, err := c.lwsGroups(ctx)
		r.ScaledGroups = groups
		if err != nil {
			return err
		}
		// LWS creates the third group's leader; its workers come once it is bound.
		if len(groups) != 3 || groups[2].Pods < 1 || groups[2].Message == "" {
			return fmt.Errorf("after scaling: groups %+v, want a third whose leader the scheduler has tried", groups)
		}
		return nil
	})
	// A few more seconds: nothing of the third group may bind meanwhile.
	time.Sleep(5 * time.Second)
	if groups, gerr := c.lwsGroups(ctx); gerr == nil {
		r.ScaledGroups = groups
	}
	return r, err
}

// lwsGroups reads the LeaderWorkerSet's pods, by group.
func (c *Cluster) lwsGroups(ctx context.Context) ([]LWSGroup, error) {
	var pods corev1.PodList
	if err := c.Client.List(ctx, &pods, client.InNamespace(lwsNamespace), client.MatchingLabels{"leaderworkerset.sigs.k8s.io/name": lwsName}); err != nil {
		return nil, err
	}
	byIndex := map[int]*LWSGroup{}
	for i := range pods.Items {
		p := &pods.Items[i]
		idx, err := strconv.Atoi(p.Labels["leaderworkerset.sigs.k8s.io/group-index"])
		if err != nil {
			continue
		}
		g := byIndex[idx]
		if g == nil {
			g = &LWSGroup{Index: idx}
			byIndex[idx] = g
		}
		g.Pods++
		if p.Labels["leaderworkerset.sigs.k8s.io/worker-index"] == "0" {
			g.Leader = p.UID
		}
		g.Roles = append(g.Roles, p.Labels[v1alpha1.LabelWorkloadRole])
		g.Tier = p.Labels[v1alpha1.LabelTenantTier]
		g.Gang = p.Labels[v1alpha1.LabelKubeNexusGangName]
		g.GangSize, _ = strconv.Atoi(p.Labels[v1alpha1.LabelKubeNexusGangMinAvailable])
		if p.Spec.NodeName != "" {
			g.Bound++
			node := &corev1.Node{}
			if err := c.Client.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, node); err != nil {
				return nil, err
			}
			if rack := node.Labels[v1alpha1.LabelRack]; !slices.Contains(g.Racks, rack) {
				g.Racks = append(g.Racks, rack)
			}
			continue
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Message != "" {
				g.Message = cond.Message
			}
		}
	}
	out := make([]LWSGroup, 0, len(byIndex))
	for _, g := range byIndex {
		sort.Strings(g.Roles)
		sort.Strings(g.Racks)
		if g.Gang != "" {
			pg := &v1alpha1.PodGroup{}
			if err := c.Client.Get(ctx, client.ObjectKey{Namespace: lwsNamespace, Name: g.Gang}, pg); err == nil {
				g.PodGroup = pg.UID
				for _, ref := range pg.OwnerReferences {
					g.Owner = ref.Kind + "/" + ref.Name
				}
			}
		}
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out, nil
}

// ServingReport is what the disaggregated-serving scenario saw: one PodGroup with a
// minimum per role over the pods of two LeaderWorkerSets (prefill, decode).
type ServingReport struct {
	// With only the prefill set created: its pods bound (capacity for them exists)
	// and the PodGroup's condition message.
	PrefillAloneBound int
	PrefillAloneMsg   string
	// With both created on three nodes for four pods: pods bound, PodGroup reason.
	ShortBound  int
	ShortReason string
	// Once a fourth node joins: pods bound by role, and the PodGroup's phase.
	Bound map[string]int
	Phase string
	// The prefill set scaled to two groups with room for one pod of the new group:
	// its pods and how many bound; then, with a node for the other, bound.
	ScaledPods, ScaledBoundShort, ScaledBound int
}

const (
	servingGroup = "llama-serving"
	servingPool  = "serve-demo"
	servingTaint = "kubenexus.io/serve-demo"
)

// RunServingScenario: a PodGroup requiring 2 prefill and 2 decode pods, and two
// LeaderWorkerSets (one group of a leader and a worker each, 8 GPUs a pod) whose
// templates name it and their role. The prefill set alone starts nothing, though its
// pods fit; both together on three nodes start nothing; a fourth node starts all.
// Then the prefill set scales to two groups: the new group binds only whole.
func (c *Cluster) RunServingScenario(ctx context.Context) (*ServingReport, error) {
	c.logf("serving: PodGroup %s (minMember 4; prefill 2, decode 2) over two LeaderWorkerSets, on three 8-GPU nodes, then four", servingGroup)
	labels := []map[string]string{{kueuePoolKey: servingPool}, {kueuePoolKey: servingPool}, {kueuePoolKey: servingPool}}
	if err := c.taintedPool(ctx, "serve", labels, servingTaint); err != nil {
		return nil, err
	}
	pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: servingGroup, Namespace: lwsNamespace},
		Spec: v1alpha1.PodGroupSpec{MinMember: 4, MinMemberPerRole: map[string]int32{"prefill": 2, "decode": 2}}}
	if err := c.Client.Create(ctx, pg); err != nil {
		return nil, err
	}
	r := &ServingReport{}
	if err := c.Client.Create(ctx, servingSet("llama-prefill", "prefill")); err != nil {
		return r, err
	}
	err := waitFor(ctx, time.Minute, func() error {
		pods, err := c.servingPods(ctx)
		if err != nil {
			return err
		}
		if len(pods) < 2 {
			return fmt.Errorf("%d prefill pods", len(pods))
		}
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(pg), pg); err != nil {
			return err
		}
		r.PrefillAloneMsg = scheduledCondition(pg).Message
		if r.PrefillAloneMsg == "" {
			return fmt.Errorf("no Scheduled condition on PodGroup %s yet", servingGroup)
		}
		return nil
	})
	if err != nil {
		return r, err
	}
	time.Sleep(3 * time.Second) // the scheduler had its chance to bind them
	pods, err := c.servingPods(ctx)
	if err != nil {
		return r, err
	}
	r.PrefillAloneBound = countBound(pods)

	if err := c.Client.Create(ctx, servingSet("llama-decode", "decode")); err != nil {
		return r, err
	}
	err = waitFor(ctx, 2*time.Minute, func() error {
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(pg), pg); err != nil {
			return err
		}
		r.ShortReason = scheduledCondition(pg).Reason
		if r.ShortReason != v1alpha1.ReasonInsufficientCapacity && r.ShortReason != v1alpha1.ReasonTimeout {
			return fmt.Errorf("PodGroup %s: reason %q, want the scheduler's verdict on four pods for three nodes", servingGroup, r.ShortReason)
		}
		return nil
	})
	if pods, perr := c.servingPods(ctx); perr == nil {
		r.ShortBound = countBound(pods)
	}
	if err != nil {
		return r, err
	}
	if err := c.taintedPool(ctx, "serve-more", labels[:1], servingTaint); err != nil {
		return r, err
	}
	err = waitFor(ctx, 2*time.Minute, func() error {
		pods, err := c.servingPods(ctx)
		if err != nil {
			return err
		}
		r.Bound = map[string]int{}
		for _, p := range pods {
			if p.Spec.NodeName != "" {
				r.Bound[p.Labels[v1alpha1.LabelWorkloadRole]]++
			}
		}
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(pg), pg); err != nil {
			return err
		}
		r.Phase = string(pg.Status.Phase)
		if countBound(pods) != 4 || (r.Phase != string(v1alpha1.PodGroupScheduled) && r.Phase != string(v1alpha1.PodGroupRunning)) {
			return fmt.Errorf("%d/4 bound, PodGroup %s", countBound(pods), r.Phase)
		}
		return nil
	})
	if err != nil {
		return r, err
	}

	// Scale-up: a second prefill group (a leader and a worker) with a node for only
	// one of them; the group binds only whole, once a second node joins.
	c.logf("serving: %s scaled to two groups, on one free node, then two", "llama-prefill")
	if err := c.taintedPool(ctx, "serve-up", labels[:1], servingTaint); err != nil {
		return r, err
	}
	prefill := servingSet("llama-prefill", "prefill")
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(prefill), prefill); err != nil {
			return err
		}
		if err := unstructured.SetNestedField(prefill.Object, int64(2), "spec", "replicas"); err != nil {
			return err
		}
		return c.Client.Update(ctx, prefill)
	}); err != nil {
		return r, err
	}
	scaledGroup := func() ([]corev1.Pod, error) {
		var pods corev1.PodList
		err := c.Client.List(ctx, &pods, client.InNamespace(lwsNamespace), client.MatchingLabels{
			"leaderworkerset.sigs.k8s.io/name": "llama-prefill", "leaderworkerset.sigs.k8s.io/group-index": "1"})
		return pods.Items, err
	}
	err = waitFor(ctx, 2*time.Minute, func() error {
		pods, err := scaledGroup()
		if err != nil {
			return err
		}
		r.ScaledPods = len(pods)
		if len(pods) != 2 || pendingMessage(pods) == "" {
			return fmt.Errorf("new prefill group: %d pods, none tried yet", len(pods))
		}
		return nil
	})
	if err != nil {
		return r, err
	}
	time.Sleep(5 * time.Second) // the scheduler had its chance to bind one of them
	pods, err = scaledGroup()
	if err != nil {
		return r, err
	}
	r.ScaledBoundShort = countBound(pods)
	if err := c.taintedPool(ctx, "serve-up2", labels[:1], servingTaint); err != nil {
		return r, err
	}
	err = waitFor(ctx, 2*time.Minute, func() error {
		pods, err := scaledGroup()
		if err != nil {
			return err
		}
		r.ScaledBound = countBound(pods)
		if r.ScaledBound != 2 {
			return fmt.Errorf("new prefill group: %d/2 bound", r.ScaledBound)
		}
		return nil
	})
	return r, err
}

// servingSet is a LeaderWorkerSet of one group (a leader and a worker, 8 GPUs each)
// whose pods name the serving PodGroup and role.
func servingSet(name, role string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
		"metadata": map[string]any{"name": name, "namespace": lwsNamespace},
		"spec": map[string]any{
			"replicas": int64(1),
			"leaderWorkerTemplate": map[string]any{
				"size": int64(2),
				"workerTemplate": map[string]any{
					"metadata": map[string]any{"labels": map[string]any{v1alpha1.LabelPodGroup: servingGroup, v1alpha1.LabelWorkloadRole: role}},
					"spec": map[string]any{
						"nodeSelector": map[string]any{kueuePoolKey: servingPool},
						"tolerations":  []any{map[string]any{"key": servingTaint, "operator": "Exists"}},
						"containers": []any{map[string]any{"name": "vllm", "image": "vllm/vllm-openai:v0.11.0",
							"resources": map[string]any{
								"requests": map[string]any{"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "8"},
								"limits":   map[string]any{"nvidia.com/gpu": "8"}}}},
					}},
			},
		},
	}}
}

func (c *Cluster) servingPods(ctx context.Context) ([]corev1.Pod, error) {
	var pods corev1.PodList
	err := c.Client.List(ctx, &pods, client.InNamespace(lwsNamespace), client.MatchingLabels{v1alpha1.LabelPodGroup: servingGroup})
	return pods.Items, err
}

func countBound(pods []corev1.Pod) int {
	n := 0
	for i := range pods {
		if pods[i].Spec.NodeName != "" {
			n++
		}
	}
	return n
}
