package demo

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/test/util/testenv"
)

// KubeRay's side of the e2e: KubeRay v1.5.0's operator (built in hack/tools/frameworks)
// runs as a local process (its webhooks are off unless ENABLE_WEBHOOKS is set) and a
// RayCluster of a head and two GPU workers (minReplicas 2) is ganged, then autoscaled.
// Not in make demo, for its build time.
const (
	rayNamespace = "team-ray"
	rayCluster   = "raytune"
	rayPool      = "ray-demo"
	rayTaintKey  = "kubenexus.io/ray-demo"
)

// StartKubeRay runs KubeRay's operator (its RayCluster CRD was installed with the
// others).
func (c *Cluster) StartKubeRay(ctx context.Context) error {
	ports, err := testenv.FreePorts(1)
	if err != nil {
		return err
	}
	c.logf("starting KubeRay v1.5.0's operator (local process)")
	return c.startController(ctx, "kuberay", ports[0], "--metrics-addr=0", fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", ports[0]),
		"--enable-leader-election=false", "--log-stdout-encoder=console")
}

// RayReport is what the RayCluster scenario saw.
type RayReport struct {
	// On one 8-GPU node (room for the head and one worker): pods and pods bound.
	OneNodePods, OneNodeBound int
	// On two: pods bound, the gang's size and its PodGroup's owner.
	Bound, GangSize int
	Owner           string
	// After the autoscaler's third worker, on two nodes: it waits alone (bound of
	// the others), then binds once a third node joins.
	ScaledPods, ScaledBoundBefore, ScaledBoundAfter int
	ScaledMessage                                   string
}

