// Package node_test installs KubeNexus on a real node: the images make image
// builds, started by a real kubelet (containerd 2 and runc), as `helm install`
// with the chart's defaults. make test-e2e-node builds what it needs and runs it.
package node_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/controllers/kubenexusconfig/render"
	"github.com/kube-nexus/kubenexus/test/e2e/demo"
	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/testenv"
)

// images are the archives make image writes for this machine's architecture
// (-node-test-images adds the sandbox and the workload).
func images(bin, version string) []string {
	var out []string
	for _, name := range []string{"kubenexus-manager", "kubenexus-scheduler", "kubenexus-e2e-pause", "kubenexus-e2e-workload"} {
		out = append(out, filepath.Join(bin, "image", fmt.Sprintf("%s_%s_linux_%s.tar", name, version, runtime.GOARCH)))
	}
	return out
}

// workloadImage is the test workload's image, at the chart's appVersion.
var workloadImage string

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func TestRealNode(t *testing.T) {
	root := testenv.RepoRoot()
	bin := filepath.Join(root, "bin")
	version, err := demo.ImageVersion(root)
	if err != nil {
		t.Fatal(err)
	}
	workloadImage = demo.NodeImage("kubenexus-e2e-workload", version)
	for _, img := range images(bin, version) {
		if _, err := os.Stat(img); err != nil {
			t.Fatalf("%s is missing: make test-e2e-node builds it (make image IMAGE_ARCHES=%s with -node-test-images)", img, runtime.GOARCH)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	dir := t.TempDir()
	if d := os.Getenv("E2E_LOG_DIR"); d != "" {
		dir = filepath.Join(d, "node")
	}
	c, err := demo.UpNode(ctx, demo.Options{Root: root, Bin: bin, Dir: dir, Log: testWriter{t}}, version, images(bin, version))
	defer func() {
		if t.Failed() {
			for _, name := range []string{"kubelet", "containerd", "kube-proxy", "kube-scheduler"} {
				if data, err := os.ReadFile(filepath.Join(dir, name+".log")); err == nil {
					t.Logf("--- %s log (tail) ---\n%s", name, tail(string(data), 4000))
				}
			}
		}
	}()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Down()
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			dumpPods(ctx, t, cs)
		}
	}()

	// helm install as the README writes it, with the chart's defaults.
	if err := c.Helm("install", "kubenexus", c.Chart(), "--create-namespace"); err != nil {
		t.Fatal(err)
	}
	waitAvailable(ctx, t, c, demo.ManagerDeployment)
	waitAvailable(ctx, t, c, render.Name)
	if err := poll(ctx, 2*time.Minute, func() error {
		cfg := &v1alpha1.KubeNexusConfig{}
		if err := c.Client.Get(ctx, client.ObjectKey{Name: v1alpha1.DefaultConfigName}, cfg); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(cfg.Status.Conditions, v1alpha1.ConditionAvailable) {
			return fmt.Errorf("KubeNexusConfig %s is not Available: %+v", cfg.Name, cfg.Status.Conditions)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	logPods(ctx, t, cs, demo.Namespace)

	ns := "team-a"
	if err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"kubenexus.io/enabled": "true"}}}); err != nil {
		t.Fatal(err)
	}
	gangRuns(ctx, t, c, cs, ns)

	// A gang that runs through everything below, and a Job under the default
	// configuration: classified, not ganged (job is not in autoGang by default).
	serving := startGang(ctx, t, c, cs, ns, "serve", 2, "-sleep=1h")
	for _, p := range runJob(ctx, t, c, cs, ns, "etl", 2) {
		if g := p.Labels[v1alpha1.LabelKubeNexusGangName]; g != "" {
			t.Errorf("Job etl's pod %s was put in gang %q with job not in autoGang", p.Name, g)
		}
	}
	scrapeMetrics(ctx, t, c, cs)

	// helm upgrade: a new scheduler name rolls the scheduler, not the manager; the
	// webhook then gangs Jobs and sends pods to the new name; the running gang stays.
	manager := podOf(ctx, t, cs, "manager")
	scheduler := podOf(ctx, t, cs, "scheduler")
	if err := c.Helm("upgrade", "kubenexus", c.Chart(), "--reuse-values", "--set", "config.schedulerName=gpu-scheduler",
		"--set", "config.autoGang={spark,pytorch,tensorflow,xgboost,mpi,ray,jobset,leaderworkerset,job}"); err != nil {
		t.Fatal(err)
	}
	waitAvailable(ctx, t, c, render.Name)
	if got := podOf(ctx, t, cs, "scheduler"); got.UID == scheduler.UID {
		t.Errorf("the scheduler pod %s was not replaced by helm upgrade to another scheduler name", got.Name)
	}
	if got := podOf(ctx, t, cs, "manager"); got.UID != manager.UID {
		t.Errorf("helm upgrade replaced the manager pod (%s → %s) though its Deployment did not change", manager.Name, got.Name)
	}
	webhookServes(ctx, t, c, ns, "gpu-scheduler", time.Minute)
	for _, p := range runJob(ctx, t, c, cs, ns, "etl-ganged", 2) {
		if p.Labels[v1alpha1.LabelKubeNexusGangName] == "" || p.Labels[v1alpha1.LabelKubeNexusGangMinAvailable] != "2" || p.Spec.SchedulerName != "gpu-scheduler" {
			t.Errorf("Job etl-ganged's pod %s: gang %q of %q, scheduler %q; want a gang of 2 sent to gpu-scheduler",
				p.Name, p.Labels[v1alpha1.LabelKubeNexusGangName], p.Labels[v1alpha1.LabelKubeNexusGangMinAvailable], p.Spec.SchedulerName)
		}
	}
	stillRunning(ctx, t, cs, ns, "after helm upgrade", serving)

	// The runtime kills the manager's and the scheduler's containers: the kubelet
	// restarts them, the webhook serves again, a new gang binds whole.
	killAndRecover(ctx, t, c, cs, "manager")
	webhookServes(ctx, t, c, ns, "gpu-scheduler", 30*time.Second)
	killAndRecover(ctx, t, c, cs, "scheduler")
	startGang(ctx, t, c, cs, ns, "after-kill", 2, "-sleep=1h")
	stillRunning(ctx, t, cs, ns, "after the faults", serving)
	logPods(ctx, t, cs, "")

	if err := c.Helm("uninstall", "kubenexus", "--wait"); err != nil {
		t.Fatal(err)
	}
	nothingLeft(ctx, t, c, cs)
}

