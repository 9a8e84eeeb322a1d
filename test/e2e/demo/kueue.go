package demo

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/yaml"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/test/util/testenv"
)

// Kueue's side of the demo: Kueue v0.17.0's own controller-manager (built in
// hack/tools/kueue) runs as a local process beside KubeNexus, with its CRDs, its
// webhooks for Jobs and its own kinds and the conversion webhook of its deprecated
// v1beta1 API, all reached by URL.
const (
	kueueNamespace = "kueue-system"
	// KueueAdmissionCheck is the AdmissionCheck the chart creates
	// (kueue.admissionCheck.enabled).
	KueueAdmissionCheck = "kubenexus-placement"
	// kueueMetricsCerts is where Kueue reads its metrics certificate when it
	// does not manage certificates itself; the path is fixed in its main.
	kueueMetricsCerts = "/etc/kueue/metrics/certs"
)

// kueueCRDFiles are the paths of Kueue's CRDs.
func kueueCRDFiles() ([]string, error) {
	dir, err := testenv.KueueCRDs()
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "kueue.x-k8s.io_*.yaml"))
	if err == nil && len(files) == 0 {
		err = fmt.Errorf("no CRDs in %s", dir)
	}
	return files, err
}

// StartKueue runs Kueue's controller-manager with the demo's serving certificate and
// registers its Job, Workload and queue webhooks by URL. Up calls it unless
// Options.KueueLater is set.
func (c *Cluster) StartKueue(ctx context.Context) error { return c.startKueue(ctx, "") }

// startKueue is StartKueue with more of Kueue's Configuration (top-level YAML keys).
func (c *Cluster) startKueue(ctx context.Context, moreConfig string) error {
	certDir, caPEM := c.certDir, c.caPEM
	if err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kueueNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	for _, f := range []string{"tls.crt", "tls.key"} {
		if err := ensureFile(filepath.Join(kueueMetricsCerts, f), filepath.Join(certDir, f)); err != nil {
			return fmt.Errorf("copying the metrics certificate Kueue reads from %s: %w", kueueMetricsCerts, err)
		}
	}
	ports, err := testenv.FreePorts(3)
	if err != nil {
		return err
	}
	webhookPort, probePort, metricsPort := ports[0], ports[1], ports[2]
	// A Workload whose admission check said Retry is requeued when the check says
	// (its requeueAfterSeconds: KubeNexus's check sets it).
	config := fmt.Sprintf(`apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: %s
manageJobsWithoutQueueName: false
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
health:
  healthProbeBindAddress: 127.0.0.1:%d
metrics:
  bindAddress: 127.0.0.1:%d
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
integrations:
  frameworks: ["batch/job"]
%s`, kueueNamespace, probePort, metricsPort, webhookPort, certDir, moreConfig)
	path := filepath.Join(c.opts.Dir, "kueue-config.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		return err
	}
	if err := c.kueueConversion(ctx, webhookPort, caPEM); err != nil {
		return err
	}
	c.logf("starting Kueue v0.17.0's controller-manager (local process, webhooks on 127.0.0.1:%d)", webhookPort)
	if err := c.startController(ctx, "kueue", probePort, "--config="+path, "--feature-gates=VisibilityOnDemand=false", "--zap-log-level=2"); err != nil {
		return err
	}
	mwc, vwc, err := kueueWebhooks(webhookPort, caPEM)
	if err != nil {
		return err
	}
	return c.registerWebhooks(ctx, "Kueue", mwc, vwc)
}

// startController runs another system's controller (bin/k8s/name) as a local process
// with the demo's kubeconfig and waits until its /readyz on probePort answers.
func (c *Cluster) startController(ctx context.Context, name string, probePort int, args ...string) error {
	env := append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
	if err := c.startEnv(name, env, filepath.Join(c.opts.Bin, "k8s", name), args...); err != nil {
		return err
	}
	if err := waitFor(ctx, 2*time.Minute, func() error { return httpOK(fmt.Sprintf("http://127.0.0.1:%d/readyz", probePort)) }); err != nil {
		return fmt.Errorf("waiting for %s to become ready (see %s): %w", name, c.logPath(name), err)
	}
	return nil
}

