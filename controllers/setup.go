// Package controllers wires the KubeNexus reconcilers into a controller-runtime
// manager. main and the integration suites call the same Setup.
package controllers

import (
	"fmt"
	"time"

	nrtv1alpha2 "github.com/k8stopologyawareschedwg/noderesourcetopology-api/pkg/apis/topology/v1alpha2"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/kube-nexus/kubenexus/api/kueuecompat"
	kubenexusv1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/controllers/admissioncheck"
	"github.com/kube-nexus/kubenexus/controllers/chartconfig"
	"github.com/kube-nexus/kubenexus/controllers/estimatedstart"
	"github.com/kube-nexus/kubenexus/controllers/hardwaretier"
	"github.com/kube-nexus/kubenexus/controllers/kubenexusconfig"
	"github.com/kube-nexus/kubenexus/controllers/kubenexusconfig/render"
	"github.com/kube-nexus/kubenexus/controllers/multikueue"
	"github.com/kube-nexus/kubenexus/controllers/podgroup"
	"github.com/kube-nexus/kubenexus/controllers/resourcereservation"

	"k8s.io/client-go/discovery"

	schedconfig "github.com/kube-nexus/kubenexus/scheduler/apis/config"
)

// Leader election and the events every reconciler records.
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=system,resources=leases,verbs=create
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=system,resources=leases,verbs=get;update;patch,resourceNames=kubenexus-manager.scheduling.kubenexus.io
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// The metrics endpoint's authentication and authorization (cmd/manager --metrics-secure).
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// NewScheme returns the scheme of the manager: client-go's built-in types, the
// KubeNexus API, Kueue's and the NodeResourceTopology API (the placement check
// reads the nodes' NUMA cells).
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(kubenexusv1alpha1.AddToScheme(s))
	utilruntime.Must(kueuecompat.AddToScheme(s))
	utilruntime.Must(nrtv1alpha2.AddToScheme(s))
	return s
}

// CacheOptions limits the manager's cache of the kinds the operator applies
// (ConfigMaps, Services, Deployments, PodDisruptionBudgets) to the objects it
// manages in its namespace, so that the manager does not hold every ConfigMap of the
// cluster in memory and needs access to those kinds in its own namespace only.
func CacheOptions(namespace string) cache.Options {
	managed := cache.ByObject{
		Namespaces: map[string]cache.Config{namespace: {}},
		Label:      labels.SelectorFromSet(labels.Set{"app.kubernetes.io/managed-by": render.ManagedBy}),
	}
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.ConfigMap{}:             managed,
		&corev1.Service{}:               managed,
		&appsv1.Deployment{}:            managed,
		&policyv1.PodDisruptionBudget{}: managed,
	}}
}

// Options configures the controllers.
type Options struct {
	// PodGroupGCGrace is how long an auto-created PodGroup without members is kept.
	PodGroupGCGrace time.Duration
	// Namespace is where KubeNexus runs; the scheduler is deployed there.
	Namespace string
	// SchedulerImage is the scheduler image when the KubeNexusConfig names none.
	SchedulerImage string
	// ReservationResync is the longest a held ResourceReservation goes without a
	// re-check of its owner (expiry is scheduled exactly).
	ReservationResync time.Duration
	// EstimateInterval is how often the kubenexus.io/estimated-start annotations
	// are refreshed (0: estimatedstart.DefaultInterval; negative: never).
	EstimateInterval time.Duration
	// MultiKueueDispatcher runs the MultiKueue dispatcher (multikueue.DispatcherName:
	// Kueue's multiKueue.dispatcherName must name it); KueueNamespace is where Kueue
	// keeps the MultiKueueClusters' kubeconfig Secrets.
	MultiKueueDispatcher bool
	KueueNamespace       string
}

