package demo

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kube-nexus/kubenexus/controllers/kubenexusconfig/render"
	"github.com/kube-nexus/kubenexus/test/util/testenv"
)

// The names the chart gives the objects a production install is reached through.
const (
	ManagerDeployment = "kubenexus-manager"
	WebhookService    = "kubenexus-webhook-service"
	webhookCertSecret = "kubenexus-webhook-server-cert"
)

// UpProduction starts a control plane on which KubeNexus is installed as on a real
// cluster, with no value set: `helm install` of the unmodified chart (helm is the
// binary to use, Helm v3 or v4), its webhooks reached through the
// kubenexus-webhook-service Service, the manager's own certificate rotator, the
// KubeNexusConfig `default` from the chart. There are no kubelets, so the manager
// and the scheduler run here as processes standing in for their pods, each with the
// arguments of the Deployment the chart or the operator wrote:
//   - kube-apiserver runs with --enable-aggregator-routing, which resolves a
//     webhook Service through its EndpointSlices, and an EndpointSlice points the
//     Service at the local manager on this machine's non-loopback address (the API
//     server refuses loopback endpoints);
//   - the Secret the certificate rotator writes is copied into the manager's
//     certificate directory, as the kubelet does for the chart's secret volume;
//   - the scheduler's configuration is the ConfigMap its Deployment mounts;
//   - each acts as the ServiceAccount its Deployment names (a token from the API
//     server), so the chart's RBAC is what they may do.
//
// A failed helm command returns its output in the error; the processes' output is in
// Dir/<name>.log.
func UpProduction(ctx context.Context, opts Options, helm string) (_ *Cluster, err error) {
	c := &Cluster{opts: opts, helm: helm}
	defer func() {
		if err != nil {
			c.Down()
		}
	}()
	ip, err := c.prepareDir()
	if err != nil {
		return nil, err
	}
	if err := c.startControlPlane(func(env *envtest.Environment) error {
		env.ControlPlane.GetAPIServer().Configure().Set("enable-aggregator-routing", "true")
		return nil
	}); err != nil {
		return nil, err
	}
	// The garbage collector, for what `helm uninstall` leaves to it.
	if err := c.startControllerManager(false); err != nil {
		return nil, err
	}
	c.logf("helm install kubenexus %s (no values set) with %s", c.Chart(), helm)
	if err := c.Helm("install", "kubenexus", c.Chart(), "--create-namespace"); err != nil {
		return nil, err
	}
	if err := c.startManagerFromDeployment(ctx, ip); err != nil {
		return nil, err
	}
	if err := c.RestartScheduler(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// prepareDir creates the cluster's directory and returns the machine's address
// (hostIP), where processes reached from elsewhere listen.
func (c *Cluster) prepareDir() (string, error) {
	if err := os.MkdirAll(c.opts.Dir, 0o755); err != nil {
		return "", err
	}
	return hostIP()
}

// hostIP is an IPv4 address of this machine that is not loopback.
func hostIP() (string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String(), nil
		}
	}
	return "", fmt.Errorf("no non-loopback IPv4 address on this machine: an EndpointSlice cannot point the webhook Service at the local manager")
}