// registerAllWebhooks registers every webhook of a controller's manifest (manifest
// returns its path) with the API server, pointed at the local process on port.
func (c *Cluster) registerAllWebhooks(ctx context.Context, who, name string, manifest func() (string, error), port int) error {
	path, err := manifest()
	if err != nil {
		return err
	}
	mwc, vwc, err := webhooksByURL(path, name, port, c.caPEM, nil)
	if err != nil {
		return err
	}
	return c.registerWebhooks(ctx, who, mwc, vwc)
}

// webhookTMPDIR is a TMPDIR under dir holding the demo's serving certificate where
// controller-runtime's webhook server looks by default
// ($TMPDIR/k8s-webhook-server/serving-certs), for a controller that cannot be told
// another directory.
func (c *Cluster) webhookTMPDIR(dir string) (string, error) {
	tmp := filepath.Join(dir, "tmp")
	servingCerts := filepath.Join(tmp, "k8s-webhook-server", "serving-certs")
	if err := os.MkdirAll(servingCerts, 0o700); err != nil {
		return "", err
	}
	for _, f := range []string{"tls.crt", "tls.key"} {
		if err := copyFile(filepath.Join(c.certDir, f), filepath.Join(servingCerts, f)); err != nil {
			return "", err
		}
	}
	return tmp, nil
}

// registerWebhooks creates a controller's webhook configurations (webhooksByURL).
func (c *Cluster) registerWebhooks(ctx context.Context, who string, mwc *admissionregistrationv1.MutatingWebhookConfiguration, vwc *admissionregistrationv1.ValidatingWebhookConfiguration) error {
	if mwc != nil {
		if err := c.Client.Create(ctx, mwc); err != nil {
			return fmt.Errorf("registering %s's mutating webhooks: %w", who, err)
		}
	}
	if vwc != nil {
		if err := c.Client.Create(ctx, vwc); err != nil {
			return fmt.Errorf("registering %s's validating webhooks: %w", who, err)
		}
	}
	return nil
}

// kueueConversion points the CRDs whose versions Kueue converts (the conversion
// patches its own kustomization applies) at the conversion webhook of the local
// process: their v1beta1 objects are converted by Kueue, not by renaming.
func (c *Cluster) kueueConversion(ctx context.Context, port int, caPEM []byte) error {
	crds, err := testenv.KueueCRDs()
	if err != nil {
		return err
	}
	base := filepath.Join(crds, "..")
	data, err := os.ReadFile(filepath.Join(base, "kustomization.yaml"))
	if err != nil {
		return err
	}
	var kust struct {
		Patches []struct{ Path string } `json:"patches"`
	}
	if err := yaml.Unmarshal(data, &kust); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(base, "kustomization.yaml"), err)
	}
	url := fmt.Sprintf("https://127.0.0.1:%d/convert", port)
	n := 0
	for _, p := range kust.Patches {
		if !strings.Contains(p.Path, "webhook_in_") {
			continue
		}
		patch, err := os.ReadFile(filepath.Join(base, p.Path))
		if err != nil {
			return err
		}
		var head struct{ Metadata struct{ Name string } }
		if err := yaml.Unmarshal(patch, &head); err != nil || head.Metadata.Name == "" {
			return fmt.Errorf("%s: no CRD name (%v)", p.Path, err)
		}
		// The API server writes the CRD's status too: read, change and write again on a
		// conflict.
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Client.Get(ctx, client.ObjectKey{Name: head.Metadata.Name}, crd); err != nil {
				return err
			}
			crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
				Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{
					ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: caPEM},
					ConversionReviewVersions: []string{"v1"},
				},
			}
			return c.Client.Update(ctx, crd)
		}); err != nil {
			return fmt.Errorf("pointing Kueue's CRD %s at its conversion webhook: %w", head.Metadata.Name, err)
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("%s lists no conversion patch", filepath.Join(base, "kustomization.yaml"))
	}
	return nil
}

