// Command kubenexus-manager is the KubeNexus operator: it reconciles the KubeNexus
// API objects and serves the pod webhooks.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/kube-nexus/kubenexus/cmd/internal/version"
	"github.com/kube-nexus/kubenexus/controllers"
	"github.com/kube-nexus/kubenexus/controllers/estimatedstart"
	"github.com/kube-nexus/kubenexus/controllers/multikueue"
	"github.com/kube-nexus/kubenexus/webhooks"
)

// options are the manager's command-line flags.
type options struct {
	metricsAddr    string
	metricsCertDir string
	metricsSecure  bool
	probeAddr      string
	leaderElect    bool
	leaderElectNS  string
	pgGCGrace      time.Duration
	namespace      string
	schedImage     string
	webhookPort    int
	webhookCerts   string
	webhooksOn     bool
	certRotation   bool
	certSecret     string
	webhookSvc     string
	rrResync       time.Duration
	whInflight     int64
	whMaxWait      time.Duration
	estimate       time.Duration
	mkDispatcher   bool
	kueueNS        string
	tls            webhooks.TLSOptions
	showVersion    bool
	zap            zap.Options
}

// bindFlags binds the manager's flags to fs.
func bindFlags(fs *flag.FlagSet) *options {
	o := &options{}
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8443", "Address the metrics endpoint binds to; 0 disables it.")
	fs.StringVar(&o.metricsCertDir, "metrics-cert-dir", "", "Directory holding the metrics server's tls.crt and tls.key (empty: a self-signed certificate generated in memory).")
	fs.BoolVar(&o.metricsSecure, "metrics-secure", true, "Serve metrics over HTTPS (a self-signed certificate) to clients that authenticate with a bearer token the API server accepts and may get the non-resource URL /metrics (TokenReview, SubjectAccessReview); false serves plain HTTP to anyone.")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "Address the health and readiness probes bind to.")
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "Elect a leader so that only one manager replica reconciles at a time.")
	fs.StringVar(&o.leaderElectNS, "leader-election-namespace", "", "Namespace of the leader election lease (default: the manager's namespace).")
	fs.DurationVar(&o.pgGCGrace, "podgroup-gc-grace", time.Minute, "How long an auto-created PodGroup without member pods is kept before it is deleted.")
	fs.StringVar(&o.namespace, "namespace", os.Getenv("POD_NAMESPACE"), "Namespace KubeNexus runs in; the scheduler is deployed there (default: $POD_NAMESPACE).")
	fs.StringVar(&o.schedImage, "scheduler-image", "", "kubenexus-scheduler image for KubeNexusConfigs that name none.")
	fs.IntVar(&o.webhookPort, "webhook-port", 9443, "Port the admission webhook server listens on.")
	fs.StringVar(&o.webhookCerts, "webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs", "Directory holding the webhook server's tls.crt and tls.key.")
	fs.BoolVar(&o.certRotation, "cert-rotation", true, "Generate and rotate the webhook certificate and inject its CA (cert-controller). Turn off when cert-manager or another issuer provides --webhook-cert-dir.")
	fs.StringVar(&o.certSecret, "webhook-cert-secret", "kubenexus-webhook-server-cert", "Secret (in --namespace) the certificate rotator keeps the webhook CA and certificate in.")
	fs.StringVar(&o.webhookSvc, "webhook-service", "webhook-service", "Service (in --namespace) in front of the webhook server; the certificate is issued for it.")
	fs.BoolVar(&o.webhooksOn, "enable-webhooks", true, "Serve the admission webhooks (needs a serving certificate in --webhook-cert-dir).")
	fs.Int64Var(&o.whInflight, "webhook-max-inflight-bytes", webhooks.DefaultMaxInflightBytes, "Budget of AdmissionReview bytes read, decoded and handled at once across all webhook paths (each request counts at least 16 KiB, a chunked one its path's maximum); a request that cannot get its share is refused with 429. Bounds the webhook server's memory.")
	fs.DurationVar(&o.whMaxWait, "webhook-max-wait", webhooks.DefaultMaxWait, "Longest an admission request waits for its share of --webhook-max-inflight-bytes (capped at half the API server's timeout for the call) before it is refused with 429.")
	fs.DurationVar(&o.estimate, "estimated-start-interval", estimatedstart.DefaultInterval, "How often the kubenexus.io/estimated-start annotations of waiting gangs are refreshed (at least four times as long as a refresh takes); negative turns them off.")
	fs.BoolVar(&o.mkDispatcher, "multikueue-dispatcher", false, "Nominate the worker cluster of each MultiKueue Workload: the one where its gang fits whole and starts first (set Kueue's multiKueue.dispatcherName to "+multikueue.DispatcherName+"). Needs Kueue 0.17 or later, and get on Secrets in --kueue-namespace.")
	fs.StringVar(&o.kueueNS, "kueue-namespace", multikueue.DefaultKueueNamespace, "Namespace Kueue runs in, which holds the MultiKueueClusters' kubeconfig Secrets.")
	fs.DurationVar(&o.rrResync, "reservation-resync", 30*time.Second, "Longest a held ResourceReservation goes without its owner being re-checked.")
	fs.StringVar(&o.tls.MinVersion, "tls-min-version", "1.2", "Lowest TLS version the webhook and metrics servers accept: 1.2 or 1.3.")
	fs.BoolVar(&o.tls.HTTP2, "enable-http2", false, "Let clients of the webhook and metrics servers negotiate HTTP/2 (off: HTTP/1.1 only, as the HTTP/2 rapid-reset and stream-exhaustion attacks need HTTP/2).")
	fs.BoolVar(&o.showVersion, "version", false, "Print the version and exit.")
	o.zap.BindFlags(fs)
	return o
}