// gangRuns: a gang of three real containers binds only whole: two members wait
// unbound, the third lets all three bind; they run on the real node and complete.
func gangRuns(ctx context.Context, t *testing.T, c *demo.Cluster, cs kubernetes.Interface, ns string) {
	t.Helper()
	if err := c.Client.Create(ctx, testutil.MakePodGroup("train", ns).MinMember(3).Obj()); err != nil {
		t.Fatal(err)
	}
	member := func(i int) *corev1.Pod {
		return workload(testutil.MakePod(fmt.Sprintf("train-%d", i), ns).PodGroup("train").Req("cpu", "100m").Obj(), "-sleep=3s", "-exit=0")
	}
	for i := range 2 {
		p := member(i)
		if err := c.Client.Create(ctx, p); err != nil {
			t.Fatalf("creating %s: %v", p.Name, err)
		}
		if p.Spec.SchedulerName != "kubenexus-scheduler" {
			t.Fatalf("pod %s: schedulerName %q, want the pod webhook's kubenexus-scheduler", p.Name, p.Spec.SchedulerName)
		}
	}
	// The first two members wait for the third: none is bound meanwhile.
	time.Sleep(5 * time.Second)
	for i := range 2 {
		got, err := cs.CoreV1().Pods(ns).Get(ctx, fmt.Sprintf("train-%d", i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Spec.NodeName != "" {
			t.Fatalf("pod %s of a gang of 3 was bound to %s with only 2 members created", got.Name, got.Spec.NodeName)
		}
	}
	if err := c.Client.Create(ctx, member(2)); err != nil {
		t.Fatal(err)
	}
	if err := poll(ctx, 2*time.Minute, func() error {
		for i := range 3 {
			got, err := cs.CoreV1().Pods(ns).Get(ctx, fmt.Sprintf("train-%d", i), metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got.Spec.NodeName != demo.NodeName || got.Status.Phase != corev1.PodSucceeded {
				return fmt.Errorf("pod %s: node %q, phase %s; want %s and Succeeded", got.Name, got.Spec.NodeName, got.Status.Phase, demo.NodeName)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	raw, err := cs.CoreV1().Pods(ns).GetLogs("train-0", &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("the log of train-0 through the API server and the kubelet: %v", err)
	}
	if !strings.Contains(string(raw), "workload: uid=65532") || !strings.Contains(string(raw), "exiting with 0") {
		t.Errorf("train-0's log: %q; want the workload's lines (uid 65532, exit 0)", raw)
	}
}

// waitAvailable waits until Deployment name in the KubeNexus namespace has all its
// replicas available on the real node.
func waitAvailable(ctx context.Context, t *testing.T, c *demo.Cluster, name string) {
	t.Helper()
	if err := poll(ctx, 4*time.Minute, func() error {
		d := &appsv1.Deployment{}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: demo.Namespace, Name: name}, d); err != nil {
			return err
		}
		if d.Spec.Replicas == nil || d.Status.AvailableReplicas < *d.Spec.Replicas || d.Status.UpdatedReplicas < *d.Spec.Replicas {
			return fmt.Errorf("Deployment %s: %d of %d replicas available (%d updated)", name, d.Status.AvailableReplicas, ptrOr(d.Spec.Replicas), d.Status.UpdatedReplicas)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func ptrOr(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

// logPods logs the pods of namespace ns with their node and phase.
func logPods(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Log(err)
		return
	}
	for _, p := range pods.Items {
		restarts := int32(0)
		for _, s := range p.Status.ContainerStatuses {
			restarts += s.RestartCount
		}
		t.Logf("pod %s/%s on %s: %s, %d restarts, image %s", p.Namespace, p.Name, p.Spec.NodeName, p.Status.Phase, restarts, p.Spec.Containers[0].Image)
	}
}

// dumpPods logs every pod's status and its containers' states, for a failure.
func dumpPods(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	pods, err := cs.CoreV1().Pods("").List(context.WithoutCancel(ctx), metav1.ListOptions{})
	if err != nil {
		t.Log(err)
		return
	}
	for _, p := range pods.Items {
		t.Logf("pod %s/%s node=%q phase=%s conditions=%v", p.Namespace, p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.Conditions)
		for _, s := range p.Status.ContainerStatuses {
			t.Logf("  container %s: ready=%v restarts=%d state=%+v last=%+v", s.Name, s.Ready, s.RestartCount, s.State, s.LastTerminationState)
		}
	}
	events, err := cs.CoreV1().Events("").List(context.WithoutCancel(ctx), metav1.ListOptions{})
	if err == nil {
		for _, e := range events.Items {
			if e.Type != corev1.EventTypeNormal {
				t.Logf("event %s %s/%s: %s %s", e.Type, e.InvolvedObject.Namespace, e.InvolvedObject.Name, e.Reason, e.Message)
			}
		}
	}
}

func poll(ctx context.Context, timeout time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	for {
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
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