// Setup registers the health and readiness checks and every KubeNexus reconciler
// with mgr.
func Setup(mgr ctrl.Manager, opts Options) error {
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("adding readiness check: %w", err)
	}
	if err := (&podgroup.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), GCGrace: opts.PodGroupGCGrace, Recorder: mgr.GetEventRecorder(kubenexusv1alpha1.EventReportingController)}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the PodGroup controller: %w", err)
	}
	// Other APIs' PodGroups get their status kept where the API server serves them
	// when the manager starts (serving one later needs a manager restart).
	// Kubernetes' own PodGroups (scheduling.k8s.io/v1beta1): their
	// PodGroupInitiallyScheduled condition; their CompositePodGroups
	// (scheduling.k8s.io/v1alpha3), where served too.
	native, err := whereServed(mgr, kubenexusv1alpha1.NativePodGroupGVK.GroupKind(), kubenexusv1alpha1.NativePodGroupGVK.Version,
		"Kubernetes' PodGroups", func() error { return (&podgroup.NativeReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr) })
	if err != nil {
		return err
	}
	if native {
		if _, err := whereServed(mgr, kubenexusv1alpha1.CompositePodGroupGVK.GroupKind(), kubenexusv1alpha1.CompositePodGroupGVK.Version,
			"Kubernetes' CompositePodGroups", func() error { return (&podgroup.CompositeReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr) }); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		gk      schema.GroupKind
		version string
		what    string
		setup   func() error
	}{
		// scheduler-plugins' PodGroups: the status its controller would write.
		{kubenexusv1alpha1.SigsPodGroupGVK.GroupKind(), kubenexusv1alpha1.SigsPodGroupVersion, "scheduler-plugins' PodGroups",
			func() error { return (&podgroup.SigsReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr) }},
		// KAI-Scheduler's PodGroups, for the groups kubenexus-scheduler places.
		{kubenexusv1alpha1.KAIPodGroupGVK.GroupKind(), kubenexusv1alpha1.KAIPodGroupVersion, "KAI-Scheduler's PodGroups",
			func() error { return (&podgroup.KAIReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr) }},
		// Volcano's PodGroups; the controller acts only while the KubeNexusConfig's
		// spec.volcano.enabled is set.
		{kubenexusv1alpha1.VolcanoPodGroupGVK.GroupKind(), kubenexusv1alpha1.VolcanoPodGroupVersion, "Volcano's PodGroups",
			func() error {
				return (&podgroup.VolcanoReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader()}).SetupWithManager(mgr)
			}},
	} {
		if _, err := whereServed(mgr, f.gk, f.version, f.what, f.setup); err != nil {
			return err
		}
	}
	if opts.Namespace == "" {
		return fmt.Errorf("no namespace for the scheduler: set Options.Namespace")
	}
	dc, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return fmt.Errorf("creating a discovery client: %w", err)
	}
	kncr := &kubenexusconfig.Reconciler{
		Client:      mgr.GetClient(),
		APIReader:   mgr.GetAPIReader(),
		Options:     render.Options{Namespace: opts.Namespace, DefaultImage: opts.SchedulerImage},
		ServerMinor: func() (int, error) { return schedconfig.APIServerMinor(dc) },
	}
	if err := kncr.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the KubeNexusConfig controller: %w", err)
	}
	// The KubeNexusConfig the chart renders into a ConfigMap (see chartconfig).
	if err := (&chartconfig.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder(kubenexusv1alpha1.EventReportingController)}).SetupWithManager(mgr, opts.Namespace); err != nil {
		return fmt.Errorf("setting up the chart's KubeNexusConfig controller: %w", err)
	}
	if err := (&resourcereservation.Reconciler{Client: mgr.GetClient(), Resync: opts.ReservationResync, Recorder: mgr.GetEventRecorder(kubenexusv1alpha1.EventReportingController)}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the ResourceReservation controller: %w", err)
	}
	if err := (&hardwaretier.Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the HardwareTier controller: %w", err)
	}
	return setupKueue(mgr, opts)
}

