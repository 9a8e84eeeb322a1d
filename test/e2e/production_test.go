package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/controllers/kubenexusconfig/render"
	"github.com/kube-nexus/kubenexus/test/e2e/demo"
	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/testenv"
)

// TestChartProductionMode installs the unmodified chart with its defaults, in one
// `helm install`, with Helm v3 and with Helm v4: the webhooks answer through the
// kubenexus-webhook-service Service with the certificate the manager's rotator
// issued, the chart's KubeNexusConfig brings up the scheduler, a gang of pods that
// name no scheduler binds, `helm upgrade` rolls the scheduler, and `helm uninstall`
// leaves no webhook that holds up pods (see demo.UpProduction for what stands in
// for the pods of the manager and the scheduler).
func TestChartProductionMode(t *testing.T) {
	root := testenv.RepoRoot()
	bin := filepath.Join(root, "bin")
	for _, b := range []string{"kubenexus-manager", "kubenexus-scheduler", "k8s/etcd", "k8s/kube-apiserver", "k8s/kube-controller-manager", "k8s/helm", "k8s/helm4"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			t.Fatalf("%s is missing: `make test` builds it (make build; hack/build-tools.sh etcd kube-apiserver kube-controller-manager helm helm4)", b)
		}
	}
	for _, helm := range []string{"helm", "helm4"} {
		t.Run(helm, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			dir := t.TempDir()
			if d := os.Getenv("E2E_LOG_DIR"); d != "" {
				dir = filepath.Join(d, "production-"+helm)
			}
			c, err := demo.UpProduction(ctx, demo.Options{Root: root, Bin: bin, Dir: dir, Log: testenv.LogWriter{T: t}}, filepath.Join(bin, "k8s", helm))
			defer func() {
				if t.Failed() {
					t.Log(demo.LogTails(dir, 3000, "kubenexus-manager", "kubenexus-scheduler-1", "kubenexus-scheduler-2", "kube-controller-manager"))
				}
			}()
			if err != nil {
				t.Fatal(err)
			}
			defer c.Down()
			t.Logf("installed with %s", c.HelmVersion())
			productionFlow(ctx, t, c)
		})
	}
}

const prodNS = "prod-team"

