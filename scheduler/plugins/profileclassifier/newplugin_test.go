package profileclassifier

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/gangs"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/plugintest"
)

// newPlugin builds the plugin through New, as the scheduler does, with args ("":
// the defaults) over a handle holding kube (namespaces, pods) and a KubeNexus cache
// serving crds, handing it the profile's gang Service (withGangs) or none. The
// handle's informers are started, and the gang Service has filed the gang members
// among kube's pods.
func newPlugin(t *testing.T, args string, withGangs bool, kube []runtime.Object, crds ...client.Object) (*Plugin, *plugintest.Services) {
	t.Helper()
	return plugintest.Build(t, kube, crds, func(s *plugintest.Services) (*Plugin, error) {
		var svc *gangs.Service
		if withGangs {
			svc = s.Gangs()
		}
		p, err := New(t.Context(), plugintest.Args(args), s.Env.Handle, s.CRDs, s.Tenants, svc)
		if err != nil {
			return nil, err
		}
		return p.(*Plugin), nil
	})
}