// startManagerFromDeployment runs kubenexus-manager with the arguments and
// environment of the chart's Deployment, listening where the Service's
// EndpointSlice says, with the rotator's Secret mounted as the kubelet would.
func (c *Cluster) startManagerFromDeployment(ctx context.Context, ip string) error {
	dep := &appsv1.Deployment{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: ManagerDeployment}, dep); err != nil {
		return fmt.Errorf("the chart installed no manager Deployment: %w", err)
	}
	ctr := dep.Spec.Template.Spec.Containers[0]
	certDir := filepath.Join(c.opts.Dir, "manager-certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return err
	}
	ports, err := testenv.FreePorts(3)
	if err != nil {
		return err
	}
	webhookPort, probePort, metricsPort := ports[0], ports[1], ports[2]
	// The pod's own ports become free local ones; the rest is the Deployment's.
	var args []string
	for _, a := range ctr.Args {
		switch {
		case strings.HasPrefix(a, "--health-probe-bind-address="):
			a = fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", probePort)
		case strings.HasPrefix(a, "--metrics-bind-address="):
			a = fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", metricsPort)
		case strings.HasPrefix(a, "--webhook-cert-dir="):
			a = "--webhook-cert-dir=" + certDir
		}
		args = append(args, a)
	}
	// As the pod would, the manager acts as its ServiceAccount: the chart's RBAC is
	// what it may do.
	kubeconfig, err := c.serviceAccountKubeconfig(ctx, dep.Spec.Template.Spec.ServiceAccountName)
	if err != nil {
		return err
	}
	args = append(args, "--kubeconfig="+kubeconfig, fmt.Sprintf("--webhook-port=%d", webhookPort))
	env := os.Environ()
	for _, e := range ctr.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace" {
			env = append(env, e.Name+"="+Namespace)
		} else if e.ValueFrom == nil {
			env = append(env, e.Name+"="+e.Value)
		}
	}
	go c.mountSecret(ctx, webhookCertSecret, certDir)
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: Namespace, Name: WebhookService + "-local",
			Labels: map[string]string{discoveryv1.LabelServiceName: WebhookService},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("webhook"), Port: ptr.To(int32(webhookPort)), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	if err := c.Client.Create(ctx, slice); err != nil {
		return fmt.Errorf("pointing the webhook Service at %s:%d: %w", ip, webhookPort, err)
	}
	c.logf("starting kubenexus-manager with its Deployment's arguments (webhooks on %s:%d through Service %s)", ip, webhookPort, WebhookService)
	if err := c.startEnv("kubenexus-manager", env, filepath.Join(c.opts.Bin, "kubenexus-manager"), args...); err != nil {
		return err
	}
	if err := waitFor(ctx, 2*time.Minute, func() error { return httpOK(fmt.Sprintf("http://127.0.0.1:%d/readyz", probePort)) }); err != nil {
		return fmt.Errorf("kubenexus-manager never became ready (see %s): %w", c.logPath("kubenexus-manager"), err)
	}
	c.ManagerMetricsURL = fmt.Sprintf("https://127.0.0.1:%d/metrics", metricsPort)
	return nil
}

// Get fetches url (the certificate is not verified: the endpoints here serve
// self-signed ones), with token as a bearer token when not empty, and returns the
// status code and body.
func Get(url, token string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // local self-signed endpoints
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// serviceAccountKubeconfig writes a kubeconfig for ServiceAccount name of the
// KubeNexus namespace (a token for an hour, the API server's CA) and returns its path.
func (c *Cluster) serviceAccountKubeconfig(ctx context.Context, name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("the Deployment names no ServiceAccount")
	}
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return "", err
	}
	tr, err := cs.CoreV1().ServiceAccounts(Namespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("a token for ServiceAccount %s/%s (installed by the chart): %w", Namespace, name, err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: c.Config.Host, CertificateAuthorityData: c.Config.CAData}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: "local", AuthInfo: name, Namespace: Namespace}
	cfg.CurrentContext = name
	path := filepath.Join(c.opts.Dir, name+".kubeconfig")
	return path, clientcmd.WriteToFile(*cfg, path)
}

