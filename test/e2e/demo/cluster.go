// Package demo brings up a local KubeNexus cluster from source — etcd,
// kube-apiserver, kube-controller-manager and kwok, KubeNexus installed from its
// chart with the real helm, the manager and the scheduler as local processes, and
// Kubeflow's training-operator v1.8.1 (two instances: its default mode and
// scheduler-plugins mode) — fills it with a simulated heterogeneous fleet and a
// realistic workload mix, and reports where everything landed. `make demo` (hack/demo) and the e2e test run the same code.
package demo

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/controllers"
	"github.com/kube-nexus/kubenexus/controllers/kubenexusconfig/render"
	"github.com/kube-nexus/kubenexus/test/util/testenv"
)

// The clients of this package (controller-runtime's) log through klog, as the
// manager and the scheduler do: without a logger, controller-runtime prints a stack
// trace to stderr 30 s after its first log line, which reads like a failure in a
// test's output.
func init() { ctrllog.SetLogger(klog.NewKlogr()) }

// Namespace is where KubeNexus is installed.
const Namespace = "kubenexus-system"

// Options say where the binaries are and where the cluster keeps its files.
type Options struct {
	// Root is the repository root (the chart and test data are read from it).
	Root string
	// Bin holds kubenexus-manager and kubenexus-scheduler; Bin/k8s the tools.
	Bin string
	// Dir receives kubeconfigs, certificates and process logs.
	Dir string
	// Log receives progress lines.
	Log io.Writer
	// KueueLater leaves Kueue's controller-manager out of Up: the caller starts it
	// with StartKueue once its binary is built (make demo builds it while the rest
	// of the demo runs).
	KueueLater bool
	// NodeLifecycle runs kube-controller-manager's node lifecycle controller: a kwok
	// node that reports NotReady (SetNodeReady) is tainted and its pods are evicted
	// by the taint manager, as on a real cluster.
	NodeLifecycle bool
	// WithoutFrameworks leaves the training-operators and Kueue out of Up.
	WithoutFrameworks bool
	// ManagerArgs are more flags for kubenexus-manager.
	ManagerArgs []string
}

// Cluster is a running local cluster.
type Cluster struct {
	opts       Options
	env        *envtest.Environment
	Kubeconfig string
	Config     *rest.Config
	Client     client.Client
	procs      []process
	// crds are the CustomResourceDefinitions applyFile created.
	crds []string
	// submitted and placed record, per workload, when it was submitted and when
	// all its pods were first seen bound (Settle polls every 100 ms).
	submitted, placed map[string]time.Time
	// sigsPhases are the phases a watch saw each ForeignGang workload's PodGroup
	// go through, under phasesMu.
	phasesMu   sync.Mutex
	sigsPhases map[string][]string
	// capacity is the GPU capacity Settle saw once the mix was placed.
	capacity []GPUCapacity
	// certDir holds the serving certificate of the local webhooks, signed by caPEM.
	certDir string
	caPEM   []byte
	// helm is the helm binary to run (bin/k8s/helm when empty).
	helm string
	// scheduler is the scheduler process UpProduction runs, and SchedulerConfigHash
	// the configuration hash of the Deployment it stands in for.
	scheduler           *process
	schedulerStarts     int
	SchedulerConfigHash string
	// ManagerMetricsURL is where the manager serves its metrics (Up's: plain HTTP;
	// UpProduction's: HTTPS with a token).
	ManagerMetricsURL string
	// SchedulerMetricsURL is where the scheduler serves its metrics (Up's: /metrics
	// open to anyone; RestartScheduler's: with a token).
	SchedulerMetricsURL string
	// node is the real node StartNode started, cleaned up by Down.
	node *Node
}

func (c *Cluster) logf(format string, args ...any) {
	fmt.Fprintf(c.opts.Log, ">> "+format+"\n", args...)
}

