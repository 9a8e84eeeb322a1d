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
	"github.com/kube-nexus/kubenexus/webhooks"
)

func main() {
	var (
		metricsAddr   string
		probeAddr     string
		leaderElect   bool
		leaderElectNS string
		pgGCGrace     time.Duration
		namespace     string
		schedImage    string
		webhookPort   int
		webhookCerts  string
		webhooksOn    bool
		certRotation  bool
		certSecret    string
		webhookSvc    string
		rrResync      time.Duration
		whInflight    int64
		whMaxWait     time.Duration
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8443", "Address the metrics endpoint binds to; 0 disables it.")
	metricsCertDir := flag.String("metrics-cert-dir", "", "Directory holding the metrics server's tls.crt and tls.key (empty: a self-signed certificate generated in memory).")
	metricsSecure := flag.Bool("metrics-secure", true, "Serve metrics over HTTPS (a self-signed certificate) to clients that authenticate with a bearer token the API server accepts and may get the non-resource URL /metrics (TokenReview, SubjectAccessReview); false serves plain HTTP to anyone.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "Address the health and readiness probes bind to.")
	flag.BoolVar(&leaderElect, "leader-elect", false, "Elect a leader so that only one manager replica reconciles at a time.")
	flag.StringVar(&leaderElectNS, "leader-election-namespace", "", "Namespace of the leader election lease (default: the manager's namespace).")
	flag.DurationVar(&pgGCGrace, "podgroup-gc-grace", time.Minute, "How long an auto-created PodGroup without member pods is kept before it is deleted.")
	flag.StringVar(&namespace, "namespace", os.Getenv("POD_NAMESPACE"), "Namespace KubeNexus runs in; the scheduler is deployed there (default: $POD_NAMESPACE).")
	flag.StringVar(&schedImage, "scheduler-image", "", "kubenexus-scheduler image for KubeNexusConfigs that name none.")
	flag.IntVar(&webhookPort, "webhook-port", 9443, "Port the admission webhook server listens on.")
	flag.StringVar(&webhookCerts, "webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs", "Directory holding the webhook server's tls.crt and tls.key.")
	flag.BoolVar(&certRotation, "cert-rotation", true, "Generate and rotate the webhook certificate and inject its CA (cert-controller). Turn off when cert-manager or another issuer provides --webhook-cert-dir.")
	flag.StringVar(&certSecret, "webhook-cert-secret", "kubenexus-webhook-server-cert", "Secret (in --namespace) the certificate rotator keeps the webhook CA and certificate in.")
	flag.StringVar(&webhookSvc, "webhook-service", "webhook-service", "Service (in --namespace) in front of the webhook server; the certificate is issued for it.")
	flag.BoolVar(&webhooksOn, "enable-webhooks", true, "Serve the admission webhooks (needs a serving certificate in --webhook-cert-dir).")
	flag.Int64Var(&whInflight, "webhook-max-inflight-bytes", webhooks.DefaultMaxInflightBytes, "Budget of AdmissionReview bytes read, decoded and handled at once across all webhook paths (each request counts at least 16 KiB, a chunked one its path's maximum); a request that cannot get its share is refused with 429. Bounds the webhook server's memory.")
	flag.DurationVar(&whMaxWait, "webhook-max-wait", webhooks.DefaultMaxWait, "Longest an admission request waits for its share of --webhook-max-inflight-bytes (capped at half the API server's timeout for the call) before it is refused with 429.")
	flag.DurationVar(&rrResync, "reservation-resync", 30*time.Second, "Longest a held ResourceReservation goes without its owner being re-checked.")
	var tlsOpts webhooks.TLSOptions
	flag.StringVar(&tlsOpts.MinVersion, "tls-min-version", "1.2", "Lowest TLS version the webhook and metrics servers accept: 1.2 or 1.3.")
	flag.BoolVar(&tlsOpts.HTTP2, "enable-http2", false, "Let clients of the webhook and metrics servers negotiate HTTP/2 (off: HTTP/1.1 only, as the HTTP/2 rapid-reset and stream-exhaustion attacks need HTTP/2).")
	showVersion := flag.Bool("version", false, "Print the version and exit.")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	if *showVersion {
		fmt.Println(version.String("kubenexus-manager"))
		return
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")
	if namespace == "" {
		log.Error(nil, "No namespace: set --namespace or $POD_NAMESPACE")
		os.Exit(1)
	}
	if whInflight <= 0 || whMaxWait <= 0 {
		log.Error(nil, "--webhook-max-inflight-bytes and --webhook-max-wait must be positive")
		os.Exit(1)
	}
	if schedImage == "" {
		log.Error(nil, "No scheduler image: set --scheduler-image")
		os.Exit(1)
	}

	tlsConfigs, err := tlsOpts.TLSConfigs()
	if err != nil {
		log.Error(err, "Invalid TLS settings")
		os.Exit(1)
	}
	// Every webhook path is bounded in body size and in bytes in flight.
	webhookServer := webhooks.NewLimitedServer(webhook.NewServer(webhook.Options{Port: webhookPort, CertDir: webhookCerts, TLSOpts: tlsConfigs}),
		webhooks.Limits{MaxInflightBytes: whInflight, MaxWait: whMaxWait})
	metrics := metricsserver.Options{BindAddress: metricsAddr, SecureServing: *metricsSecure, TLSOpts: tlsConfigs, CertDir: *metricsCertDir}
	if *metricsSecure {
		metrics.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                  controllers.NewScheme(),
		Metrics:                 metrics,
		Cache:                   controllers.CacheOptions(namespace),
		WebhookServer:           webhookServer,
		HealthProbeBindAddress:  probeAddr,
		LeaderElection:          leaderElect,
		LeaderElectionID:        "kubenexus-manager.scheduling.kubenexus.io",
		LeaderElectionNamespace: leaderElectNS,
	})
	if err != nil {
		log.Error(err, "Unable to create the manager")
		os.Exit(1)
	}
	if err := controllers.Setup(mgr, controllers.Options{PodGroupGCGrace: pgGCGrace, Namespace: namespace, SchedulerImage: schedImage, ReservationResync: rrResync}); err != nil {
		log.Error(err, "Unable to set up the controllers")
		os.Exit(1)
	}
	if webhooksOn {
		certsReady := make(chan struct{})
		if certRotation {
			err := webhooks.AddCertRotator(mgr, webhooks.CertOptions{
				Namespace: namespace, SecretName: certSecret, ServiceName: webhookSvc, CertDir: webhookCerts,
				ValidatingConfig: webhooks.ValidatingConfigName, MutatingConfig: webhooks.MutatingConfigName,
			}, certsReady)
			if err != nil {
				log.Error(err, "Unable to set up certificate rotation")
				os.Exit(1)
			}
		} else {
			close(certsReady)
		}
		if err := mgr.AddReadyzCheck("webhooks", webhooks.ReadyCheck(mgr, certsReady)); err != nil {
			log.Error(err, "Unable to add the webhook readiness check")
			os.Exit(1)
		}
		// The webhook server starts once it has a certificate to serve.
		go func() {
			<-certsReady
			if err := webhooks.Setup(mgr, webhooks.Options{Namespace: namespace}); err != nil {
				log.Error(err, "Unable to set up the webhooks")
				os.Exit(1)
			}
		}()
	}
	log.Info("Starting the manager")
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "Manager stopped with an error")
		os.Exit(1)
	}
}