// mountSecret keeps dir holding the keys of Secret name, as the kubelet keeps a
// secret volume, until ctx is done.
func (c *Cluster) mountSecret(ctx context.Context, name, dir string) {
	var last map[string][]byte
	for ctx.Err() == nil {
		s := &corev1.Secret{}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: name}, s); err == nil && !sameData(s.Data, last) {
			for k, v := range s.Data {
				tmp := filepath.Join(dir, "."+k)
				if os.WriteFile(tmp, v, 0o600) == nil {
					_ = os.Rename(tmp, filepath.Join(dir, k))
				}
			}
			last = s.Data
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func sameData(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !bytes.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// RestartScheduler (re)starts kubenexus-scheduler as the pod the operator's
// Deployment describes now: its arguments, and the configuration of the ConfigMap
// it mounts. It returns once the Deployment's pod template has a configuration
// hash; a running stand-in is stopped first, as a rollout replaces the pod.
func (c *Cluster) RestartScheduler(ctx context.Context) error {
	if c.scheduler != nil {
		_ = c.scheduler.cmd.Process.Signal(os.Interrupt)
		c.scheduler.stop(time.After(10 * time.Second))
	}
	dep := &appsv1.Deployment{}
	if err := waitFor(ctx, time.Minute, func() error {
		return c.Client.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: render.Name}, dep)
	}); err != nil {
		return fmt.Errorf("the operator created no scheduler Deployment from the chart's KubeNexusConfig: %w", err)
	}
	cm := &corev1.ConfigMap{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: render.Name}, cm); err != nil {
		return fmt.Errorf("the scheduler Deployment's ConfigMap: %w", err)
	}
	// The scheduler acts as its ServiceAccount too (the chart's bindings).
	kubeconfig, err := c.serviceAccountKubeconfig(ctx, dep.Spec.Template.Spec.ServiceAccountName)
	if err != nil {
		return err
	}
	cfg, err := withKubeconfig([]byte(cm.Data[render.ConfigKey]), kubeconfig)
	if err != nil {
		return err
	}
	path := filepath.Join(c.opts.Dir, "scheduler-config.yaml")
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		return err
	}
	port, err := testenv.FreePort()
	if err != nil {
		return err
	}
	var args []string
	for _, a := range dep.Spec.Template.Spec.Containers[0].Args {
		if strings.HasPrefix(a, "--config=") {
			a = "--config=" + path
		}
		args = append(args, a)
	}
	// In its pod the scheduler authenticates and authorizes the requests of its
	// secure port (metrics) against the API server as its ServiceAccount, from the
	// in-cluster configuration; outside a pod that is given by these two flags.
	args = append(args, "--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", port),
		"--authentication-kubeconfig="+kubeconfig, "--authorization-kubeconfig="+kubeconfig)
	c.SchedulerMetricsURL = fmt.Sprintf("https://127.0.0.1:%d/metrics", port)
	c.SchedulerConfigHash = dep.Spec.Template.Annotations[render.ConfigHashAnnotation]
	c.logf("starting kubenexus-scheduler with its Deployment's arguments (configuration %s)", c.SchedulerConfigHash)
	c.schedulerStarts++
	if err := c.start(fmt.Sprintf("kubenexus-scheduler-%d", c.schedulerStarts), filepath.Join(c.opts.Bin, "kubenexus-scheduler"), args...); err != nil {
		return err
	}
	c.scheduler = &c.procs[len(c.procs)-1]
	return waitFor(ctx, time.Minute, func() error { return httpOK(fmt.Sprintf("https://127.0.0.1:%d/readyz", port)) })
}

// helmCmd is the helm binary the cluster installs with.
func (c *Cluster) helmCmd() string {
	if c.helm != "" {
		return c.helm
	}
	return filepath.Join(c.opts.Bin, "k8s", "helm")
}

// HelmVersion is what the cluster's helm says its version is.
func (c *Cluster) HelmVersion() string {
	out, err := exec.Command(c.helmCmd(), "version", "--short").Output()
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return strings.TrimSpace(string(out))
}

// WebhookConfigurations counts the cluster's mutating and validating webhook
// configurations.
func (c *Cluster) WebhookConfigurations(ctx context.Context) (int, error) {
	var mwcs admissionregistrationv1.MutatingWebhookConfigurationList
	var vwcs admissionregistrationv1.ValidatingWebhookConfigurationList
	if err := c.Client.List(ctx, &mwcs); err != nil {
		return 0, err
	}
	if err := c.Client.List(ctx, &vwcs); err != nil {
		return 0, err
	}
	return len(mwcs.Items) + len(vwcs.Items), nil
}
