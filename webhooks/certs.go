package webhooks

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
)

// The rotator keeps its CA and serving certificate in one Secret and injects the CA
// into the two webhook configurations, by name. It may write only that Secret; its
// cache lists and watches the namespace's Secrets (cert-controller builds the cache
// without a field selector, and RBAC limits a list by name only with one).
// +kubebuilder:rbac:groups="",namespace=system,resources=secrets,verbs=list;watch
// +kubebuilder:rbac:groups="",namespace=system,resources=secrets,verbs=get;update;patch,resourceNames=kubenexus-webhook-server-cert
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations;mutatingwebhookconfigurations,verbs=get;list;watch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations;mutatingwebhookconfigurations,verbs=update;patch,resourceNames={"kubenexus-validating","kubenexus-pod-mutating"}

// Names of the webhook configurations in config/webhook.
const (
	ValidatingConfigName = "kubenexus-validating"
	MutatingConfigName   = "kubenexus-pod-mutating"
)

// CertOptions configure the self-managed serving certificate of the webhooks.
type CertOptions struct {
	// Namespace and SecretName locate the Secret holding the CA and the certificate.
	Namespace  string
	SecretName string
	// ServiceName is the webhook Service; the certificate is issued for
	// <ServiceName>.<Namespace>.svc.
	ServiceName string
	// CertDir is where the webhook server reads tls.crt and tls.key (the Secret's
	// mount).
	CertDir string
	// ValidatingConfig and MutatingConfig name the webhook configurations whose
	// caBundle the rotator keeps current.
	ValidatingConfig string
	MutatingConfig   string
}

// AddCertRotator generates and rotates the webhooks' CA and serving certificate
// (cert-controller) and closes ready once the certificate is on disk and the CA is
// injected. Without it (cert-manager, or certificates managed elsewhere), close
// ready yourself.
func AddCertRotator(mgr ctrl.Manager, opts CertOptions, ready chan struct{}) error {
	if opts.Namespace == "" || opts.SecretName == "" || opts.ServiceName == "" {
		return errors.New("certificate rotation needs a namespace, a secret name and a service name")
	}
	return rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey:      types.NamespacedName{Namespace: opts.Namespace, Name: opts.SecretName},
		CertDir:        opts.CertDir,
		CAName:         "kubenexus-webhook-ca",
		CAOrganization: "kubenexus",
		DNSName:        fmt.Sprintf("%s.%s.svc", opts.ServiceName, opts.Namespace),
		ExtraDNSNames:  []string{fmt.Sprintf("%s.%s.svc.cluster.local", opts.ServiceName, opts.Namespace)},
		IsReady:        ready,
		Webhooks: []rotator.WebhookInfo{
			{Name: opts.ValidatingConfig, Type: rotator.Validating},
			{Name: opts.MutatingConfig, Type: rotator.Mutating},
		},
		// Every replica must serve with the current certificate, leader or not.
		RequireLeaderElection: false,
		EnableReadinessCheck:  true,
	})
}

// ReadyCheck reports ready only once the certificates are in place and the webhook
// server serves: a replica without them must not receive admission traffic. While
// the rotator's certificate is not in certDir, the check says so, naming the file
// and the Secret that must be mounted there (opts), and logs it when the reason
// changes and every minute while it lasts: the kubelet's probe event shows only
// the status code.
func ReadyCheck(mgr ctrl.Manager, certsReady <-chan struct{}, opts CertOptions) healthz.Checker {
	log := ctrl.Log.WithName("webhooks")
	var (
		mu     sync.Mutex
		last   string
		logged time.Time
	)
	return func(req *http.Request) error {
		err := notReady(mgr, certsReady, opts, req)
		reason := ""
		if err != nil {
			reason = err.Error()
		}
		mu.Lock()
		defer mu.Unlock()
		if reason != "" && (reason != last || time.Since(logged) >= time.Minute) {
			log.Info("Webhooks not ready", "reason", reason)
			logged = time.Now()
		}
		last = reason
		return err
	}
}

func notReady(mgr ctrl.Manager, certsReady <-chan struct{}, opts CertOptions, req *http.Request) error {
	select {
	case <-certsReady:
	default:
		crt := filepath.Join(opts.CertDir, "tls.crt")
		if _, err := os.Stat(crt); err != nil {
			return fmt.Errorf("webhook certificates are not ready: %s does not exist yet (the certificate rotator writes Secret %s/%s; it must be mounted at %s)",
				crt, opts.Namespace, opts.SecretName, opts.CertDir)
		}
		return errors.New("webhook certificates are not ready: the certificate rotator has not injected the CA yet")
	}
	return mgr.GetWebhookServer().StartedChecker()(req)
}