// Up starts everything and installs KubeNexus. On error, what was started is stopped.
func Up(ctx context.Context, opts Options) (_ *Cluster, err error) {
	c := &Cluster{opts: opts, submitted: map[string]time.Time{}, placed: map[string]time.Time{}, sigsPhases: map[string][]string{}}
	defer func() {
		if err != nil {
			c.Down()
		}
	}()
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	tools := filepath.Join(opts.Bin, "k8s")
	// Kubernetes' own Workload and PodGroup API (scheduling.k8s.io/v1beta1, off by
	// default in 1.37), so that pods may name a PodGroup in spec.schedulingGroup.
	if err := c.startControlPlane(func(env *envtest.Environment) error {
		_, err := testenv.EnableNativeWorkloads(env)
		return err
	}); err != nil {
		return nil, err
	}
	if err := c.startControllerManager(opts.NodeLifecycle); err != nil {
		return nil, err
	}

	c.logf("starting kwok")
	kwokPort, err := testenv.FreePort()
	if err != nil {
		return nil, err
	}
	// kwok v0.8 has no default stages: it gets those v0.7 applied, from its own
	// packages (hack/tools/kwokstages).
	stages, err := exec.Command(filepath.Join(tools, "kwok-stages")).Output()
	if err != nil {
		return nil, fmt.Errorf("kwok-stages: %w", err)
	}
	if stages, err = withNodeDownSwitch(stages); err != nil {
		return nil, err
	}
	stagesPath := filepath.Join(opts.Dir, "kwok-stages.yaml")
	if err := os.WriteFile(stagesPath, stages, 0o600); err != nil {
		return nil, err
	}
	if err := c.start("kwok", filepath.Join(tools, "kwok"),
		"--config="+stagesPath,
		"--kubeconfig="+c.Kubeconfig,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--cidr=10.244.0.1/16",
		"--node-ip=10.244.0.1",
		fmt.Sprintf("--server-address=127.0.0.1:%d", kwokPort),
	); err != nil {
		return nil, err
	}

	// The manager runs here, outside the cluster: its webhooks are reached by URL
	// with a certificate for 127.0.0.1 whose CA the chart puts in the webhook
	// configurations.
	certDir := filepath.Join(opts.Dir, "webhook-certs")
	caPEM, err := writeServingCert(certDir)
	if err != nil {
		return nil, err
	}
	c.certDir, c.caPEM = certDir, caPEM
	webhookPort, err := testenv.FreePort()
	if err != nil {
		return nil, err
	}
	probePort, err := testenv.FreePort()
	if err != nil {
		return nil, err
	}
	managerMetricsPort, err := testenv.FreePort()
	if err != nil {
		return nil, err
	}

	c.logf("installing KubeNexus from charts/kubenexus with helm")
	helmArgs := []string{
		"--kubeconfig=" + c.Kubeconfig, "--namespace=" + Namespace, "--create-namespace",
		"--set", "manager.enabled=false",
		"--set", fmt.Sprintf("webhook.url=https://127.0.0.1:%d", webhookPort),
		"--set", "webhook.caBundle=" + base64.StdEncoding.EncodeToString(caPEM),
		// KubeNexus takes the Volcano scheduler's role for the training-operator
		// instance that runs in Volcano mode.
		"--set", "config.volcano.enabled=true",
	}
	// First the CRDs, RBAC and webhooks; the KubeNexusConfig comes once the
	// manager that validates it runs.
	if err := c.run("helm", filepath.Join(tools, "helm"), append([]string{"install", "kubenexus", filepath.Join(opts.Root, "charts", "kubenexus"), "--set", "config.create=false"}, helmArgs...)...); err != nil {
		return nil, err
	}
	// The CRDs of the other systems, before the manager and the scheduler start (they
	// look for the other PodGroup kinds once, at start): scheduler-plugins' and
	// Volcano's own PodGroup CRDs, Kubeflow training-operator's own CRDs, the own CRDs
	// of LeaderWorkerSet, KubeRay, JobSet and Kubeflow Trainer (their controllers run in
	// the e2e), and a stand-in for Spark, whose operator does not run here.
	sigsCRD, err := testenv.SchedulerPluginsCRD()
	if err != nil {
		return nil, err
	}
	volcanoCRD, err := testenv.VolcanoPodGroupCRD()
	if err != nil {
		return nil, err
	}
	kubeflowCRDs, err := testenv.TrainingOperatorCRDs()
	if err != nil {
		return nil, err
	}
	// And the NodeResourceTopology CRD, whose objects (the kubelet's NUMA reports)
	// the fleet publishes for its GPU boards.
	nrtCRD, err := testenv.NodeResourceTopologyCRD()
	if err != nil {
		return nil, err
	}
	// And Kueue's, whose Workloads the manager's placement check and the scheduler's
	// TenantHardware read.
	kueueCRDs, err := kueueCRDFiles()
	if err != nil {
		return nil, err
	}
	lwsCRD, err := testenv.LeaderWorkerSetCRD()
	if err != nil {
		return nil, err
	}
	rayCRDs, err := testenv.RayCRDs()
	if err != nil {
		return nil, err
	}
	jobSetCRD, err := testenv.JobSetCRD()
	if err != nil {
		return nil, err
	}
	trainerCRDs, err := testenv.TrainerCRDs()
	if err != nil {
		return nil, err
	}
	c.logf("installing scheduler-plugins' and Volcano's PodGroup CRDs, Kubeflow training-operator v1.8.1's and Trainer v2.1.0's CRDs, Kueue v0.17.0's, LeaderWorkerSet v0.7.0's, KubeRay v1.5.0's and JobSet v0.10.1's CRDs, the NodeResourceTopology CRD and a stand-in CRD for Spark")
	replaced := map[string]bool{}
	crds := []string{sigsCRD, volcanoCRD, nrtCRD, lwsCRD, jobSetCRD}
	for _, more := range [][]string{rayCRDs, trainerCRDs, kubeflowCRDs, kueueCRDs} {
		crds = append(crds, more...)
	}
	for _, path := range crds {
		names, err := c.applyFile(ctx, path, nil)
		if err != nil {
			return nil, fmt.Errorf("installing %s: %w", filepath.Base(path), err)
		}
		for _, n := range names {
			replaced[n] = true
		}
	}
	if _, err := c.applyFile(ctx, filepath.Join(opts.Root, "test", "testdata", "crds", "frameworks.yaml"), func(u *unstructured.Unstructured) bool {
		return replaced[u.GetName()] // a stand-in the real CRD replaces
	}); err != nil {
		return nil, fmt.Errorf("installing the framework CRDs: %w", err)
	}
	if err := c.waitEstablished(ctx); err != nil {
		return nil, err
	}

	c.logf("starting kubenexus-manager (local process, webhooks on 127.0.0.1:%d)", webhookPort)
	if err := c.start("kubenexus-manager", filepath.Join(opts.Bin, "kubenexus-manager"), append([]string{
		"--kubeconfig=" + c.Kubeconfig,
		"--namespace=" + Namespace,
		"--scheduler-image=ghcr.io/kube-nexus/kubenexus-scheduler:v0.1.0",
		"--cert-rotation=false",
		"--webhook-cert-dir=" + certDir,
		fmt.Sprintf("--webhook-port=%d", webhookPort),
		// Plain HTTP on the loopback: the e2e reads the metrics the dashboard charts.
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", managerMetricsPort), "--metrics-secure=false",
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", probePort),
		"--podgroup-gc-grace=10m",
		// KUBENEXUS_MANAGER_V sets the manager's log level (2: every repair's hold).
		"--zap-log-level=" + cmp.Or(os.Getenv("KUBENEXUS_MANAGER_V"), "info"),
	}, opts.ManagerArgs...)...); err != nil {
		return nil, err
	}
	c.ManagerMetricsURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", managerMetricsPort)
	if err := waitFor(ctx, 2*time.Minute, func() error { return httpOK(fmt.Sprintf("http://127.0.0.1:%d/readyz", probePort)) }); err != nil {
		return nil, fmt.Errorf("kubenexus-manager never became ready (see %s): %w", c.logPath("kubenexus-manager"), err)
	}
	// The KubeNexusConfig, and the Kueue AdmissionCheck the manager runs (Kueue's CRDs
	// are installed now).
	if err := c.run("helm", filepath.Join(tools, "helm"), append([]string{"upgrade", "kubenexus", filepath.Join(opts.Root, "charts", "kubenexus"), "--set", "config.create=true",
		"--set", "kueue.admissionCheck.enabled=true", "--set", "kueue.admissionCheck.name=" + KueueAdmissionCheck}, helmArgs...)...); err != nil {
		return nil, err
	}

	c.logf("starting kubenexus-scheduler with the configuration the operator rendered")
	var rendered string
	if err := waitFor(ctx, time.Minute, func() error {
		cm := &corev1.ConfigMap{}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: render.Name}, cm); err != nil {
			return err
		}
		rendered = cm.Data[render.ConfigKey]
		return nil
	}); err != nil {
		return nil, fmt.Errorf("the operator rendered no scheduler ConfigMap: %w", err)
	}
	schedCfg, err := withKubeconfig([]byte(rendered), c.Kubeconfig)
	if err != nil {
		return nil, err
	}
	schedCfgPath := filepath.Join(opts.Dir, "scheduler-config.yaml")
	if err := os.WriteFile(schedCfgPath, schedCfg, 0o600); err != nil {
		return nil, err
	}
	schedPort, err := testenv.FreePort()
	if err != nil {
		return nil, err
	}
	// /metrics without a token: nothing here authenticates (UpProduction checks the
	// secured endpoint).
	schedArgs := []string{"--config=" + schedCfgPath, "--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", schedPort),
		"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"}
	c.SchedulerMetricsURL = fmt.Sprintf("https://127.0.0.1:%d/metrics", schedPort)
	// KUBENEXUS_SCHEDULER_V sets the scheduler's log verbosity (4 logs every gang plan).
	if v := os.Getenv("KUBENEXUS_SCHEDULER_V"); v != "" {
		schedArgs = append(schedArgs, "--v="+v)
	}
	if err := c.start("kubenexus-scheduler", filepath.Join(opts.Bin, "kubenexus-scheduler"), schedArgs...); err != nil {
		return nil, err
	}
	if opts.WithoutFrameworks {
		return c, nil
	}
	if err := c.startTrainingOperators(ctx, certDir, caPEM); err != nil {
		return nil, err
	}
	if !opts.KueueLater {
		if err := c.StartKueue(ctx); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// startControlPlane starts etcd and kube-apiserver (configure may add flags), writes
// an admin kubeconfig into Dir and sets Kubeconfig, Config and Client.
func (c *Cluster) startControlPlane(configure func(*envtest.Environment) error) error {
	c.logf("starting etcd and kube-apiserver")
	c.env = &envtest.Environment{BinaryAssetsDirectory: filepath.Join(c.opts.Bin, "k8s")}
	if err := configure(c.env); err != nil {
		return err
	}
	cfg, err := c.env.Start()
	if err != nil {
		return fmt.Errorf("starting the control plane: %w", err)
	}
	admin, err := c.env.AddUser(envtest.User{Name: "demo-admin", Groups: []string{"system:masters"}}, rest.CopyConfig(cfg))
	if err != nil {
		return err
	}
	kc, err := admin.KubeConfig()
	if err != nil {
		return err
	}
	c.Kubeconfig = filepath.Join(c.opts.Dir, "kubeconfig")
	if err := os.WriteFile(c.Kubeconfig, kc, 0o600); err != nil {
		return err
	}
	c.Config = admin.Config()
	c.Config.QPS, c.Config.Burst = 500, 1000
	scheme := controllers.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil { // Kueue's CRDs get their conversion webhook
		return err
	}
	c.Client, err = client.New(c.Config, client.Options{Scheme: scheme})
	return err
}

// startControllerManager starts kube-controller-manager without the controllers
// that need volumes, and without node lifecycle unless asked (nodeLifecycle: real
// kubelets run, or kwok nodes are made to fail): a node whose heartbeat is late
// on a loaded machine would have its pods evicted. With it, the taints of a
// NotReady node are applied at up to 10 nodes a second (the default, 0.1, takes
// 80 s for 8 nodes), and a node is unreachable after 90 s without a heartbeat
// (kwok's come every 20–25 s).
func (c *Cluster) startControllerManager(nodeLifecycle bool) error {
	c.logf("starting kube-controller-manager")
	kcmPort, err := testenv.FreePort()
	if err != nil {
		return err
	}
	controllers := "*,-nodeipam,-persistentvolume-binder-controller,-persistentvolume-attach-detach-controller,-persistentvolume-expander-controller,-ephemeral-volume-controller,-persistentvolumeclaim-protection-controller,-persistentvolume-protection-controller"
	var lifecycle []string
	if nodeLifecycle {
		// The grace a node's heartbeat has is long (5 min): the tests make nodes
		// report NotReady or delete them, and kwok, which heartbeats every 20–45 s,
		// has been seen silent for 91 s on a loaded machine — with 90 s, healthy
		// nodes went unreachable and their pods were evicted.
		lifecycle = []string{"--node-eviction-rate=10", "--secondary-node-eviction-rate=10", "--node-monitor-grace-period=300s", "--node-monitor-period=2s"}
	} else {
		controllers += ",-nodelifecycle"
	}
	return c.start("kube-controller-manager", filepath.Join(c.opts.Bin, "k8s", "kube-controller-manager"), append(lifecycle,
		"--kubeconfig="+c.Kubeconfig,
		"--authentication-kubeconfig="+c.Kubeconfig,
		"--authorization-kubeconfig="+c.Kubeconfig,
		"--leader-elect=false",
		"--use-service-account-credentials=false",
		fmt.Sprintf("--secure-port=%d", kcmPort),
		"--bind-address=127.0.0.1",
		// (1.37 has no cloud controllers left in kube-controller-manager to turn off.)
		"--controllers="+controllers,
	)...)
}

// withKubeconfig points a rendered (in-cluster) scheduler configuration at kubeconfig.
func withKubeconfig(cfg []byte, kubeconfig string) ([]byte, error) {
	var tree map[string]any
	if err := yaml.Unmarshal(cfg, &tree); err != nil {
		return nil, err
	}
	cc, _ := tree["clientConnection"].(map[string]any)
	if cc == nil {
		cc = map[string]any{}
	}
	cc["kubeconfig"] = kubeconfig
	tree["clientConnection"] = cc
	return yaml.Marshal(tree)
}

func (c *Cluster) logPath(name string) string { return filepath.Join(c.opts.Dir, name+".log") }

// LogTails is the last n bytes of each process's log in dir (Options.Dir) that
// exists, headed by its name: what a failed test shows.
func LogTails(dir string, n int, names ...string) string {
	var b strings.Builder
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(dir, name+".log"))
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "--- %s log (tail) ---\n%s\n", name, data[max(0, len(data)-n):])
	}
	return b.String()
}

