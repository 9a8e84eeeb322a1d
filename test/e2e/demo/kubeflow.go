package demo

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/test/util/testenv"
)

// Kubeflow's training-operator v1.8.1 runs unmodified, as two local processes, each
// scoped with --namespace to one team namespace:
//
//   - in NSML, its default mode (no gang scheduler): the pods it creates carry no
//     scheduler or gang; KubeNexus's pod webhook sends them to kubenexus-scheduler
//     and gangs them, sized from the job it reads;
//   - in NSResearch, --gang-scheduler-name=kubenexus-scheduler: the operator creates a
//     scheduler-plugins PodGroup (scheduling.x-k8s.io/v1alpha1) per job and labels
//     its pods scheduling.x-k8s.io/pod-group, as it would for scheduler-plugins;
//   - in NSHPC, --gang-scheduler-name=volcano: the operator creates a Volcano PodGroup
//     (scheduling.volcano.sh/v1beta1) per job, creates no pod until the PodGroup is
//     Inqueue, and names the volcano scheduler on its pods; KubeNexus's Volcano
//     compatibility (spec.volcano.enabled) admits the PodGroup and schedules the pods.
const (
	// NSResearch is the team namespace of the training-operator in scheduler-plugins mode.
	NSResearch = "team-research" // silver
	// NSHPC is the team namespace of the training-operator in Volcano mode.
	NSHPC = "team-hpc" // silver
	// TrainingOperatorNamespace is where the operators keep their webhook Secrets
	// (the namespace the operator would run in: MY_POD_NAMESPACE, default kubeflow).
	TrainingOperatorNamespace = "kubeflow"
)

// trainingOperators are the three instances.
var trainingOperators = []struct {
	name, namespace, gangScheduler string
}{
	{name: "training-operator", namespace: NSML},
	{name: "training-operator-scheduler-plugins", namespace: NSResearch, gangScheduler: "kubenexus-scheduler"},
	{name: "training-operator-volcano", namespace: NSHPC, gangScheduler: "volcano"},
}

// trainingOperatorSchemes are the job kinds the operators run. v1.8.1 serves a
// validating webhook for PyTorchJob and none for MPIJob.
var trainingOperatorSchemes = []string{"pytorchjob", "mpijob"}

// startTrainingOperators runs both instances and registers their validating
// webhooks (URL mode, with the demo's 127.0.0.1 certificate).
//
// v1.8.1 manages its webhook certificate with cert-controller: it fills a Secret
// that must exist (<name>-webhook-cert in TrainingOperatorNamespace here), injects
// the CA only into the ValidatingWebhookConfiguration it names
// (validator.training-operator.kubeflow.org, which does not exist here, so the
// configurations below keep the demo's CA), and waits until
// /tmp/k8s-webhook-server/serving-certs/tls.crt exists (a path compiled into the
// operator, where Kubernetes would mount the Secret) before it starts its
// controllers. Its webhook server reads the certificate from
// $TMPDIR/k8s-webhook-server/serving-certs, so each instance gets its own TMPDIR
// holding the demo's certificate; the file in /tmp is only created when missing.
func (c *Cluster) startTrainingOperators(ctx context.Context, certDir string, caPEM []byte) error {
	crds, err := testenv.TrainingOperatorCRDs()
	if err != nil {
		return err
	}
	webhookManifest := filepath.Join(filepath.Dir(crds[0]), "..", "webhook", "manifests.yaml")
	if err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: TrainingOperatorNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if err := ensureFile("/tmp/k8s-webhook-server/serving-certs/tls.crt", filepath.Join(certDir, "tls.crt")); err != nil {
		return fmt.Errorf("training-operator waits for /tmp/k8s-webhook-server/serving-certs/tls.crt: %w", err)
	}
	bin := filepath.Join(c.opts.Bin, "k8s", "training-operator")
	for _, op := range trainingOperators {
		secret := op.name + "-webhook-cert"
		if err := c.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: TrainingOperatorNamespace, Name: secret}}); err != nil {
			return err
		}
		tmp, err := c.webhookTMPDIR(filepath.Join(c.opts.Dir, op.name))
		if err != nil {
			return err
		}
		ports, err := testenv.FreePorts(2)
		if err != nil {
			return err
		}
		webhookPort, probePort := ports[0], ports[1]
		args := []string{
			"--kubeconfig=" + c.Kubeconfig,
			"--namespace=" + op.namespace,
			"--leader-elect=false",
			"--metrics-bind-address=0",
			fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", probePort),
			fmt.Sprintf("--webhook-server-port=%d", webhookPort),
			"--webhook-secret-name=" + secret,
			"--zap-log-level=info",
		}
		for _, s := range trainingOperatorSchemes {
			args = append(args, "--enable-scheme="+s)
		}
		mode := "default mode: KubeNexus gangs its pods"
		if op.gangScheduler != "" {
			args = append(args, "--gang-scheduler-name="+op.gangScheduler)
			mode = "--gang-scheduler-name=" + op.gangScheduler + ": its own PodGroups"
		}
		c.logf("starting Kubeflow training-operator v1.8.1 for namespace %s (%s)", op.namespace, mode)
		env := append(os.Environ(), "TMPDIR="+tmp, "MY_POD_NAMESPACE="+TrainingOperatorNamespace)
		if err := c.startEnv(op.name, env, bin, args...); err != nil {
			return err
		}
		if err := waitFor(ctx, 2*time.Minute, func() error { return httpOK(fmt.Sprintf("http://127.0.0.1:%d/readyz", probePort)) }); err != nil {
			return fmt.Errorf("%s never became ready (see %s): %w", op.name, c.logPath(op.name), err)
		}
		vwc, err := trainingOperatorWebhooks(webhookManifest, op.name, op.namespace, webhookPort, caPEM)
		if err != nil {
			return err
		}
		if err := c.Client.Create(ctx, vwc); err != nil {
			return fmt.Errorf("registering %s's validating webhooks: %w", op.name, err)
		}
	}
	return nil
}