// kueueResources are the kinds whose Kueue webhooks the demo registers: Jobs (Kueue
// suspends those that name a queue) and Kueue's own kinds.
var kueueResources = []string{"jobs", "workloads", "clusterqueues", "localqueues", "resourceflavors", "cohorts", "admissionchecks", "topologies"}

// kueueWebhooks are Kueue's own webhook configurations (config/components/webhook of
// its module) for kueueResources, pointed at the local process by URL.
func kueueWebhooks(port int, caPEM []byte) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	crds, err := testenv.KueueCRDs()
	if err != nil {
		return nil, nil, err
	}
	wanted := func(rules []admissionregistrationv1.RuleWithOperations) bool {
		for _, r := range rules {
			for _, res := range r.Resources {
				if slices.Contains(kueueResources, strings.TrimSuffix(res, "/status")) && (res != "jobs" || slices.Contains(r.APIGroups, "batch")) {
					return true
				}
			}
		}
		return false
	}
	return webhooksByURL(filepath.Join(crds, "..", "..", "webhook", "manifests.yaml"), "kueue", port, caPEM, wanted)
}

// webhooksByURL reads a controller's webhook configurations (a kubebuilder
// manifests.yaml) and keeps the webhooks wanted picks (nil: all), pointed at the
// local process on port by URL, in configurations named name-mutating and
// name-validating (nil when the manifest has no webhook of that kind).
func webhooksByURL(manifest, name string, port int, caPEM []byte, wanted func([]admissionregistrationv1.RuleWithOperations) bool) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	data, err := os.ReadFile(manifest)
	if err != nil {
		return nil, nil, err
	}
	if wanted == nil {
		wanted = func([]admissionregistrationv1.RuleWithOperations) bool { return true }
	}
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name + "-mutating"}}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name + "-validating"}}
	point := func(cc *admissionregistrationv1.WebhookClientConfig) bool {
		if cc.Service == nil || cc.Service.Path == nil {
			return false
		}
		url := fmt.Sprintf("https://127.0.0.1:%d%s", port, *cc.Service.Path)
		*cc = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caPEM}
		return true
	}
	for _, doc := range strings.Split(string(data), "\n---") {
		var head struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", manifest, err)
		}
		switch head.Kind {
		case "MutatingWebhookConfiguration":
			src := &admissionregistrationv1.MutatingWebhookConfiguration{}
			if err := yaml.Unmarshal([]byte(doc), src); err != nil {
				return nil, nil, err
			}
			for _, wh := range src.Webhooks {
				if wanted(wh.Rules) && point(&wh.ClientConfig) {
					mwc.Webhooks = append(mwc.Webhooks, wh)
				}
			}
		case "ValidatingWebhookConfiguration":
			src := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			if err := yaml.Unmarshal([]byte(doc), src); err != nil {
				return nil, nil, err
			}
			for _, wh := range src.Webhooks {
				if wanted(wh.Rules) && point(&wh.ClientConfig) {
					vwc.Webhooks = append(vwc.Webhooks, wh)
				}
			}
		}
	}
	if len(mwc.Webhooks) == 0 && len(vwc.Webhooks) == 0 {
		return nil, nil, fmt.Errorf("%s: no webhook of those wanted", manifest)
	}
	if len(mwc.Webhooks) == 0 {
		mwc = nil // Kubeflow Trainer serves validating webhooks only
	}
	if len(vwc.Webhooks) == 0 {
		vwc = nil
	}
	return mwc, vwc, nil
}

// KueueReport is what the Kueue scenario saw.
type KueueReport struct {
	// Without the check: whether Kueue admitted the 8 × 8-GPU Job, how many of its
	// pods were created and how many were bound after a while.
	PlainAdmitted          bool
	PlainPods, PlainBound  int
	PlainPendingMessage    string
	CheckedMessage         string
	CheckedPodsWhileHeld   int
	CheckedAdmittedAfter   time.Duration
	CheckedBound           int
	CheckedComplete        bool
	CheckedFinalCheckState string
}

