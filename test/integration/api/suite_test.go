// Package api_test checks the KubeNexus CRDs on a real kube-apiserver: schema and
// CEL validation, defaulting, and the shipped samples.
package api_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kube-nexus/kubenexus/controllers"
	"github.com/kube-nexus/kubenexus/test/util/testenv"
)

var (
	ctx     context.Context
	cancel  context.CancelFunc
	testEnv *envtest.Environment
	// k8sClient validates fields strictly, as kubectl does by default: unknown
	// fields are errors rather than silently pruned.
	k8sClient client.Client
)

func TestAPI(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "API validation suite")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.Background())
	Expect(testenv.RequireAssets()).To(Succeed())

	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{testenv.CRDPath()},
		ErrorIfCRDPathMissing: true,
		CRDInstallOptions:     testenv.CRDInstall(),
	}
	cfg, err := testEnv.Start()
	Expect(err).NotTo(HaveOccurred())

	c, err := client.New(cfg, client.Options{Scheme: controllers.NewScheme()})
	Expect(err).NotTo(HaveOccurred())
	k8sClient = client.WithFieldValidation(c, metav1.FieldValidationStrict)
})

var _ = AfterSuite(func() {
	cancel()
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})

// newNamespace creates a namespace with a generated name for one test.
func newNamespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "api-"}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	return ns.Name
}
