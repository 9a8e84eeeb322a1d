package node_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/controllers/kubenexusconfig/render"
	"github.com/kube-nexus/kubenexus/test/e2e/demo"
	testutil "github.com/kube-nexus/kubenexus/test/util"
)

// workloadPod is a pod of the workload image that runs args (-sleep, -exit).
func workloadPod(name, ns string, args ...string) *corev1.Pod {
	return workload(testutil.MakePod(name, ns).Req("cpu", "50m").Obj(), args...)
}

// workload makes p run the workload image with args, never restarted.
func workload(p *corev1.Pod, args ...string) *corev1.Pod {
	p.Spec.RestartPolicy = corev1.RestartPolicyNever
	p.Spec.Containers[0].Image = workloadImage
	p.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
	p.Spec.Containers[0].Args = args
	return p
}

// startGang creates PodGroup name of n members running args and waits until all
// are Running on the real node; it returns the members' UIDs.
func startGang(ctx context.Context, t *testing.T, c *demo.Cluster, cs kubernetes.Interface, ns, name string, n int, args ...string) map[string]types.UID {
	t.Helper()
	if err := c.Client.Create(ctx, testutil.MakePodGroup(name, ns).MinMember(int32(n)).Obj()); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		p := workload(testutil.MakePod(fmt.Sprintf("%s-%d", name, i), ns).PodGroup(name).Req("cpu", "50m").Obj(), args...)
		if err := c.Client.Create(ctx, p); err != nil {
			t.Fatalf("creating %s: %v", p.Name, err)
		}
	}
	uids := map[string]types.UID{}
	if err := poll(ctx, 2*time.Minute, func() error {
		for i := range n {
			got, err := cs.CoreV1().Pods(ns).Get(ctx, fmt.Sprintf("%s-%d", name, i), metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got.Spec.NodeName != demo.NodeName || got.Status.Phase != corev1.PodRunning {
				return fmt.Errorf("gang %s: pod %s on %q, %s; want Running on %s", name, got.Name, got.Spec.NodeName, got.Status.Phase, demo.NodeName)
			}
			uids[got.Name] = got.UID
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return uids
}

// stillRunning fails unless the pods of uids are the same pods, Running with no
// restart.
func stillRunning(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, what string, uids map[string]types.UID) {
	t.Helper()
	for name, uid := range uids {
		got, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("%s: pod %s: %v", what, name, err)
			continue
		}
		restarts := int32(0)
		for _, s := range got.Status.ContainerStatuses {
			restarts += s.RestartCount
		}
		if got.UID != uid || got.Status.Phase != corev1.PodRunning || restarts != 0 {
			t.Errorf("%s: pod %s is %s (uid %s, was %s) with %d restarts; want the same pod Running, never restarted", what, name, got.Status.Phase, got.UID, uid, restarts)
		}
	}
}

// runJob creates a Job of parallelism and completions n and waits until it
// completes; it returns its pods as the webhook admitted them.
func runJob(ctx context.Context, t *testing.T, c *demo.Cluster, cs kubernetes.Interface, ns, name string, n int32) []corev1.Pod {
	t.Helper()
	tmpl := workloadPod("", ns, "-sleep=1s", "-exit=0")
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: batchv1.JobSpec{Parallelism: ptr.To(n), Completions: ptr.To(n), BackoffLimit: ptr.To(int32(0)),
			Template: corev1.PodTemplateSpec{Spec: tmpl.Spec}},
	}
	if err := c.Client.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	var pods []corev1.Pod
	if err := poll(ctx, 2*time.Minute, func() error {
		got := &batchv1.Job{}
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(job), got); err != nil {
			return err
		}
		if got.Status.Succeeded != n {
			return fmt.Errorf("Job %s: %d of %d pods succeeded (%d failed, %d active)", name, got.Status.Succeeded, n, got.Status.Failed, got.Status.Active)
		}
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + name})
		if err != nil {
			return err
		}
		pods = list.Items
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if p.Spec.NodeName != demo.NodeName {
			t.Errorf("Job %s: pod %s ran on %q, want %s", name, p.Name, p.Spec.NodeName, demo.NodeName)
		}
		if p.Labels[v1alpha1.LabelWorkloadType] == "" {
			t.Errorf("Job %s: pod %s carries no %s: the webhook did not classify it", name, p.Name, v1alpha1.LabelWorkloadType)
		}
	}
	return pods
}

// scrapeMetrics scrapes the manager's and the scheduler's metrics as Prometheus
// would: through their Services, with a ServiceAccount token bound to the chart's
// kubenexus-metrics-reader; the token of a ServiceAccount without that binding is
// refused. (Two ServiceAccounts: a refusal is cached by the endpoints' authorizers
// for a while, so one token would wait it out after being bound.)
func scrapeMetrics(ctx context.Context, t *testing.T, c *demo.Cluster, cs kubernetes.Interface) {
	t.Helper()
	token := func(name string) string {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: demo.Namespace, Name: name}}
		if err := c.Client.Create(ctx, sa); err != nil {
			t.Fatal(err)
		}
		tr, err := cs.CoreV1().ServiceAccounts(demo.Namespace).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	unbound, bound := token("not-prometheus"), token("prometheus")
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-kubenexus-metrics"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kubenexus-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: demo.Namespace, Name: "prometheus"}},
	}
	if err := c.Client.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	endpoints := map[string]string{"kubenexus-manager-metrics": "controller_runtime_reconcile_total", render.MetricsServiceName: "kubenexus_coscheduling_gangs_scheduled_total"}
	for svc, metric := range endpoints {
		s, err := cs.CoreV1().Services(demo.Namespace).Get(ctx, svc, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		u := ""
		for _, p := range s.Spec.Ports {
			if p.Name == "https-metrics" {
				u = fmt.Sprintf("https://%s:%d/metrics", s.Spec.ClusterIP, p.Port)
			}
		}
		if u == "" {
			t.Fatalf("Service %s has no https-metrics port", svc)
		}
		if err := poll(ctx, time.Minute, func() error {
			if code, _, err := demo.Get(u, unbound); err != nil || code != http.StatusForbidden {
				return fmt.Errorf("%s (%s) with a token not bound to kubenexus-metrics-reader: %d (%v), want 403", svc, u, code, err)
			}
			code, body, err := demo.Get(u, bound)
			if err != nil || code != http.StatusOK {
				return fmt.Errorf("%s (%s) with a token bound to kubenexus-metrics-reader: %d (%v), want 200", svc, u, code, err)
			}
			if !strings.Contains(body, "\n"+metric) {
				return fmt.Errorf("%s: no %s in its metrics", svc, metric)
			}
			return nil
		}); err != nil {
			t.Error(err)
		}
	}
}