const (
	kueueNodes    = 16
	kueuePoolKey  = "kubenexus.io/pool"
	kueuePool     = "kueue-demo"
	kueueTaintKey = "kubenexus.io/kueue-demo"
	// Namespaces of the two LocalQueues: one ClusterQueue without the check, one
	// with it.
	nsKueuePlain   = "kueue-plain"
	nsKueueChecked = "kueue-checked"
)

// RunKueueScenario shows what Kueue does with an 8 × 8-GPU Job on 64 free GPUs in
// halves, without and with KubeNexus's placement-feasibility check: sixteen tainted
// 8-GPU nodes (a flavor of their own, so the rest of the demo is untouched), each
// with 4 GPUs held by a pod outside Kueue, and a ClusterQueue of 64 GPUs.
func (c *Cluster) RunKueueScenario(ctx context.Context) (*KueueReport, error) {
	c.logf("Kueue: sixteen 8-GPU nodes with 4 GPUs held on each (64 free, in halves); ClusterQueues of 64 GPUs without and with the %s check", KueueAdmissionCheck)
	if err := c.kueueFleet(ctx); err != nil {
		return nil, err
	}
	if err := c.kueueQueues(ctx); err != nil {
		return nil, err
	}
	r := &KueueReport{}

	// Without the check: Kueue admits by quota, the pods are created and wait.
	if err := c.Client.Create(ctx, kueueJob(nsKueuePlain)); err != nil {
		return nil, err
	}
	err := waitFor(ctx, 2*time.Minute, func() error {
		wl, err := c.workloadOf(ctx, nsKueuePlain)
		if err != nil {
			return err
		}
		r.PlainAdmitted = apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadAdmitted)
		pods, err := c.kueuePods(ctx, nsKueuePlain)
		if err != nil {
			return err
		}
		r.PlainPods, r.PlainBound = len(pods), 0
		for _, p := range pods {
			if p.Spec.NodeName != "" {
				r.PlainBound++
			}
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse {
					r.PlainPendingMessage = cond.Message
				}
			}
		}
		if !r.PlainAdmitted || r.PlainPods < 8 || r.PlainPendingMessage == "" {
			return fmt.Errorf("without the check: admitted %v, %d pods, scheduler message %q", r.PlainAdmitted, r.PlainPods, r.PlainPendingMessage)
		}
		return nil
	})
	if err != nil {
		return r, err
	}
	// They stay unbound: no node has 8 GPUs free.
	time.Sleep(3 * time.Second)
	pods, err := c.kueuePods(ctx, nsKueuePlain)
	if err != nil {
		return r, err
	}
	r.PlainBound = 0
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			r.PlainBound++
		}
	}
	if err := c.Client.Delete(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "pretrain", Namespace: nsKueuePlain}}, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		return r, err
	}

	// With the check: the Workload is held with the check's message; no pod exists.
	if err := c.Client.Create(ctx, kueueJob(nsKueueChecked)); err != nil {
		return r, err
	}
	if err := waitFor(ctx, 2*time.Minute, func() error {
		wl, err := c.workloadOf(ctx, nsKueueChecked)
		if err != nil {
			return err
		}
		for _, st := range wl.Status.AdmissionChecks {
			if string(st.Name) == KueueAdmissionCheck && st.State == kueue.CheckStateRetry {
				r.CheckedMessage = st.Message
			}
		}
		if r.CheckedMessage == "" {
			return fmt.Errorf("with the check: no Retry yet (checks %+v)", wl.Status.AdmissionChecks)
		}
		return nil
	}); err != nil {
		return r, err
	}
	time.Sleep(3 * time.Second)
	held, err := c.kueuePods(ctx, nsKueueChecked)
	if err != nil {
		return r, err
	}
	r.CheckedPodsWhileHeld = len(held)

	// The other jobs finish: their GPUs free up, Kueue retries, the check passes and
	// the Job runs all its pods at once.
	c.logf("Kueue: the pods holding half of each node finish")
	freed := time.Now()
	for i := range kueueNodes {
		if err := c.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("holder-%d", i), Namespace: nsKueuePlain}}, client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
			return r, err
		}
	}
	err = waitFor(ctx, 3*time.Minute, func() error {
		wl, err := c.workloadOf(ctx, nsKueueChecked)
		if err != nil {
			return err
		}
		for _, st := range wl.Status.AdmissionChecks {
			if string(st.Name) == KueueAdmissionCheck {
				r.CheckedFinalCheckState = string(st.State)
			}
		}
		if r.CheckedAdmittedAfter == 0 && apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadAdmitted) {
			r.CheckedAdmittedAfter = time.Since(freed)
		}
		pods, err := c.kueuePods(ctx, nsKueueChecked)
		if err != nil {
			return err
		}
		r.CheckedBound = 0
		for _, p := range pods {
			if p.Spec.NodeName != "" {
				r.CheckedBound++
			}
		}
		job := &batchv1.Job{}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: nsKueueChecked, Name: "pretrain"}, job); err != nil {
			return err
		}
		r.CheckedComplete = jobComplete(job)
		if !r.CheckedComplete {
			return fmt.Errorf("with the check, after capacity freed: check %s, admitted after %s, %d pods bound, Job not complete", r.CheckedFinalCheckState, r.CheckedAdmittedAfter, r.CheckedBound)
		}
		return nil
	})
	return r, err
}

