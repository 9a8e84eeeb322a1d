// Package webhooks registers the KubeNexus admission webhooks with a
// controller-runtime manager. main and the integration suites call the same Setup.
package webhooks

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kube-nexus/kubenexus/webhooks/kubenexusconfig"
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
	return nil
}
