package operator_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/kube-nexus/kubenexus/controllers"
	"github.com/kube-nexus/kubenexus/webhooks"
)

var _ = Describe("Webhook certificates", func() {
	It("are generated, injected and mounted before the manager reports ready", func() {
		const ns = "certs-test"
		Expect(k8sClient.Create(suiteCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		// As config/webhook ships it: an empty Secret for the rotator to fill.
		Expect(k8sClient.Create(suiteCtx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "webhook-cert", Namespace: ns}})).To(Succeed())
		// Webhook configurations of their own, so the suite's webhooks keep envtest's CA.
		rule := admissionregv1.RuleWithOperations{Operations: []admissionregv1.OperationType{admissionregv1.Create},
			Rule: admissionregv1.Rule{APIGroups: []string{"certs.example.com"}, APIVersions: []string{"v1"}, Resources: []string{"widgets"}}}
		svc := &admissionregv1.ServiceReference{Namespace: ns, Name: "webhook-service", Path: ptr.To("/x")}
		none := admissionregv1.SideEffectClassNone
		Expect(k8sClient.Create(suiteCtx, &admissionregv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "certs-test-validating"},
			Webhooks: []admissionregv1.ValidatingWebhook{{Name: "v.certs.example.com", ClientConfig: admissionregv1.WebhookClientConfig{Service: svc},
				Rules: []admissionregv1.RuleWithOperations{rule}, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}}},
		})).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, &admissionregv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "certs-test-mutating"},
			Webhooks: []admissionregv1.MutatingWebhook{{Name: "m.certs.example.com", ClientConfig: admissionregv1.WebhookClientConfig{Service: svc},
				Rules: []admissionregv1.RuleWithOperations{rule}, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}}},
		})).To(Succeed())

		certDir, err := os.MkdirTemp("", "kubenexus-certs-")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(os.RemoveAll, certDir)
		l, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		port := l.Addr().(*net.TCPAddr).Port
		Expect(l.Close()).To(Succeed())

		mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
			Scheme:                 controllers.NewScheme(),
			Metrics:                metricsserver.Options{BindAddress: "0"},
			HealthProbeBindAddress: "0",
			Controller:             ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
			WebhookServer:          webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: certDir}),
		})
		Expect(err).NotTo(HaveOccurred())
		ready := make(chan struct{})
		certs := webhooks.CertOptions{
			Namespace: ns, SecretName: "webhook-cert", ServiceName: "webhook-service", CertDir: certDir,
			ValidatingConfig: "certs-test-validating", MutatingConfig: "certs-test-mutating",
		}
		Expect(webhooks.AddCertRotator(mgr, certs, ready)).To(Succeed())
		readyz := webhooks.ReadyCheck(mgr, ready, certs)
		req, _ := http.NewRequest(http.MethodGet, "/readyz", nil)
		// Before the Secret is projected, the check names the file and the Secret.
		Expect(readyz(req)).To(MatchError(And(ContainSubstring("certificates are not ready"),
			ContainSubstring(filepath.Join(certDir, "tls.crt")+" does not exist yet"), ContainSubstring("Secret "+ns+"/webhook-cert"))))

		ctx, cancel := context.WithCancel(suiteCtx)
		done := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			Expect(mgr.Start(ctx)).To(Succeed())
		}()
		DeferCleanup(func() { cancel(); Eventually(done).WithTimeout(30 * time.Second).Should(BeClosed()) })

		// Play the kubelet: project the Secret into the mounted directory.
		go func() {
			defer GinkgoRecover()
			for ctx.Err() == nil {
				sec := &corev1.Secret{}
				if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "webhook-cert"}, sec); err == nil && len(sec.Data["tls.crt"]) > 0 {
					for name, data := range sec.Data {
						_ = os.WriteFile(filepath.Join(certDir, name), data, 0o600)
					}
					return
				}
				time.Sleep(200 * time.Millisecond)
			}
		}()

		Eventually(ready).WithTimeout(60 * time.Second).Should(BeClosed())
		secret := &corev1.Secret{}
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: "webhook-cert"}, secret)).To(Succeed())
		Expect(secret.Data).To(HaveKey("ca.crt"))
		Expect(secret.Data).To(HaveKey("tls.crt"))
		Expect(secret.Data).To(HaveKey("tls.key"))
		crt, err := os.ReadFile(filepath.Join(certDir, "tls.crt"))
		Expect(err).NotTo(HaveOccurred())
		Expect(crt).To(Equal(secret.Data["tls.crt"]))
		Eventually(func() ([]byte, error) {
			v := &admissionregv1.ValidatingWebhookConfiguration{}
			err := k8sClient.Get(suiteCtx, client.ObjectKey{Name: "certs-test-validating"}, v)
			return v.Webhooks[0].ClientConfig.CABundle, err
		}).Should(Equal(secret.Data["ca.crt"]))
		Eventually(func() ([]byte, error) {
			m := &admissionregv1.MutatingWebhookConfiguration{}
			err := k8sClient.Get(suiteCtx, client.ObjectKey{Name: "certs-test-mutating"}, m)
			return m.Webhooks[0].ClientConfig.CABundle, err
		}).Should(Equal(secret.Data["ca.crt"]))
		// Ready once the webhook server serves with the new certificate.
		Eventually(func() error { return readyz(req) }).WithTimeout(20 * time.Second).Should(Succeed())
	})
})