// setupKueue starts the estimated-start annotations and, when Kueue's CRDs are
// installed when the manager starts, the placement-feasibility AdmissionCheck and
// the MultiKueue dispatcher.
func setupKueue(mgr ctrl.Manager, opts Options) error {
	// Kueue's placement-feasibility AdmissionCheck, when Kueue's CRDs are installed
	// when the manager starts.
	served, ok := kueuecompat.Served(mgr.GetRESTMapper())
	if opts.EstimateInterval >= 0 {
		interval := opts.EstimateInterval
		if interval == 0 {
			interval = estimatedstart.DefaultInterval
		}
		estimatedstart.Register()
		c := mgr.GetClient()
		if ok {
			c = kueuecompat.Client(c, served)
		}
		if err := mgr.Add(&estimatedstart.Estimator{Client: c, Interval: interval, Log: mgr.GetLogger().WithName("estimated-start")}); err != nil {
			return fmt.Errorf("setting up the estimated-start annotations: %w", err)
		}
	}
	if !ok {
		mgr.GetLogger().Info("Kueue's CRDs are not installed; the placement-feasibility AdmissionCheck is off", "controllerName", admissioncheck.ControllerName)
		if opts.MultiKueueDispatcher {
			mgr.GetLogger().Info("Kueue's CRDs are not installed; the MultiKueue dispatcher is off", "dispatcherName", multikueue.DispatcherName)
		}
		return nil
	}
	mgr.GetLogger().Info("Kueue's API is served; the placement-feasibility AdmissionCheck is on", "groupVersion", served)
	check := &admissioncheck.Reconciler{Client: kueuecompat.Client(mgr.GetClient(), served), Recorder: mgr.GetEventRecorder(kubenexusv1alpha1.EventReportingController)}
	if err := check.SetupWithManager(mgr, served); err != nil {
		return fmt.Errorf("setting up the placement-feasibility AdmissionCheck: %w", err)
	}
	if opts.MultiKueueDispatcher {
		// External dispatch is Kueue 0.17's (status.nominatedClusterNames, v1beta2).
		if served != kueuecompat.Current {
			return fmt.Errorf("the MultiKueue dispatcher needs Kueue's %s API (Kueue 0.17 or later); the API server serves %s", kueuecompat.Current, served)
		}
		d := &multikueue.Dispatcher{Client: mgr.GetClient(), Secrets: mgr.GetAPIReader(), KueueNamespace: opts.KueueNamespace, Scheme: NewScheme(),
			Recorder: mgr.GetEventRecorder(kubenexusv1alpha1.EventReportingController)}
		if d.KueueNamespace == "" {
			d.KueueNamespace = multikueue.DefaultKueueNamespace
		}
		if err := d.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("setting up the MultiKueue dispatcher: %w", err)
		}
		mgr.GetLogger().Info("the MultiKueue dispatcher is on: set Kueue's multiKueue.dispatcherName to it", "dispatcherName", multikueue.DispatcherName, "kueueNamespace", d.KueueNamespace)
	}
	return nil
}

// whereServed runs setup, the controller of what (a kind of another API), when the
// API server serves gk at version, and says whether it did; a kind not served is
// logged and left alone.
func whereServed(mgr ctrl.Manager, gk schema.GroupKind, version, what string, setup func() error) (bool, error) {
	switch _, err := mgr.GetRESTMapper().RESTMapping(gk, version); {
	case meta.IsNoMatchError(err):
		mgr.GetLogger().Info("the API server does not serve "+what+"; they are not managed", "group", gk.Group, "version", version)
		return false, nil
	case err != nil:
		return false, fmt.Errorf("discovering %s (%s/%s): %w", what, gk.Group, version, err)
	}
	if err := setup(); err != nil {
		return false, fmt.Errorf("setting up the controller of %s: %w", what, err)
	}
	return true, nil
}
