// Package node_test installs KubeNexus on a real node: the images make image
// builds, started by a real kubelet (containerd 2 and runc), as `helm install`
// with the chart's defaults. make test-e2e-node builds what it needs and runs it.
package node_test

import (
	"context"
	"encoding/json"
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
	"k8s.io/utils/ptr"
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
	c, err := demo.UpNode(ctx, demo.Options{Root: root, Bin: bin, Dir: dir, Log: testenv.LogWriter{T: t}}, version, images(bin, version))
	defer func() {
		if t.Failed() {
			t.Log(demo.LogTails(dir, 4000, "kubelet", "containerd", "kube-proxy", "kube-scheduler"))
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

	start := time.Now()
	step := func(what string) { t.Logf("[%5.1fs] %s", time.Since(start).Seconds(), what) }
	// helm install as the README writes it, with the chart's defaults.
	if err := c.Helm("install", "kubenexus", c.Chart(), "--create-namespace"); err != nil {
		t.Fatal(err)
	}
	waitAvailable(ctx, t, c, cs, demo.ManagerDeployment)
	waitAvailable(ctx, t, c, cs, render.Name)
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
	step("KubeNexus installed and available")
	gangRuns(ctx, t, c, cs, ns)
	step("a gang of three real containers ran")

	// A gang that runs through everything below, and a Job under the default
	// configuration: classified, not ganged (job is not in autoGang by default).
	serving := startGang(ctx, t, c, cs, ns, "serve", 2, "-sleep=1h")
	for _, p := range runJob(ctx, t, c, cs, ns, "etl", 2) {
		if g := p.Labels[v1alpha1.LabelKubeNexusGangName]; g != "" {
			t.Errorf("Job etl's pod %s was put in gang %q with job not in autoGang", p.Name, g)
		}
	}
	step("a Job ran, not ganged")
	scrapeMetrics(ctx, t, c, cs)
	step("metrics scraped")

	// helm upgrade: a new scheduler name rolls the scheduler, not the manager; the
	// webhook then gangs Jobs and sends pods to the new name; the running gang stays.
	manager := podOf(ctx, t, cs, "manager")
	scheduler := podOf(ctx, t, cs, "scheduler")
	before := schedulerConfigHash(ctx, t, c)
	if err := c.Helm("upgrade", "kubenexus", c.Chart(), "--reuse-values", "--set", "config.schedulerName=gpu-scheduler",
		"--set", "config.autoGang={spark,pytorch,tensorflow,xgboost,mpi,ray,jobset,leaderworkerset,job}"); err != nil {
		t.Fatal(err)
	}
	// The operator renders the new configuration after helm returns: wait for it,
	// then for its rollout.
	if err := poll(ctx, time.Minute, func() error {
		if h := schedulerConfigHash(ctx, t, c); h == before {
			return fmt.Errorf("the scheduler Deployment still has configuration %s after helm upgrade to another scheduler name", h)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	waitAvailable(ctx, t, c, cs, render.Name)
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

	step("helm upgrade done, a ganged Job ran")
	// The runtime kills the manager's and the scheduler's containers: the kubelet
	// restarts them, the webhook serves again, a new gang binds whole.
	killAndRecover(ctx, t, c, cs, "manager")
	webhookServes(ctx, t, c, ns, "gpu-scheduler", 30*time.Second)
	killAndRecover(ctx, t, c, cs, "scheduler")
	startGang(ctx, t, c, cs, ns, "after-kill", 2, "-sleep=1h")
	stillRunning(ctx, t, cs, ns, "after the faults", serving)
	noPartialGang(ctx, t, cs, ns)
	logPods(ctx, t, cs, "")

	step("the manager and the scheduler recovered from SIGKILL")
	if err := c.Helm("uninstall", "kubenexus", "--wait"); err != nil {
		t.Fatal(err)
	}
	nothingLeft(ctx, t, c, cs)
	step("helm uninstall left nothing")
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
// replicas available on the real node. A pod whose container cannot start or keeps
// failing ends the wait at once, with what the kubelet and the container said.
func waitAvailable(ctx context.Context, t *testing.T, c *demo.Cluster, cs kubernetes.Interface, name string) {
	t.Helper()
	var broken error
	if err := poll(ctx, 4*time.Minute, func() error {
		d := &appsv1.Deployment{}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: demo.Namespace, Name: name}, d); err != nil {
			return err
		}
		if d.Spec.Replicas != nil && d.Status.AvailableReplicas >= *d.Spec.Replicas && d.Status.UpdatedReplicas >= *d.Spec.Replicas {
			return nil
		}
		why := containerTrouble(ctx, cs, d)
		if why.fatal {
			broken = fmt.Errorf("Deployment %s cannot become available: %s", name, strings.TrimPrefix(why.msg, "; "))
			return nil
		}
		return fmt.Errorf("Deployment %s: %d of %d replicas available (%d updated)%s", name, d.Status.AvailableReplicas, ptrOr(d.Spec.Replicas), d.Status.UpdatedReplicas, why.msg)
	}); err != nil {
		t.Fatal(err)
	}
	if broken != nil {
		t.Fatal(broken)
	}
}

type trouble struct {
	msg   string
	fatal bool
}

// containerTrouble says why the Deployment's pods are not ready: each container
// that waits or failed, its reason and message, and its last log lines. A
// container that failed to start or has failed twice is fatal: it will not get
// better by waiting.
func containerTrouble(ctx context.Context, cs kubernetes.Interface, d *appsv1.Deployment) trouble {
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return trouble{msg: "; " + err.Error()}
	}
	pods, err := cs.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return trouble{msg: "; " + err.Error()}
	}
	var out trouble
	for _, p := range pods.Items {
		// What the kubelet reported about the pod: a sandbox or volume it cannot
		// set up does not show in the container's state.
		events, err := cs.CoreV1().Events(p.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(p.UID) + ",type=Warning"})
		if err == nil {
			for _, e := range events.Items {
				switch e.Reason {
				case "FailedCreatePodSandBox", "FailedMount", "Failed", "BackOff", "Unhealthy":
					out.msg += fmt.Sprintf("; pod %s: %s (%d times): %s", p.Name, e.Reason, e.Count, e.Message)
					if e.Count >= 3 && e.Reason != "BackOff" && e.Reason != "Unhealthy" {
						out.fatal = true
					}
				}
			}
		}
		for _, s := range p.Status.ContainerStatuses {
			var reason, msg string
			switch {
			case s.State.Waiting != nil && s.State.Waiting.Reason != "ContainerCreating":
				reason, msg = s.State.Waiting.Reason, s.State.Waiting.Message
			case s.State.Terminated != nil:
				reason, msg = s.State.Terminated.Reason, s.State.Terminated.Message
			}
			if s.LastTerminationState.Terminated != nil && s.LastTerminationState.Terminated.ExitCode != 0 {
				last := s.LastTerminationState.Terminated
				msg += fmt.Sprintf(" (last run exited %d: %s %s)", last.ExitCode, last.Reason, strings.TrimSpace(last.Message))
			}
			if reason == "" && s.State.Running != nil && !s.Ready {
				reason = "running, not ready"
			}
			if reason == "" && s.RestartCount == 0 {
				continue
			}
			out.msg += fmt.Sprintf("; pod %s container %s: %s %s, %d restarts", p.Name, s.Name, reason, strings.TrimSpace(msg), s.RestartCount)
			if logs := logTail(ctx, cs, p, s.Name, s.RestartCount > 0); logs != "" {
				out.msg += fmt.Sprintf(", its log ends: %q", logs)
			}
			switch reason {
			case "RunContainerError", "CreateContainerError", "CreateContainerConfigError", "StartError", "ErrImageNeverPull", "InvalidImageName":
				out.fatal = true
			}
			if s.RestartCount >= 2 {
				out.fatal = true
			}
		}
	}
	return out
}

// logTail is the last few distinct messages of a container's log (its previous
// run's with previous): the last line of each message (a JSON log line's "msg"),
// newest last, but the health checks' own failures, which say nothing of the cause.
func logTail(ctx context.Context, cs kubernetes.Interface, p corev1.Pod, container string, previous bool) string {
	raw, err := cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: container, Previous: previous, TailLines: ptr.To(int64(300))}).DoRaw(ctx)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	seen := map[string]bool{}
	var out []string
	for i := len(lines) - 1; i >= 0 && len(out) < 4; i-- {
		l := lines[i]
		var entry struct {
			Msg string `json:"msg"`
		}
		key := l
		if json.Unmarshal([]byte(l), &entry) == nil && entry.Msg != "" {
			key = entry.Msg
		}
		if seen[key] || strings.Contains(l, "healthz check failed") {
			continue
		}
		seen[key] = true
		if len(l) > 500 {
			l = l[:500] + "…"
		}
		out = append([]string{l}, out...)
	}
	return strings.Join(out, "\n")
}

// schedulerConfigHash is the configuration hash of the scheduler Deployment's pods.
func schedulerConfigHash(ctx context.Context, t *testing.T, c *demo.Cluster) string {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: demo.Namespace, Name: render.Name}, d); err != nil {
		t.Fatal(err)
	}
	return d.Spec.Template.Annotations[render.ConfigHashAnnotation]
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
	return demo.WaitFor(ctx, timeout, f)
}