func main() {
	o := bindFlags(flag.CommandLine)
	flag.Parse()
	if o.showVersion {
		fmt.Println(version.String("kubenexus-manager"))
		return
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&o.zap)))
	log := ctrl.Log.WithName("setup")
	fail := func(err error, msg string) {
		log.Error(err, msg)
		os.Exit(1)
	}
	if o.namespace == "" {
		fail(nil, "No namespace: set --namespace or $POD_NAMESPACE")
	}
	if o.whInflight <= 0 || o.whMaxWait <= 0 {
		fail(nil, "--webhook-max-inflight-bytes and --webhook-max-wait must be positive")
	}
	if o.schedImage == "" {
		fail(nil, "No scheduler image: set --scheduler-image")
	}
	mgr, err := o.newManager()
	if err != nil {
		fail(err, "Unable to create the manager")
	}
	if err := controllers.Setup(mgr, controllers.Options{PodGroupGCGrace: o.pgGCGrace, Namespace: o.namespace, SchedulerImage: o.schedImage, ReservationResync: o.rrResync, EstimateInterval: o.estimate,
		MultiKueueDispatcher: o.mkDispatcher, KueueNamespace: o.kueueNS}); err != nil {
		fail(err, "Unable to set up the controllers")
	}
	if o.webhooksOn {
		o.addWebhooks(mgr, fail)
	}
	log.Info("Starting the manager")
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		fail(err, "Manager stopped with an error")
	}
}

// newManager makes the controller manager: its metrics and webhook servers (TLS as
// the flags say; every webhook path bounded in body size and bytes in flight), its
// cache and leader election.
func (o *options) newManager() (ctrl.Manager, error) {
	tlsConfigs, err := o.tls.TLSConfigs()
	if err != nil {
		return nil, fmt.Errorf("invalid TLS settings: %w", err)
	}
	webhookServer := webhooks.NewLimitedServer(webhook.NewServer(webhook.Options{Port: o.webhookPort, CertDir: o.webhookCerts, TLSOpts: tlsConfigs}),
		webhooks.Limits{MaxInflightBytes: o.whInflight, MaxWait: o.whMaxWait})
	metrics := metricsserver.Options{BindAddress: o.metricsAddr, SecureServing: o.metricsSecure, TLSOpts: tlsConfigs, CertDir: o.metricsCertDir}
	if o.metricsSecure {
		metrics.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                  controllers.NewScheme(),
		Metrics:                 metrics,
		Cache:                   controllers.CacheOptions(o.namespace),
		WebhookServer:           webhookServer,
		HealthProbeBindAddress:  o.probeAddr,
		LeaderElection:          o.leaderElect,
		LeaderElectionID:        leaseName,
		LeaderElectionNamespace: o.leaseNamespace(),
		// Step down when stopping (main returns right after), so that another
		// replica leads at once.
		LeaderElectionReleaseOnCancel: true,
	})
}

// addWebhooks adds the certificate rotation (unless turned off), the readiness
// check and the webhooks, which start serving once there is a certificate.
func (o *options) addWebhooks(mgr ctrl.Manager, fail func(error, string)) {
	certsReady := make(chan struct{})
	certs := webhooks.CertOptions{
		Namespace: o.namespace, SecretName: o.certSecret, ServiceName: o.webhookSvc, CertDir: o.webhookCerts,
		ValidatingConfig: webhooks.ValidatingConfigName, MutatingConfig: webhooks.MutatingConfigName,
	}
	if o.certRotation {
		err := webhooks.AddCertRotator(mgr, certs, certsReady)
		if err != nil {
			fail(err, "Unable to set up certificate rotation")
		}
	} else {
		close(certsReady)
	}
	if err := mgr.AddReadyzCheck("webhooks", webhooks.ReadyCheck(mgr, certsReady, certs)); err != nil {
		fail(err, "Unable to add the webhook readiness check")
	}
	// The webhook server starts once it has a certificate to serve.
	go func() {
		<-certsReady
		if err := webhooks.Setup(mgr, webhooks.Options{Namespace: o.namespace}); err != nil {
			fail(err, "Unable to set up the webhooks")
		}
	}()
}

// leaseName is the manager's leader-election Lease (config/manager/lease.yaml
// installs it with the manager, so that an uninstall removes it).
const leaseName = "kubenexus-manager.scheduling.kubenexus.io"

// leaseNamespace is where the Lease lives: --leader-election-namespace, else the
// manager's own namespace.
func (o *options) leaseNamespace() string {
	if o.leaderElectNS != "" {
		return o.leaderElectNS
	}
	return o.namespace
}
