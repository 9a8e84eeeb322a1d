// Package webhooks registers the KubeNexus admission webhooks with a
// controller-runtime manager. main and the integration suites call the same Setup.
package webhooks

import (
	"fmt"
	"net/http"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kube-nexus/kubenexus/api/kueuecompat"
	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/webhooks/hardwaretier"
	"github.com/kube-nexus/kubenexus/webhooks/kubenexusconfig"
	"github.com/kube-nexus/kubenexus/webhooks/pod"
	"github.com/kube-nexus/kubenexus/webhooks/podgroup"
	"github.com/kube-nexus/kubenexus/webhooks/resourcereservation"
)

// Options configures the webhooks.
type Options struct {
	// Namespace is where KubeNexus (and its scheduler) runs.
	Namespace string
}

// Setup registers every KubeNexus webhook on mgr's webhook server.
func Setup(mgr ctrl.Manager, opts Options) error {
	if err := (&kubenexusconfig.Validator{Namespace: opts.Namespace}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the KubeNexusConfig webhook: %w", err)
	}
	if err := (&podgroup.Validator{Owners: mgr.GetAPIReader()}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the PodGroup webhook: %w", err)
	}
	if err := (&resourcereservation.Validator{Client: mgr.GetClient(), Live: mgr.GetAPIReader()}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the ResourceReservation webhook: %w", err)
	}
	if err := (&hardwaretier.Validator{Client: mgr.GetClient(), Tiers: mgr.GetAPIReader()}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the HardwareTier webhook: %w", err)
	}
	// Kueue's Workloads and ClusterQueues (tiers from ClusterQueues) are read in the
	// version the cluster serves.
	served, _ := kueuecompat.Served(mgr.GetRESTMapper())
	mutator := &pod.Mutator{
		Client:    kueuecompat.Client(mgr.GetClient(), served),
		Owners:    mgr.GetAPIReader(),
		Namespace: opts.Namespace,
		Decoder:   admission.NewDecoder(mgr.GetScheme()),
		Recorder:  mgr.GetEventRecorder(v1alpha1.EventReportingController),
	}
	// Bodies above MaxRequestBytes are refused before they are decoded.
	mgr.GetWebhookServer().Register(pod.Path, http.MaxBytesHandler(&admission.Webhook{Handler: mutator}, pod.MaxRequestBytes))
	return nil
}
