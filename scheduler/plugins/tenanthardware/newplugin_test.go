package tenanthardware

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/plugintest"
)

// newPlugin builds the plugin through New, as the scheduler does, over a handle
// holding kube (namespaces, nodes, pods) and a KubeNexus cache serving crds
// (HardwareTiers); the handle's informers are started.
func newPlugin(t *testing.T, kube []runtime.Object, crds ...client.Object) (*Plugin, *plugintest.Services) {
	t.Helper()
	return plugintest.Build(t, kube, crds, func(s *plugintest.Services) (*Plugin, error) {
		return New(t.Context(), nil, s.Env.Handle, s.CRDs, s.Devices(), s.Tenants)
	})
}