// kueueFleet creates the scenario's nodes and the pods that hold half of each.
func (c *Cluster) kueueFleet(ctx context.Context) error {
	for _, ns := range []string{nsKueuePlain, nsKueueChecked} {
		if err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	labels := make([]map[string]string, kueueNodes)
	for i := range labels {
		labels[i] = map[string]string{kueuePoolKey: kueuePool, v1alpha1.LabelRack: "rack-kq"}
	}
	if err := c.taintedPool(ctx, "kq", labels, kueueTaintKey); err != nil {
		return err
	}
	for i := range kueueNodes {
		if err := c.holdGPUs(ctx, nsKueuePlain, fmt.Sprintf("holder-%d", i), fmt.Sprintf("kq-%d", i), kueueTaintKey, "4"); err != nil {
			return err
		}
	}
	return nil
}

// holdGPUs binds a pod outside Kueue (name, in ns) to node, tolerating the pool's
// taint, that holds gpus GPUs.
func (c *Cluster) holdGPUs(ctx context.Context, ns, name, node, taintKey, gpus string) error {
	rl := corev1.ResourceList{v1alpha1.ResourceNvidiaGPU: resource.MustParse(gpus)}
	return c.Client.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			NodeName:    node,
			Tolerations: []corev1.Toleration{{Key: taintKey, Operator: corev1.TolerationOpExists}},
			Containers:  []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{Requests: rl, Limits: rl}}},
		},
	})
}

// taintedPool creates one 8-GPU node (96 CPUs, 1 TiB) named prefix-i per entry of
// labels, with those labels and a NoSchedule taint of key taintKey that keeps the rest
// of the demo off them, and waits until kwok reports them Ready.
func (c *Cluster) taintedPool(ctx context.Context, prefix string, labels []map[string]string, taintKey string) error {
	return c.pool(ctx, prefix, labels, taintKey, corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("96"), corev1.ResourceMemory: resource.MustParse("1Ti"),
		corev1.ResourcePods: resource.MustParse("110"), v1alpha1.ResourceNvidiaGPU: resource.MustParse("8"),
	})
}