func productionFlow(ctx context.Context, t *testing.T, c *demo.Cluster) {
	// Three Ready nodes of 4 CPUs. No node lifecycle controller runs (no kubelets),
	// so the not-ready taint that admission puts on a new node is lifted here.
	for i := range 3 {
		name := fmt.Sprintf("node-%d", i)
		if err := c.Client.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatal(err)
		}
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			node := &corev1.Node{}
			if err := c.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
				return err
			}
			node.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")}
			node.Status.Capacity = node.Status.Allocatable
			node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
			if err := c.Client.Status().Update(ctx, node); err != nil {
				return err
			}
			node.Spec.Taints = nil
			return c.Client.Update(ctx, node)
		}); err != nil {
			t.Fatalf("making node %s Ready: %v", name, err)
		}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: prodNS, Labels: map[string]string{"kubenexus.io/enabled": "true"}}}
	if err := c.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}

	// The pod webhook answers through the Service: pods that name no scheduler are
	// sent to kubenexus-scheduler and classified, and the gang binds whole.
	gangBinds(ctx, t, c, "train", 3, "kubenexus-scheduler")

	// The validating webhook answers through the Service too.
	tier := func(name string) *v1alpha1.HardwareTier {
		return &v1alpha1.HardwareTier{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.HardwareTierSpec{
			Rank: 1, NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"example.com/pool": "a"}}, AllowedTenantTiers: []v1alpha1.TenantTier{v1alpha1.TenantTierGold},
		}}
	}
	if err := c.Client.Create(ctx, tier("pool-a")); err != nil {
		t.Fatalf("creating HardwareTier pool-a: %v", err)
	}
	err := c.Client.Create(ctx, tier("pool-a-again"))
	if err == nil || !strings.Contains(err.Error(), "is the same as HardwareTier pool-a's") {
		t.Errorf("a second HardwareTier with pool-a's nodeSelector: got %v, want the validating webhook's refusal naming pool-a", err)
	}

	checkMetrics(ctx, t, c)

	// helm upgrade: a value that changes the scheduler's configuration (its name)
	// rolls it, and the webhook sends new pods to the new name.
	before := c.SchedulerConfigHash
	if err := c.Helm("upgrade", "kubenexus", c.Chart(), "--reuse-values", "--set", "config.schedulerReplicas=2", "--set", "config.schedulerName=gpu-scheduler"); err != nil {
		t.Fatal(err)
	}
	if err := poll(time.Minute, func() error {
		d := &appsv1.Deployment{}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: demo.Namespace, Name: render.Name}, d); err != nil {
			return err
		}
		if *d.Spec.Replicas != 2 || d.Spec.Template.Annotations[render.ConfigHashAnnotation] == before {
			return fmt.Errorf("scheduler Deployment: %d replicas, configuration %s; want 2 and another configuration than %s after helm upgrade",
				*d.Spec.Replicas, d.Spec.Template.Annotations[render.ConfigHashAnnotation], before)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Two scheduler replicas: the operator keeps one through a drain.
	if err := poll(time.Minute, func() error {
		pdb := &policyv1.PodDisruptionBudget{}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: demo.Namespace, Name: render.Name}, pdb); err != nil {
			return fmt.Errorf("the scheduler's PodDisruptionBudget with 2 replicas: %w", err)
		}
		if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 {
			return fmt.Errorf("the scheduler's PodDisruptionBudget: minAvailable %v, want 1", pdb.Spec.MinAvailable)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	if err := c.RestartScheduler(ctx); err != nil {
		t.Fatal(err)
	}
	gangBinds(ctx, t, c, "train-after-upgrade", 2, "gpu-scheduler")

	// helm uninstall: no webhook is left to hold up pods, the CRDs and the users'
	// objects stay, and what the operator applied goes with the KubeNexusConfig.
	if err := c.Helm("uninstall", "kubenexus", "--wait"); err != nil {
		t.Fatal(err)
	}
	if n, err := c.WebhookConfigurations(ctx); err != nil || n != 0 {
		t.Errorf("%d webhook configurations left after helm uninstall (%v)", n, err)
	}
	plain := testutil.MakePod("after-uninstall", prodNS).Req("cpu", "100m").Obj()
	if err := c.Client.Create(ctx, plain); err != nil {
		t.Errorf("creating a pod in an opted-in namespace after helm uninstall: %v", err)
	} else if plain.Spec.SchedulerName != corev1.DefaultSchedulerName {
		t.Errorf("a pod created after helm uninstall was sent to %s", plain.Spec.SchedulerName)
	}
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	if err := c.Client.Get(ctx, client.ObjectKey{Name: "podgroups.scheduling.kubenexus.io"}, crd); err != nil {
		t.Errorf("the PodGroup CRD is gone after helm uninstall: %v", err)
	}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: prodNS, Name: "train"}, &v1alpha1.PodGroup{}); err != nil {
		t.Errorf("PodGroup train is gone after helm uninstall: %v", err)
	}
	if err := poll(2*time.Minute, func() error {
		for _, obj := range []client.Object{
			&v1alpha1.KubeNexusConfig{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.DefaultConfigName}},
			&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: demo.Namespace, Name: render.Name}},
			&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: demo.Namespace, Name: render.Name}},
		} {
			if err := c.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
				return fmt.Errorf("%T %s still exists after helm uninstall (%v)", obj, obj.GetName(), err)
			}
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
}

