// Command kubenexus-manager is the KubeNexus operator: it reconciles the KubeNexus
// API objects and serves the pod webhooks.
package main

import (
	"flag"
	"os"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kube-nexus/kubenexus/controllers"
)

func main() {
	var (
		metricsAddr   string
		probeAddr     string
		leaderElect   bool
		leaderElectNS string
		pgGCGrace     time.Duration
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "Address the metrics endpoint binds to; 0 disables it.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "Address the health and readiness probes bind to.")
	flag.BoolVar(&leaderElect, "leader-elect", false, "Elect a leader so that only one manager replica reconciles at a time.")
	flag.StringVar(&leaderElectNS, "leader-election-namespace", "", "Namespace of the leader election lease (default: the manager's namespace).")
	flag.DurationVar(&pgGCGrace, "podgroup-gc-grace", time.Minute, "How long an auto-created PodGroup without member pods is kept before it is deleted.")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                  controllers.NewScheme(),
		Metrics:                 metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress:  probeAddr,
		LeaderElection:          leaderElect,
		LeaderElectionID:        "kubenexus-manager.scheduling.kubenexus.io",
		LeaderElectionNamespace: leaderElectNS,
	})
	if err != nil {
		log.Error(err, "Unable to create the manager")
		os.Exit(1)
	}
	if err := controllers.Setup(mgr, controllers.Options{PodGroupGCGrace: pgGCGrace}); err != nil {
		log.Error(err, "Unable to set up the controllers")
		os.Exit(1)
	}
	log.Info("Starting the manager")
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "Manager stopped with an error")
		os.Exit(1)
	}
}