// pool is taintedPool's nodes with capacity res.
func (c *Cluster) pool(ctx context.Context, prefix string, labels []map[string]string, taintKey string, res corev1.ResourceList) error {
	taint := corev1.Taint{Key: taintKey, Value: "true", Effect: corev1.TaintEffectNoSchedule}
	names := make([]string, len(labels))
	for i, l := range labels {
		names[i] = fmt.Sprintf("%s-%d", prefix, i)
		nodeLabels := map[string]string{"kubernetes.io/hostname": names[i], "type": "kwok"}
		maps.Copy(nodeLabels, l)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: names[i], Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}, Labels: nodeLabels},
			Spec:       corev1.NodeSpec{Taints: []corev1.Taint{taint}},
			Status:     corev1.NodeStatus{Capacity: res, Allocatable: res.DeepCopy()},
		}
		if err := c.Client.Create(ctx, node); err != nil {
			return err
		}
	}
	// kwok reports them Ready; lift the not-ready taint as the node lifecycle
	// controller would, keeping the pool's own.
	return waitFor(ctx, 2*time.Minute, func() error {
		for _, name := range names {
			n := &corev1.Node{}
			if err := c.Client.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
				return err
			}
			if !ready(n) {
				return fmt.Errorf("node %s is not Ready yet", n.Name)
			}
			if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != taintKey {
				n.Spec.Taints = []corev1.Taint{taint}
				if err := c.Client.Update(ctx, n); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// kueueQueues creates the flavor of the scenario's nodes and two ClusterQueues of
// 64 GPUs, the second requiring the placement check, each with a LocalQueue.
func (c *Cluster) kueueQueues(ctx context.Context) error {
	flavor := &kueue.ResourceFlavor{
		ObjectMeta: metav1.ObjectMeta{Name: kueuePool},
		Spec: kueue.ResourceFlavorSpec{
			NodeLabels:  map[string]string{kueuePoolKey: kueuePool},
			Tolerations: []corev1.Toleration{{Key: kueueTaintKey, Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}},
		},
	}
	if err := c.Client.Create(ctx, flavor); err != nil {
		return err
	}
	for _, q := range []struct {
		name, ns string
		checks   []kueue.AdmissionCheckReference
	}{{"gpu-plain", nsKueuePlain, nil}, {"gpu-checked", nsKueueChecked, []kueue.AdmissionCheckReference{KueueAdmissionCheck}}} {
		if err := c.gpuQueue(ctx, q.name, q.ns, kueuePool, q.checks); err != nil {
			return err
		}
	}
	return c.queuesActive(ctx, "gpu-plain", "gpu-checked")
}

// gpuQueue creates a ClusterQueue for namespace ns of 64 GPUs (96 CPUs and 1 TiB a
// node's worth for each 8) of flavor, with the admission checks, and its LocalQueue
// "gpu" in ns.
func (c *Cluster) gpuQueue(ctx context.Context, name, ns, flavor string, checks []kueue.AdmissionCheckReference) error {
	cq := &kueue.ClusterQueue{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kueue.ClusterQueueSpec{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			ResourceGroups: []kueue.ResourceGroup{{
				CoveredResources: []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, v1alpha1.ResourceNvidiaGPU},
				Flavors: []kueue.FlavorQuotas{{Name: kueue.ResourceFlavorReference(flavor), Resources: []kueue.ResourceQuota{
					{Name: corev1.ResourceCPU, NominalQuota: resource.MustParse("768")},
					{Name: corev1.ResourceMemory, NominalQuota: resource.MustParse("8Ti")},
					{Name: v1alpha1.ResourceNvidiaGPU, NominalQuota: resource.MustParse("64")},
				}}},
			}},
			AdmissionChecksStrategy: checksStrategy(checks),
		},
	}
	if err := c.Client.Create(ctx, cq); err != nil {
		return err
	}
	lq := &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Name: "gpu", Namespace: ns}, Spec: kueue.LocalQueueSpec{ClusterQueue: kueue.ClusterQueueReference(name)}}
	return c.Client.Create(ctx, lq)
}

// queuesActive waits until the ClusterQueues are active: Kueue admits nothing
// through one before (through one with a check, before the manager has marked its
// check Active).
func (c *Cluster) queuesActive(ctx context.Context, names ...string) error {
	return waitFor(ctx, time.Minute, func() error {
		for _, name := range names {
			cq := &kueue.ClusterQueue{}
			if err := c.Client.Get(ctx, client.ObjectKey{Name: name}, cq); err != nil {
				return err
			}
			if !apimeta.IsStatusConditionTrue(cq.Status.Conditions, kueue.ClusterQueueActive) {
				return fmt.Errorf("ClusterQueue %s is not active: %+v", name, cq.Status.Conditions)
			}
		}
		return nil
	})
}

