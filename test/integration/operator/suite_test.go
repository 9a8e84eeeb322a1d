// Package operator_test runs the KubeNexus manager — its controllers and admission
// webhooks — against a real kube-apiserver and checks what it deploys and reports.
package operator_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/kube-nexus/kubenexus/controllers"
	"github.com/kube-nexus/kubenexus/test/util/testenv"
	"github.com/kube-nexus/kubenexus/webhooks"
)

const (
	namespace      = "kubenexus-system"
	schedulerImage = "ghcr.io/kube-nexus/kubenexus-scheduler:test"
)

var (
	suiteCtx    context.Context
	suiteCancel context.CancelFunc
	testEnv     *envtest.Environment
	k8sClient   client.Client
	adminConfig []byte
	// reconcilePeriod is the ResourceReservation controller's re-check period:
	// "within two reconcile periods" assertions are measured against it.
	reconcilePeriod = 3 * time.Second
	stopManager     context.CancelFunc
	managerDone     chan struct{}
	restConfig      *rest.Config
)

func TestOperator(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Operator integration suite")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	// A reconcile's round trip through the API server takes longer than Gomega's
	// default second on a loaded 2-core machine (CI): the first specs failed there
	// waiting for a status the controller wrote a moment later.
	SetDefaultEventuallyTimeout(10 * time.Second)
	suiteCtx, suiteCancel = context.WithCancel(context.Background())
	Expect(testenv.RequireAssets()).To(Succeed())
	// scheduler-plugins' own PodGroup CRD too: the manager keeps those PodGroups' status;
	// and LeaderWorkerSet's, KubeRay's and JobSet's own (their controllers run in the e2e).
	sigsCRD, err := testenv.SchedulerPluginsCRD()
	Expect(err).NotTo(HaveOccurred())
	lwsCRD, err := testenv.LeaderWorkerSetCRD()
	Expect(err).NotTo(HaveOccurred())
	rayCRDs, err := testenv.RayCRDs()
	Expect(err).NotTo(HaveOccurred())
	jobSetCRD, err := testenv.JobSetCRD()
	Expect(err).NotTo(HaveOccurred())
	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     append([]string{testenv.CRDPath(), filepath.Join(testenv.RepoRoot(), "test", "testdata", "crds"), sigsCRD, lwsCRD, jobSetCRD}, rayCRDs...),
		ErrorIfCRDPathMissing: true,
		CRDInstallOptions:     testenv.CRDInstall(),
		// The webhook configurations `make manifests` generates, pointed at the
		// manager's webhook server in this process.
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			Paths: []string{
				filepath.Join(testenv.RepoRoot(), "config", "webhook", "manifests.yaml"),
				filepath.Join(testenv.RepoRoot(), "config", "webhook", "pod_webhook.yaml"),
			},
		},
	}
	cfg, err := testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	restConfig = cfg
	admin, err := testEnv.AddUser(envtest.User{Name: "operator-admin", Groups: []string{"system:masters"}}, rest.CopyConfig(cfg))
	Expect(err).NotTo(HaveOccurred())
	adminConfig, err = admin.KubeConfig()
	Expect(err).NotTo(HaveOccurred())

	k8sClient, err = client.New(cfg, client.Options{Scheme: controllers.NewScheme()})
	Expect(err).NotTo(HaveOccurred())
	Expect(k8sClient.Create(suiteCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})).To(Succeed())
	startManager()
})

// startManager runs the manager as cmd/manager wires it: the same cache options,
// controllers and webhooks.
func startManager() {
	wio := &testEnv.WebhookInstallOptions
	// Behind the same limits and TLS settings as cmd/manager's webhook server (its
	// flags' defaults).
	tlsConfigs, err := webhooks.TLSOptions{MinVersion: "1.2"}.TLSConfigs()
	Expect(err).NotTo(HaveOccurred())
	webhookServer := webhooks.NewLimitedServer(webhook.NewServer(webhook.Options{Host: wio.LocalServingHost, Port: wio.LocalServingPort, CertDir: wio.LocalServingCertDir, TLSOpts: tlsConfigs}), webhooks.DefaultLimits())
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:                 controllers.NewScheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  controllers.CacheOptions(namespace),
		// A spec may stop the manager and start a second one in this process with
		// the same controller names (metrics are process-global).
		Controller:    ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
		WebhookServer: webhookServer,
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(controllers.Setup(mgr, controllers.Options{
		PodGroupGCGrace:   2 * time.Second,
		Namespace:         namespace,
		SchedulerImage:    schedulerImage,
		ReservationResync: reconcilePeriod,
	})).To(Succeed())
	Expect(webhooks.Setup(mgr, webhooks.Options{Namespace: namespace})).To(Succeed())
	ctx, cancel := context.WithCancel(suiteCtx)
	stopManager = cancel
	managerDone = make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(managerDone)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	// The controllers reconcile once the manager's cache has synced.
	Expect(mgr.GetCache().WaitForCacheSync(ctx)).To(BeTrue())
	// The webhook server is up once it accepts TLS connections.
	Eventually(func() error {
		return webhookReachable(wio.LocalServingHost, wio.LocalServingPort)
	}).WithTimeout(20 * time.Second).Should(Succeed())
}

var _ = AfterSuite(func() {
	if suiteCancel != nil {
		suiteCancel()
	}
	if managerDone != nil {
		Eventually(managerDone).WithTimeout(30 * time.Second).Should(BeClosed())
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})

func webhookReachable(host string, port int) error {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", fmt.Sprintf("%s:%d", host, port),
		&tls.Config{InsecureSkipVerify: true}) //nolint:gosec // reachability probe of the local test server
	if err != nil {
		return err
	}
	return conn.Close()
}