// start runs a long-lived process, its output in Dir/<name>.log.
func (c *Cluster) start(name, bin string, args ...string) error {
	return c.startEnv(name, nil, bin, args...)
}

// startEnv is start with the environment env (nil: this process's).
func (c *Cluster) startEnv(name string, env []string, bin string, args ...string) error {
	logFile, err := os.Create(c.logPath(name))
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", name, err)
	}
	done := make(chan struct{})
	c.procs = append(c.procs, process{cmd: cmd, done: done})
	go func() { _ = cmd.Wait(); _ = logFile.Close(); close(done) }()
	return nil
}

// Helm runs the real helm against the cluster, in the KubeNexus namespace, e.g.
// Helm("upgrade", "kubenexus", chart, "--reuse-values", "--set", "a=b").
func (c *Cluster) Helm(args ...string) error {
	return c.run("helm", c.helmCmd(), append(args, "--kubeconfig="+c.Kubeconfig, "--namespace="+Namespace)...)
}

// Chart is the path of charts/kubenexus.
func (c *Cluster) Chart() string { return filepath.Join(c.opts.Root, "charts", "kubenexus") }

// run runs a command to completion.
func (c *Cluster) run(name, bin string, args ...string) error {
	var out bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args[:1], " "), err, out.String())
	}
	return nil
}