// trainingOperatorWebhooks is the operator's own ValidatingWebhookConfiguration
// (manifests/base/webhook of its module) for the enabled job kinds, pointed at the
// local process by URL and scoped to the namespace the instance watches.
func trainingOperatorWebhooks(manifest, name, namespace string, port int, caPEM []byte) (*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	data, err := os.ReadFile(manifest)
	if err != nil {
		return nil, err
	}
	src := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := yaml.Unmarshal(data, src); err != nil {
		return nil, fmt.Errorf("%s: %w", manifest, err)
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name + "-" + namespace}}
	for _, wh := range src.Webhooks {
		enabled := false
		for _, r := range wh.Rules {
			for _, s := range trainingOperatorSchemes {
				enabled = enabled || slices.Contains(r.Resources, s+"s")
			}
		}
		if !enabled || wh.ClientConfig.Service == nil || wh.ClientConfig.Service.Path == nil {
			continue
		}
		url := fmt.Sprintf("https://127.0.0.1:%d%s", port, *wh.ClientConfig.Service.Path)
		wh.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caPEM}
		wh.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: namespace}}
		vwc.Webhooks = append(vwc.Webhooks, wh)
	}
	if len(vwc.Webhooks) == 0 {
		return nil, fmt.Errorf("%s has no webhook for %v", manifest, trainingOperatorSchemes)
	}
	return vwc, nil
}

// ensureFile creates path with the content of from unless path exists.
func ensureFile(path, from string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil // another run created it meanwhile
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o600)
}

// kubeflowJobState is the type of the training-operator job's last true condition
// (Created, Running, Restarting, Succeeded, Failed; "" before it has one).
func kubeflowJobState(conditions []any) string {
	state := ""
	for _, c := range conditions {
		cm, _ := c.(map[string]any)
		if cm["status"] == string(corev1.ConditionTrue) {
			state, _ = cm["type"].(string)
		}
	}
	return state
}

// foreignPodGroupPhase reads the phase of another scheduler's PodGroup (group is
// scheduling.x-k8s.io or scheduling.volcano.sh); found is false when it is absent.
func (c *Cluster) foreignPodGroupPhase(ctx context.Context, group, ns, name string) (string, bool, error) {
	u := v1alpha1.NewSigsPodGroup()
	if group == v1alpha1.VolcanoPodGroupGroup {
		u = v1alpha1.NewVolcanoPodGroup()
	}
	if err := c.Client.Get(ctx, keyOf(ns, name), u); err != nil {
		if apierrors.IsNotFound(err) {
			return "", false, nil
		}
		return "", false, err
	}
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	return phase, true, nil
}
