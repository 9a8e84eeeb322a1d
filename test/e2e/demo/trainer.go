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
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/test/util/testenv"
)

// Kubeflow Trainer's side of the e2e: Trainer v2.1.0's controller-manager and the
// JobSet v0.10.1 controller it drives (both built in hack/tools/frameworks) run as
// local processes with their webhooks registered by URL. A TrainJob on a runtime
// whose training nodes wait for a model initializer to complete (JobSet dependsOn)
// and ask for one rack, and TrainJobs on runtimes with Trainer's own coscheduling
// and Volcano PodGroupPolicies. Not in make demo, for their build time.
const (
	trainNamespace = "team-train"
	trainPool      = "train-demo"
	trainTaintKey  = "kubenexus.io/train-demo"
	// TrainJobName is the TrainJob KubeNexus gangs itself; its runtime's nodes need
	// one rack. TrainJobCoscheduled is the one on Trainer's coscheduling policy.
	TrainJobName        = "llama-tune"
	TrainJobCoscheduled = "llama-cosched"
	TrainJobVolcano     = "llama-volcano"
	trainNodes          = 3
)

// trainRacks are the pool's racks, by node count: no rack holds the three
// training nodes until a node joins the second.
var trainRacks = []int{2, 2}

// StartJobSet runs JobSet's controller-manager with the demo's serving certificate
// and registers its webhooks by URL.
func (c *Cluster) StartJobSet(ctx context.Context) error {
	ports, err := testenv.FreePorts(2)
	if err != nil {
		return err
	}
	webhookPort, probePort := ports[0], ports[1]
	config := fmt.Sprintf(`apiVersion: config.jobset.x-k8s.io/v1alpha1
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
	path := filepath.Join(c.opts.Dir, "jobset-config.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		return err
	}
	c.logf("starting JobSet v0.10.1's controller-manager (local process, webhooks on 127.0.0.1:%d)", webhookPort)
	if err := c.startController(ctx, "jobset", probePort, "--config="+path, "--zap-log-level=2"); err != nil {
		return err
	}
	return c.registerAllWebhooks(ctx, "JobSet", "jobset", testenv.JobSetWebhooks, webhookPort)
}

// StartTrainer runs Kubeflow Trainer's controller-manager and registers its webhooks
// by URL. Its webhook server reads its certificate from controller-runtime's
// default directory under $TMPDIR (the configuration has no certificate directory),
// so it gets a TMPDIR of its own holding the demo's.
func (c *Cluster) StartTrainer(ctx context.Context) error {
	ports, err := testenv.FreePorts(2)
	if err != nil {
		return err
	}
	webhookPort, probePort := ports[0], ports[1]
	tmp, err := c.webhookTMPDIR(filepath.Join(c.opts.Dir, "trainer"))
	if err != nil {
		return err
	}
	config := fmt.Sprintf(`apiVersion: config.trainer.kubeflow.org/v1alpha1
kind: Configuration
health:
  healthProbeBindAddress: 127.0.0.1:%d
metrics:
  bindAddress: "0"
webhook:
  host: 127.0.0.1
  port: %d
leaderElection:
  leaderElect: false
certManagement:
  enable: false
`, probePort, webhookPort)
	path := filepath.Join(c.opts.Dir, "trainer-config.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		return err
	}
	c.logf("starting Kubeflow Trainer v2.1.0's controller-manager (local process, webhooks on 127.0.0.1:%d)", webhookPort)
	env := append(os.Environ(), "KUBECONFIG="+c.Kubeconfig, "TMPDIR="+tmp)
	if err := c.startEnv("trainer", env, filepath.Join(c.opts.Bin, "k8s", "trainer"), "--config="+path, "--zap-log-level=2"); err != nil {
		return err
	}
	if err := waitFor(ctx, 2*time.Minute, func() error { return httpOK(fmt.Sprintf("http://127.0.0.1:%d/readyz", probePort)) }); err != nil {
		return fmt.Errorf("waiting for trainer to become ready (see %s): %w", c.logPath("trainer"), err)
	}
	return c.registerAllWebhooks(ctx, "Kubeflow Trainer", "trainer", testenv.TrainerWebhooks, webhookPort)
}

// TrainStep is what the pods of one replicated job of a TrainJob showed.
type TrainStep struct {
	Pods, Bound int
	// Racks are the racks of its bound pods.
	Racks []string
	// Gang and GangSize are the gang the pods were put in (KubeNexus's label, or
	// the scheduler-plugins PodGroup Trainer named) and its minimum; Owner is the
	// kind/name that owns the gang's PodGroup; Tier the pods' tier.
	Gang, Owner, Tier string
	GangSize          int
	// Message is the PodScheduled message of a pod left pending.
	Message string
	// dialect is the apiVersion of the other scheduler's PodGroup the pods name
	// ("": KubeNexus's own gang).
	dialect string
}

// TrainReport is what the Trainer scenario saw.
type TrainReport struct {
	// With no rack holding the three training nodes: the initializer, then the nodes.
	Initializer, Waiting TrainStep
	// Once a node joined the second rack.
	Placed TrainStep
	// The TrainJobs on Trainer's coscheduling and Volcano policies: their nodes,
	// with the scheduler-plugins or Volcano PodGroup Trainer created.
	Coscheduled, Volcano TrainStep
}

// RunTrainScenario creates the runtimes and the TrainJob of three 8-GPU nodes that
// need one rack, on two racks of two nodes: the initializer runs and completes, the
// nodes wait whole; then a node joins the second rack and all three bind there.
// Then a TrainJob of two nodes on Trainer's coscheduling policy, and one on its
// Volcano policy, each bind whole.
func (c *Cluster) RunTrainScenario(ctx context.Context) (*TrainReport, error) {
	c.logf("Kubeflow Trainer: TrainJob %s (a model initializer, then %d training nodes of 8 GPUs in one rack) on racks of %v nodes, then one more", TrainJobName, trainNodes, trainRacks)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: trainNamespace, Labels: map[string]string{
		v1alpha1.LabelNamespaceEnabled: "true", v1alpha1.LabelTenantTier: string(v1alpha1.TenantTierGold)}}}
	if err := c.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	var labels []map[string]string
	for r, n := range trainRacks {
		for range n {
			labels = append(labels, map[string]string{kueuePoolKey: trainPool, v1alpha1.LabelRack: fmt.Sprintf("rack-train-%d", r)})
		}
	}
	if err := c.taintedPool(ctx, "train", labels, trainTaintKey); err != nil {
		return nil, err
	}
	for _, rt := range []*unstructured.Unstructured{trainingRuntime("kubenexus-torch-tune", true, ""),
		trainingRuntime("kubenexus-torch-cosched", false, "coscheduling"), trainingRuntime("kubenexus-torch-volcano", false, "volcano")} {
		if err := c.Client.Create(ctx, rt); err != nil {
			return nil, fmt.Errorf("creating ClusterTrainingRuntime %s: %w", rt.GetName(), err)
		}
	}
	if err := c.Client.Create(ctx, trainJob(TrainJobName, "kubenexus-torch-tune", trainNodes)); err != nil {
		return nil, fmt.Errorf("creating TrainJob %s: %w", TrainJobName, err)
	}
	r := &TrainReport{}
	err := waitFor(ctx, 3*time.Minute, func() error {
		steps, err := c.trainSteps(ctx, TrainJobName)
		if err != nil {
			return err
		}
		r.Initializer, r.Waiting = steps["model-initializer"], steps["node"]
		if r.Waiting.Pods < trainNodes || r.Waiting.Message == "" {
			return fmt.Errorf("initializer %+v, nodes %+v: want %d nodes the scheduler has tried", r.Initializer, r.Waiting, trainNodes)
		}
		return nil
	})
	if err != nil {
		return r, err
	}
	time.Sleep(3 * time.Second) // nothing may bind meanwhile
	if steps, err := c.trainSteps(ctx, TrainJobName); err == nil {
		r.Waiting = steps["node"]
	}
	if err := c.taintedPool(ctx, "train-more", labels[len(labels)-1:], trainTaintKey); err != nil {
		return r, err
	}
	err = waitFor(ctx, 2*time.Minute, func() error {
		steps, err := c.trainSteps(ctx, TrainJobName)
		if err != nil {
			return err
		}
		r.Placed = steps["node"]
		if r.Placed.Bound != trainNodes {
			return fmt.Errorf("nodes %+v: want %d bound", r.Placed, trainNodes)
		}
		return nil
	})
	if err != nil {
		return r, err
	}

	for _, policy := range []struct {
		job, runtime string
		step         *TrainStep
	}{{TrainJobCoscheduled, "kubenexus-torch-cosched", &r.Coscheduled}, {TrainJobVolcano, "kubenexus-torch-volcano", &r.Volcano}} {
		c.logf("Kubeflow Trainer: TrainJob %s (2 nodes) on runtime %s (Trainer's own PodGroupPolicy)", policy.job, policy.runtime)
		if err := c.Client.Create(ctx, trainJob(policy.job, policy.runtime, 2)); err != nil {
			return r, fmt.Errorf("creating TrainJob %s: %w", policy.job, err)
		}
		err = waitFor(ctx, 2*time.Minute, func() error {
			steps, err := c.trainSteps(ctx, policy.job)
			if err != nil {
				return err
			}
			*policy.step = steps["node"]
			if policy.step.Bound != 2 {
				return fmt.Errorf("nodes %+v: want 2 bound", *policy.step)
			}
			return nil
		})
		if err != nil {
			return r, err
		}
	}
	return r, nil
}

// trainingRuntime is a ClusterTrainingRuntime for PyTorch whose nodes (8 GPUs each,
// on the scenario's pool) run after a model initializer completes and ask for one
// rack (Kueue's topology annotation, which KubeNexus reads) when initializer is set,
// or that names Trainer's PodGroupPolicy policy ("coscheduling", "volcano"; the
// latter's pods name the volcano scheduler, as Volcano's users write them).
func trainingRuntime(name string, initializer bool, policy string) *unstructured.Unstructured {
	placement := map[string]any{
		"nodeSelector": map[string]any{kueuePoolKey: trainPool},
		"tolerations":  []any{map[string]any{"key": trainTaintKey, "operator": "Exists"}},
	}
	podSpec := func(container, image string) map[string]any {
		spec := map[string]any{"containers": []any{map[string]any{"name": container, "image": image}}}
		for k, v := range placement {
			spec[k] = v
		}
		return spec
	}
	node := map[string]any{
		"name": "node",
		"template": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
			"spec": map[string]any{"template": map[string]any{
				"spec": podSpec("node", "pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime"),
			}},
		},
	}
	var jobs []any
	if initializer {
		jobs = append(jobs, map[string]any{
			"name": "model-initializer",
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"trainer.kubeflow.org/trainjob-ancestor-step": "model-initializer"}},
				"spec": map[string]any{"template": map[string]any{
					"spec": podSpec("model-initializer", "ghcr.io/kubeflow/trainer/model-initializer"),
				}},
			},
		})
		node["dependsOn"] = []any{map[string]any{"name": "model-initializer", "status": "Complete"}}
		node["template"].(map[string]any)["spec"].(map[string]any)["template"].(map[string]any)["metadata"] = map[string]any{
			"annotations": map[string]any{v1alpha1.AnnotationKueueRequiredTopology: v1alpha1.LabelRack}}
	}
	jobs = append(jobs, node)
	spec := map[string]any{
		"mlPolicy": map[string]any{"numNodes": int64(1), "torch": map[string]any{"numProcPerNode": "auto"}},
		"template": map[string]any{"spec": map[string]any{"replicatedJobs": jobs}},
	}
	switch policy {
	case "coscheduling":
		spec["podGroupPolicy"] = map[string]any{"coscheduling": map[string]any{"scheduleTimeoutSeconds": int64(120)}}
	case "volcano":
		spec["podGroupPolicy"] = map[string]any{"volcano": map[string]any{}}
		node["template"].(map[string]any)["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["schedulerName"] = "volcano"
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime",
		"metadata": map[string]any{"name": name, "labels": map[string]any{"trainer.kubeflow.org/framework": "torch"}},
		"spec":     spec,
	}}
}

// trainJob is a TrainJob of nodes 8-GPU training nodes on runtime.
func trainJob(name, runtime string, nodes int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
		"metadata": map[string]any{"name": name, "namespace": trainNamespace},
		"spec": map[string]any{
			"runtimeRef": map[string]any{"name": runtime},
			"trainer": map[string]any{
				"numNodes": nodes,
				"resourcesPerNode": map[string]any{
					"requests": map[string]any{"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "8"},
					"limits":   map[string]any{"nvidia.com/gpu": "8"}},
			},
		},
	}}
}

// trainSteps reads a TrainJob's pods by replicated job (JobSet's label).
func (c *Cluster) trainSteps(ctx context.Context, job string) (map[string]TrainStep, error) {
	var pods corev1.PodList
	if err := c.Client.List(ctx, &pods, client.InNamespace(trainNamespace), client.MatchingLabels{"jobset.sigs.k8s.io/jobset-name": job}); err != nil {
		return nil, err
	}
	steps := map[string]TrainStep{}
	for i := range pods.Items {
		p := &pods.Items[i]
		name := p.Labels["jobset.sigs.k8s.io/replicatedjob-name"]
		s := steps[name]
		s.Pods++
		s.Tier = p.Labels[v1alpha1.LabelTenantTier]
		switch {
		case p.Labels[v1alpha1.LabelKubeNexusGangName] != "":
			s.Gang, s.dialect = p.Labels[v1alpha1.LabelKubeNexusGangName], ""
			s.GangSize, _ = strconv.Atoi(p.Labels[v1alpha1.LabelKubeNexusGangMinAvailable])
		case p.Labels[v1alpha1.LabelPodGroup] != "":
			s.Gang, s.dialect = p.Labels[v1alpha1.LabelPodGroup], v1alpha1.SigsPodGroupGroup+"/"+v1alpha1.SigsPodGroupVersion
		case p.Annotations[v1alpha1.AnnotationVolcanoGroupName] != "":
			s.Gang, s.dialect = p.Annotations[v1alpha1.AnnotationVolcanoGroupName], v1alpha1.VolcanoPodGroupGroup+"/"+v1alpha1.VolcanoPodGroupVersion
		}
		if p.Spec.NodeName != "" {
			s.Bound++
			node := &corev1.Node{}
			if err := c.Client.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, node); err != nil {
				return nil, err
			}
			if rack := node.Labels[v1alpha1.LabelRack]; !slices.Contains(s.Racks, rack) {
				s.Racks = append(s.Racks, rack)
				sort.Strings(s.Racks)
			}
		}
		for _, cond := range p.Status.Conditions {
			if p.Spec.NodeName == "" && cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Message != "" {
				s.Message = cond.Message
			}
		}
		steps[name] = s
	}
	for name, s := range steps {
		if s.Gang == "" {
			continue
		}
		// KubeNexus's PodGroup for its own gangs; the scheduler-plugins or Volcano
		// one Trainer created on its policies.
		var pg client.Object = &v1alpha1.PodGroup{}
		other := &unstructured.Unstructured{}
		if s.dialect != "" {
			other.SetAPIVersion(s.dialect)
			other.SetKind("PodGroup")
			pg = other
		}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: trainNamespace, Name: s.Gang}, pg); err == nil {
			for _, ref := range pg.GetOwnerReferences() {
				s.Owner = ref.Kind + "/" + ref.Name
			}
			if s.dialect != "" {
				n, _, _ := unstructured.NestedInt64(other.Object, "spec", "minMember")
				s.GangSize = int(n)
			}
		}
		steps[name] = s
	}
	return steps, nil
}