// ApplyFile creates every object of a YAML file.
func (c *Cluster) ApplyFile(ctx context.Context, path string) error {
	_, err := c.applyFile(ctx, path, nil)
	return err
}

// applyFile creates every object of a YAML file but those skip (when not nil)
// selects, and returns the names of the CustomResourceDefinitions it created.
func (c *Cluster) applyFile(ctx context.Context, path string, skip func(*unstructured.Unstructured) bool) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var crds []string
	for _, doc := range strings.Split(string(data), "\n---") {
		var u map[string]any
		if err := yaml.Unmarshal([]byte(doc), &u); err != nil {
			return nil, err
		}
		if len(u) == 0 {
			continue
		}
		obj := &unstructured.Unstructured{Object: u}
		if skip != nil && skip(obj) {
			continue
		}
		if err := c.Client.Create(ctx, obj); err != nil {
			return nil, err
		}
		if obj.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, obj.GetName())
			c.crds = append(c.crds, obj.GetName())
		}
	}
	return crds, nil
}

// waitEstablished waits until every CRD applyFile created is served.
func (c *Cluster) waitEstablished(ctx context.Context) error {
	return waitFor(ctx, time.Minute, func() error {
		for _, name := range c.crds {
			crd := &unstructured.Unstructured{}
			crd.SetAPIVersion("apiextensions.k8s.io/v1")
			crd.SetKind("CustomResourceDefinition")
			if err := c.Client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				return err
			}
			conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			established := false
			for _, cond := range conds {
				cm, _ := cond.(map[string]any)
				established = established || cm["type"] == "Established" && cm["status"] == "True"
			}
			if !established {
				return fmt.Errorf("CRD %s is not established yet", name)
			}
		}
		// The manager and the scheduler look for this kind in discovery once, at start.
		_, err := c.Client.RESTMapper().RESTMapping(v1alpha1.SigsPodGroupGVK.GroupKind(), v1alpha1.SigsPodGroupGVK.Version)
		return err
	})
}