// podOf is the one pod of Deployment name in the KubeNexus namespace.
func podOf(ctx context.Context, t *testing.T, cs kubernetes.Interface, component string) corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	if err := poll(ctx, 2*time.Minute, func() error {
		list, err := cs.CoreV1().Pods(demo.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=" + component})
		if err != nil {
			return err
		}
		var live []corev1.Pod
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil {
				live = append(live, p)
			}
		}
		if len(live) != 1 {
			return fmt.Errorf("%d %s pods, want 1", len(live), component)
		}
		pod = live[0]
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return pod
}

// killAndRecover SIGKILLs the container of the component's pod through the
// runtime and waits until the kubelet has restarted it and it is Ready again.
func killAndRecover(ctx context.Context, t *testing.T, c *demo.Cluster, cs kubernetes.Interface, component string) {
	t.Helper()
	pod := podOf(ctx, t, cs, component)
	if len(pod.Status.ContainerStatuses) == 0 {
		t.Fatalf("%s pod %s has no container status", component, pod.Name)
	}
	before := pod.Status.ContainerStatuses[0]
	if err := c.Node().KillContainer(before.ContainerID); err != nil {
		t.Fatalf("killing %s's container: %v", component, err)
	}
	if err := poll(ctx, 3*time.Minute, func() error {
		got, err := cs.CoreV1().Pods(demo.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s := got.Status.ContainerStatuses[0]
		if s.RestartCount <= before.RestartCount || !s.Ready {
			return fmt.Errorf("%s pod %s after SIGKILL: %d restarts (was %d), ready %v; want restarted by the kubelet and Ready", component, pod.Name, s.RestartCount, before.RestartCount, s.Ready)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// webhookServes waits until a pod created in ns is admitted by the pod webhook
// (classified, sent to scheduler), then deletes it.
func webhookServes(ctx context.Context, t *testing.T, c *demo.Cluster, ns, scheduler string, within time.Duration) {
	t.Helper()
	var last error
	for i := 0; ; i++ {
		p := workloadPod(fmt.Sprintf("probe-%d", i), ns, "-sleep=0s")
		err := c.Client.Create(ctx, p)
		if err == nil && p.Spec.SchedulerName == scheduler && p.Labels[v1alpha1.LabelWorkloadType] != "" {
			_ = c.Client.Delete(ctx, p)
			return
		}
		if err == nil {
			_ = c.Client.Delete(ctx, p)
			t.Fatalf("pod %s admitted without the webhook's changes: schedulerName %q, labels %v", p.Name, p.Spec.SchedulerName, p.Labels)
		}
		last = err
		if within -= time.Second; within <= 0 {
			t.Fatalf("the pod webhook did not serve again in time: %v", last)
		}
		time.Sleep(time.Second)
	}
}

// noPartialGang fails when a gang of ns has some members bound and others not.
func noPartialGang(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bound, unbound := map[string]int{}, map[string]int{}
	for _, p := range pods.Items {
		m, ok, err := gang.Of(&p)
		if err != nil || !ok {
			continue
		}
		g := m.Key.String()
		if p.Spec.NodeName != "" {
			bound[g]++
		} else {
			unbound[g]++
		}
	}
	for g, n := range unbound {
		if bound[g] > 0 {
			t.Errorf("gang %s is partly bound: %d members bound, %d not", g, bound[g], n)
		}
	}
}

// nothingLeft: after helm uninstall no KubeNexus pod, webhook configuration or
// lease is left.
func nothingLeft(ctx context.Context, t *testing.T, c *demo.Cluster, cs kubernetes.Interface) {
	t.Helper()
	if err := poll(ctx, 2*time.Minute, func() error {
		pods, err := cs.CoreV1().Pods(demo.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(pods.Items) > 0 {
			return fmt.Errorf("%d pods left in %s after helm uninstall (first: %s)", len(pods.Items), demo.Namespace, pods.Items[0].Name)
		}
		leases, err := cs.CoordinationV1().Leases(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, l := range leases.Items {
			// (kube-node-lease holds the node's own heartbeat.)
			if l.Namespace != corev1.NamespaceNodeLease && (l.Namespace == demo.Namespace || strings.Contains(l.Name, "kubenexus")) {
				return fmt.Errorf("lease %s/%s left after helm uninstall", l.Namespace, l.Name)
			}
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	if n, err := c.WebhookConfigurations(ctx); err != nil || n != 0 {
		t.Errorf("%d webhook configurations left after helm uninstall (%v)", n, err)
	}
}