// RunRayScenario creates a RayCluster (a head, and a worker group of 8-GPU workers,
// minReplicas 2, maxReplicas 3) on one node that holds the head and one worker, then
// two, then raises the group's replicas to 3 as Ray's autoscaler does, then adds a
// third node.
func (c *Cluster) RunRayScenario(ctx context.Context) (*RayReport, error) {
	c.logf("KubeRay: RayCluster %s (a head, 2–3 workers of 8 GPUs) on one node, then two, then scaled to 3 workers and a third node", rayCluster)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rayNamespace, Labels: map[string]string{v1alpha1.LabelNamespaceEnabled: "true"}}}
	if err := c.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	pool := []map[string]string{{kueuePoolKey: rayPool}}
	if err := c.taintedPool(ctx, "ray", pool, rayTaintKey); err != nil {
		return nil, err
	}
	rc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "ray.io/v1", "kind": "RayCluster",
		"metadata": map[string]any{"name": rayCluster, "namespace": rayNamespace},
		"spec": map[string]any{
			"headGroupSpec": map[string]any{"rayStartParams": map[string]any{}, "template": rayPodTemplate("")},
			"workerGroupSpecs": []any{map[string]any{"groupName": "gpu", "replicas": int64(2), "minReplicas": int64(2), "maxReplicas": int64(3),
				"rayStartParams": map[string]any{}, "template": rayPodTemplate("8")}},
		},
	}}
	if err := c.Client.Create(ctx, rc); err != nil {
		return nil, fmt.Errorf("creating RayCluster %s: %w", rayCluster, err)
	}
	r := &RayReport{}
	// One node: the head and a worker would fit; the gang of three does not.
	err := waitFor(ctx, 2*time.Minute, func() error {
		pods, err := c.rayPods(ctx)
		if err != nil {
			return err
		}
		r.OneNodePods, r.OneNodeBound = len(pods), countBound(pods)
		if len(pods) < 3 || pendingMessage(pods) == "" {
			return fmt.Errorf("%d pods, none tried yet", len(pods))
		}
		return nil
	})
	if err != nil {
		return r, err
	}
	time.Sleep(3 * time.Second)
	pods, err := c.rayPods(ctx)
	if err != nil {
		return r, err
	}
	r.OneNodeBound = countBound(pods)

	if err := c.taintedPool(ctx, "ray-more", pool, rayTaintKey); err != nil {
		return r, err
	}
	err = waitFor(ctx, 2*time.Minute, func() error {
		pods, err := c.rayPods(ctx)
		if err != nil {
			return err
		}
		r.Bound = countBound(pods)
		if r.Bound != 3 {
			return fmt.Errorf("%d/3 bound", r.Bound)
		}
		for i := range pods {
			if g := pods[i].Labels[v1alpha1.LabelKubeNexusGangName]; g != "" {
				r.GangSize, _ = strconv.Atoi(pods[i].Labels[v1alpha1.LabelKubeNexusGangMinAvailable])
				pg := &v1alpha1.PodGroup{}
				if err := c.Client.Get(ctx, client.ObjectKey{Namespace: rayNamespace, Name: g}, pg); err != nil {
					return err
				}
				for _, ref := range pg.OwnerReferences {
					r.Owner = ref.Kind + "/" + ref.Name
				}
			}
		}
		return nil
	})
	if err != nil {
		return r, err
	}

	// The autoscaler asks for a third worker: it joins the gang and waits alone. (The
	// operator writes the RayCluster too: read, change and write again on a conflict.)
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(rc), rc); err != nil {
			return err
		}
		groups, _, _ := unstructured.NestedSlice(rc.Object, "spec", "workerGroupSpecs")
		groups[0].(map[string]any)["replicas"] = int64(3)
		if err := unstructured.SetNestedSlice(rc.Object, groups, "spec", "workerGroupSpecs"); err != nil {
			return err
		}
		return c.Client.Update(ctx, rc)
	}); err != nil {
		return r, err
	}
	err = waitFor(ctx, 2*time.Minute, func() error {
		pods, err := c.rayPods(ctx)
		if err != nil {
			return err
		}
		r.ScaledPods, r.ScaledBoundBefore, r.ScaledMessage = len(pods), countBound(pods), pendingMessage(pods)
		if len(pods) != 4 || r.ScaledMessage == "" {
			return fmt.Errorf("%d pods, the fourth not tried yet", len(pods))
		}
		return nil
	})
	if err != nil {
		return r, err
	}
	if err := c.taintedPool(ctx, "ray-third", pool, rayTaintKey); err != nil {
		return r, err
	}
	err = waitFor(ctx, 2*time.Minute, func() error {
		pods, err := c.rayPods(ctx)
		if err != nil {
			return err
		}
		r.ScaledBoundAfter = countBound(pods)
		if r.ScaledBoundAfter != 4 {
			return fmt.Errorf("%d/4 bound", r.ScaledBoundAfter)
		}
		return nil
	})
	return r, err
}

// RayJobName is the scenario's RayJob.
const RayJobName = "raybatch"

// RayJobReport is what the RayJob scenario saw: the cluster KubeRay created for the
// job, its pods bound, and their gang's size and PodGroup owner.
type RayJobReport struct {
	Cluster        string
	Pods, Bound    int
	GangSize       int
	Gang, Owner    string
	PendingMessage string
}