// gangBinds creates PodGroup name with n members that name no scheduler, checks
// that the pod webhook sent them to scheduler and classified them, and waits until
// every member is bound.
func gangBinds(ctx context.Context, t *testing.T, c *demo.Cluster, name string, n int, scheduler string) {
	t.Helper()
	if err := c.Client.Create(ctx, testutil.MakePodGroup(name, prodNS).MinMember(int32(n)).Obj()); err != nil {
		t.Fatal(err)
	}
	var pods []*corev1.Pod
	for i := range n {
		p := testutil.MakePod(fmt.Sprintf("%s-%d", name, i), prodNS).PodGroup(name).Req("cpu", "1").Obj()
		if err := c.Client.Create(ctx, p); err != nil {
			t.Fatalf("creating %s through the pod webhook: %v", p.Name, err)
		}
		if p.Spec.SchedulerName != scheduler || p.Labels[v1alpha1.LabelWorkloadType] == "" {
			t.Errorf("pod %s: schedulerName %q, %s=%q; want the pod webhook's %s and a workload type",
				p.Name, p.Spec.SchedulerName, v1alpha1.LabelWorkloadType, p.Labels[v1alpha1.LabelWorkloadType], scheduler)
		}
		pods = append(pods, p)
	}
	if err := poll(2*time.Minute, func() error {
		for _, p := range pods {
			got := &corev1.Pod{}
			if err := c.Client.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
				return err
			}
			if got.Spec.NodeName == "" {
				return fmt.Errorf("gang %s: pod %s is not bound", name, p.Name)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// checkMetrics: the manager's and the scheduler's metrics are served over HTTPS only
// to a client with a token whose identity may get /metrics — the chart's
// ClusterRole kubenexus-metrics-reader, bound here to a ServiceAccount standing in
// for Prometheus (what the chart's ServiceMonitors scrape with).
func checkMetrics(ctx context.Context, t *testing.T, c *demo.Cluster) {
	t.Helper()
	endpoints := []struct {
		name, url string
		// anonymous is the answer to a request without a token: the manager
		// refuses to authenticate it, kube-scheduler's delegated authentication
		// lets it through as system:anonymous and authorization refuses it.
		anonymous int
		want      []string
	}{
		{"manager", c.ManagerMetricsURL, http.StatusUnauthorized, []string{"controller_runtime_reconcile_total"}},
		{"scheduler", c.SchedulerMetricsURL, http.StatusForbidden, []string{"scheduler_schedule_attempts_total", "kubenexus_coscheduling_gangs_scheduled_total"}},
	}
	for _, e := range endpoints {
		if code, _, err := demo.Get(e.url, ""); err != nil || code != e.anonymous {
			t.Errorf("%s metrics without a token: %d (%v), want %d", e.name, code, err, e.anonymous)
		}
	}
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: demo.Namespace, Name: "prometheus"}}
	if err := c.Client.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(demo.Namespace).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	token := tr.Status.Token
	for _, e := range endpoints {
		if code, _, err := demo.Get(e.url, token); err != nil || code != http.StatusForbidden {
			t.Errorf("%s metrics with a token not bound to kubenexus-metrics-reader: %d (%v), want 403", e.name, code, err)
		}
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-kubenexus-metrics"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kubenexus-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: demo.Namespace, Name: sa.Name}},
	}
	if err := c.Client.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	// The authorizers cache decisions briefly: poll.
	for _, e := range endpoints {
		if err := poll(time.Minute, func() error {
			code, body, err := demo.Get(e.url, token)
			if err != nil || code != http.StatusOK {
				return fmt.Errorf("%s metrics with a token bound to kubenexus-metrics-reader: %d (%v), want 200", e.name, code, err)
			}
			for _, m := range e.want {
				if !strings.Contains(body, "\n"+m) {
					return fmt.Errorf("%s metrics with a token bound to kubenexus-metrics-reader: no %s", e.name, m)
				}
			}
			return nil
		}); err != nil {
			t.Error(err)
		}
	}
	if err := c.Client.Delete(ctx, binding); err != nil {
		t.Error(err)
	}
}