// process is a started command and a channel closed once it has exited.
type process struct {
	cmd  *exec.Cmd
	done <-chan struct{}
}

// stop waits for the process to exit until deadline fires, then kills it.
func (p process) stop(deadline <-chan time.Time) {
	select {
	case <-p.done:
	case <-deadline:
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// Down stops the processes, then the control plane.
func (c *Cluster) Down() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		_ = c.procs[i].cmd.Process.Signal(os.Interrupt)
	}
	deadline := time.After(10 * time.Second)
	for _, p := range c.procs {
		p.stop(deadline)
	}
	if c.node != nil {
		c.node.clean(c.logf)
	}
	if c.env != nil {
		_ = c.env.Stop()
	}
}

func httpOK(url string) error {
	resp, err := (&http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}).Get(url) //nolint:gosec // local probe
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

// WaitFor polls f until it succeeds or timeout passes (its last error) or ctx ends.
func WaitFor(ctx context.Context, timeout time.Duration, f func() error) error {
	return waitFor(ctx, timeout, f)
}

// waitFor polls f until it succeeds; each observe function runs before every poll.
func waitFor(ctx context.Context, timeout time.Duration, f func() error, observe ...func(context.Context)) error {
	deadline := time.Now().Add(timeout)
	interval := 500 * time.Millisecond
	if len(observe) > 0 {
		interval = 100 * time.Millisecond
	}
	for {
		for _, o := range observe {
			o(ctx)
		}
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(interval):
		}
	}
}

// writeServingCert writes a CA and a serving certificate for 127.0.0.1 (tls.crt,
// tls.key) into dir and returns the CA in PEM.
func writeServingCert(dir string) ([]byte, error) {
	return writeCertificates(dir, "tls", []net.IP{net.ParseIP("127.0.0.1")}, []string{"localhost"})
}

// writeCertificates writes a new CA (ca.crt) and a serving certificate it signed for
// ips and dns (name.crt, name.key) into dir and returns the CA in PEM.
func writeCertificates(dir, name string, ips []net.IP, dns []string) ([]byte, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubenexus-demo-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(30 * 24 * time.Hour),
		IsCA: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: ips[0].String()},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(30 * 24 * time.Hour),
		IPAddresses: ips, DNSNames: dns,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caTmpl, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	files := map[string][]byte{
		name + ".crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		name + ".key": pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
		"ca.crt":      caPEM,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	return caPEM, nil
}
