// Package kueue_test runs the manager beside a real kube-apiserver with Kueue's
// CRDs installed and checks the placement-feasibility AdmissionCheck's decisions as
// Kueue would read them from Workload status.
package kueue_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kube-nexus/kubenexus/api/kueuecompat"
	"github.com/kube-nexus/kubenexus/controllers"
	"github.com/kube-nexus/kubenexus/test/util/testenv"
)

var (
	suiteCtx    context.Context
	suiteCancel context.CancelFunc
	testEnv     *envtest.Environment
	k8sClient   client.Client
)

func TestKueue(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Kueue integration suite")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	suiteCtx, suiteCancel = context.WithCancel(context.Background())
	Expect(testenv.RequireAssets()).To(Succeed())
	kueueCRDs, err := testenv.KueueCRDs()
	Expect(err).NotTo(HaveOccurred())
	testEnv = &envtest.Environment{CRDDirectoryPaths: []string{testenv.CRDPath(), kueueCRDs}, ErrorIfCRDPathMissing: true, CRDInstallOptions: testenv.CRDInstall()}
	cfg, err := testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	k8sClient, err = client.New(cfg, client.Options{Scheme: controllers.NewScheme()})
	Expect(err).NotTo(HaveOccurred())
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 controllers.NewScheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  controllers.CacheOptions("kubenexus-system"),
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(controllers.Setup(mgr, controllers.Options{PodGroupGCGrace: 2 * time.Second, Namespace: "kubenexus-system", SchedulerImage: "kubenexus-scheduler:test",
		MultiKueueDispatcher: true})).To(Succeed())
	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(suiteCtx)).To(Succeed())
	}()
})

// startLegacy starts a second API server with Kueue v0.14.8's CRDs (kueue.x-k8s.io
// v1beta1 only) and a second manager beside it, stopped with the suite, and returns
// a client that speaks v1beta2 to the test through kueuecompat, as KubeNexus does.
func startLegacy() client.Client {
	GinkgoHelper()
	crds, err := testenv.LegacyKueueCRDs()
	Expect(err).NotTo(HaveOccurred())
	env := &envtest.Environment{CRDDirectoryPaths: []string{testenv.CRDPath(), crds}, ErrorIfCRDPathMissing: true, CRDInstallOptions: testenv.CRDInstall()}
	cfg, err := env.Start()
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
	c, err := client.New(cfg, client.Options{Scheme: controllers.NewScheme()})
	Expect(err).NotTo(HaveOccurred())
	served, ok := kueuecompat.Served(c.RESTMapper())
	Expect(ok).To(BeTrue())
	Expect(served).To(Equal(kueuecompat.Legacy), "Kueue v0.14.8's CRDs serve v1beta1 only")
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 controllers.NewScheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  controllers.CacheOptions("kubenexus-system"),
		// The suite's first manager registered the same controller names.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(controllers.Setup(mgr, controllers.Options{PodGroupGCGrace: 2 * time.Second, Namespace: "kubenexus-system", SchedulerImage: "kubenexus-scheduler:test"})).To(Succeed())
	ctx, cancel := context.WithCancel(suiteCtx)
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	DeferCleanup(func() { cancel(); <-done })
	return kueuecompat.Client(c, served)
}

var _ = AfterSuite(func() {
	suiteCancel()
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})