// RunRayJobScenario creates a RayJob whose cluster is a head and two 8-GPU workers
// (minReplicas 2) on two fresh nodes of the pool, and reads its cluster's pods once
// all three are bound.
func (c *Cluster) RunRayJobScenario(ctx context.Context) (*RayJobReport, error) {
	c.logf("KubeRay: RayJob %s (its cluster a head and 2 workers of 8 GPUs) on two fresh nodes", RayJobName)
	pool := []map[string]string{{kueuePoolKey: rayPool}, {kueuePoolKey: rayPool}}
	if err := c.taintedPool(ctx, "rayjob", pool, rayTaintKey); err != nil {
		return nil, err
	}
	rj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "ray.io/v1", "kind": "RayJob",
		"metadata": map[string]any{"name": RayJobName, "namespace": rayNamespace},
		"spec": map[string]any{
			"entrypoint": "python -c 'import ray; ray.init()'",
			"rayClusterSpec": map[string]any{
				"headGroupSpec": map[string]any{"rayStartParams": map[string]any{}, "template": rayPodTemplate("")},
				"workerGroupSpecs": []any{map[string]any{"groupName": "gpu", "replicas": int64(2), "minReplicas": int64(2), "maxReplicas": int64(2),
					"rayStartParams": map[string]any{}, "template": rayPodTemplate("8")}},
			},
		},
	}}
	if err := c.Client.Create(ctx, rj); err != nil {
		return nil, fmt.Errorf("creating RayJob %s: %w", RayJobName, err)
	}
	r := &RayJobReport{}
	err := waitFor(ctx, 2*time.Minute, func() error {
		var clusters unstructured.UnstructuredList
		clusters.SetAPIVersion("ray.io/v1")
		clusters.SetKind("RayClusterList")
		if err := c.Client.List(ctx, &clusters, client.InNamespace(rayNamespace)); err != nil {
			return err
		}
		for _, rc := range clusters.Items {
			if ref := metav1.GetControllerOf(&rc); ref != nil && ref.Kind == "RayJob" && ref.Name == RayJobName {
				r.Cluster = rc.GetName()
			}
		}
		if r.Cluster == "" {
			return fmt.Errorf("no RayCluster of RayJob %s yet", RayJobName)
		}
		var pods corev1.PodList
		if err := c.Client.List(ctx, &pods, client.InNamespace(rayNamespace), client.MatchingLabels{"ray.io/cluster": r.Cluster}); err != nil {
			return err
		}
		r.Pods, r.Bound, r.PendingMessage = len(pods.Items), countBound(pods.Items), pendingMessage(pods.Items)
		for i := range pods.Items {
			r.Gang = pods.Items[i].Labels[v1alpha1.LabelKubeNexusGangName]
			r.GangSize, _ = strconv.Atoi(pods.Items[i].Labels[v1alpha1.LabelKubeNexusGangMinAvailable])
		}
		if r.Gang != "" {
			pg := &v1alpha1.PodGroup{}
			if err := c.Client.Get(ctx, client.ObjectKey{Namespace: rayNamespace, Name: r.Gang}, pg); err != nil {
				return err
			}
			for _, ref := range pg.OwnerReferences {
				r.Owner = ref.Kind + "/" + ref.Name
			}
		}
		if r.Bound != 3 || r.Owner == "" {
			return fmt.Errorf("cluster %s: %d/3 bound, PodGroup %q owned by %q", r.Cluster, r.Bound, r.Gang, r.Owner)
		}
		return nil
	})
	return r, err
}

// rayPodTemplate is a Ray pod template on the scenario's pool: 4 CPUs, or 8 GPUs.
func rayPodTemplate(gpus string) map[string]any {
	res := map[string]any{"requests": map[string]any{"cpu": "4", "memory": "16Gi"}}
	if gpus != "" {
		res = map[string]any{"requests": map[string]any{"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": gpus}, "limits": map[string]any{"nvidia.com/gpu": gpus}}
	}
	return map[string]any{"spec": map[string]any{
		"nodeSelector": map[string]any{kueuePoolKey: rayPool},
		"tolerations":  []any{map[string]any{"key": rayTaintKey, "operator": "Exists"}},
		"containers":   []any{map[string]any{"name": "ray", "image": "rayproject/ray:2.49.0", "resources": res}},
	}}
}

func (c *Cluster) rayPods(ctx context.Context) ([]corev1.Pod, error) {
	var pods corev1.PodList
	err := c.Client.List(ctx, &pods, client.InNamespace(rayNamespace), client.MatchingLabels{"ray.io/cluster": rayCluster})
	return pods.Items, err
}

// pendingMessage is the PodScheduled message of the first pod the scheduler left
// pending ("" when none has one).
func pendingMessage(pods []corev1.Pod) string {
	for i := range pods {
		for _, cond := range pods[i].Status.Conditions {
			if pods[i].Spec.NodeName == "" && cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Message != "" {
				return cond.Message
			}
		}
	}
	return ""
}
