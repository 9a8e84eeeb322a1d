// Package controllers wires the KubeNexus reconcilers into a controller-runtime
// manager. main and the integration suites call the same Setup.
package controllers

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	kubenexusv1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/controllers/podgroup"
)

// Leader election and the events every reconciler records.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// NewScheme returns the scheme of the manager: client-go's built-in types and the
// KubeNexus API.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(kubenexusv1alpha1.AddToScheme(s))
	return s
}

// Options configures the controllers.
type Options struct {
	// PodGroupGCGrace is how long an auto-created PodGroup without members is kept.
	PodGroupGCGrace time.Duration
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
	if err := (&podgroup.Reconciler{Client: mgr.GetClient(), GCGrace: opts.PodGroupGCGrace}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the PodGroup controller: %w", err)
	}
	return nil
}