// kueueJob is an indexed Job of eight 8-GPU pods for KubeNexus, queued in ns.
func kueueJob(ns string) *batchv1.Job {
	gpus := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("64Gi"), v1alpha1.ResourceNvidiaGPU: resource.MustParse("8")}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "pretrain", Namespace: ns, Labels: map[string]string{"kueue.x-k8s.io/queue-name": "gpu"}},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To[int32](8), Completions: ptr.To[int32](8), CompletionMode: ptr.To(batchv1.IndexedCompletion),
			Suspend: ptr.To(true),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				SchedulerName: "kubenexus-scheduler",
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "trainer", Image: "nvcr.io/nvidia/pytorch:24.05-py3", Resources: corev1.ResourceRequirements{Requests: gpus, Limits: gpus}}},
			}},
		},
	}
}

// workloadOf returns the Workload Kueue made for the Job in ns.
func (c *Cluster) workloadOf(ctx context.Context, ns string) (*kueue.Workload, error) {
	var list kueue.WorkloadList
	if err := c.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	for i := range list.Items {
		for _, ref := range list.Items[i].OwnerReferences {
			if ref.Kind == "Job" && ref.Name == "pretrain" {
				return &list.Items[i], nil
			}
		}
	}
	return nil, fmt.Errorf("no Workload for Job %s/pretrain yet", ns)
}

func (c *Cluster) kueuePods(ctx context.Context, ns string) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := c.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"batch.kubernetes.io/job-name": "pretrain"}); err != nil {
		return nil, err
	}
	return pods.Items, nil
}

// PrintKueue writes what the Kueue scenario saw.
func PrintKueue(w io.Writer, r *KueueReport) {
	if r == nil {
		return
	}
	fmt.Fprintln(w, "Kueue: an 8 × 8-GPU Job, 64 GPUs of quota, 64 GPUs free in halves")
	fmt.Fprintf(w, "  without the check: Workload admitted %v; %d pods created, %d bound; the scheduler says: %s\n", r.PlainAdmitted, r.PlainPods, r.PlainBound, r.PlainPendingMessage)
	fmt.Fprintf(w, "  with %s: held, %d pods created; the check says: %s\n", KueueAdmissionCheck, r.CheckedPodsWhileHeld, r.CheckedMessage)
	fmt.Fprintf(w, "  once the holders finished: check %s, admitted %s later, %d/8 pods bound, Job complete %v\n", r.CheckedFinalCheckState, r.CheckedAdmittedAfter.Round(100*time.Millisecond), r.CheckedBound, r.CheckedComplete)
}

// ReleaseKueueCheck takes the placement check off the scenarios' ClusterQueues:
// Kueue keeps an AdmissionCheck (its finalizer) while a ClusterQueue names it, so
// uninstalling the chart waits for that.
func (c *Cluster) ReleaseKueueCheck(ctx context.Context) error {
	for _, name := range []string{"gpu-checked", kueueTASQueue} {
		// Kueue writes the ClusterQueue's status meanwhile: write again on a conflict.
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cq := &kueue.ClusterQueue{}
			if err := c.Client.Get(ctx, client.ObjectKey{Name: name}, cq); err != nil {
				return client.IgnoreNotFound(err)
			}
			cq.Spec.AdmissionChecksStrategy = nil
			return c.Client.Update(ctx, cq)
		}); err != nil {
			return err
		}
	}
	return nil
}

// checksStrategy runs each named AdmissionCheck for every flavor (nil for none):
// v1beta2's form of v1beta1's spec.admissionChecks.
func checksStrategy(checks []kueue.AdmissionCheckReference) *kueue.AdmissionChecksStrategy {
	if len(checks) == 0 {
		return nil
	}
	s := &kueue.AdmissionChecksStrategy{}
	for _, name := range checks {
		s.AdmissionChecks = append(s.AdmissionChecks, kueue.AdmissionCheckStrategyRule{Name: name})
	}
	return s
}
