package coscheduling

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/plugintest"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/resourcereservation"
)

// newPlugin builds the plugin through New, as the scheduler does, with args (nil:
// the defaults) over a handle holding kube (pods, PriorityClasses) and a KubeNexus
// cache serving crds (PodGroups). The handle's informers are started, and the gang
// Service has filed the gang members among kube's pods.
func newPlugin(t *testing.T, args string, kube []runtime.Object, crds ...client.Object) (*Plugin, *plugintest.Services) {
	t.Helper()
	return plugintest.Build(t, kube, crds, func(s *plugintest.Services) (*Plugin, error) {
		return New(t.Context(), plugintest.Args(args), s.Env.Handle, s.CRDs, s.Gangs(), resourcereservation.NewShared())
	})
}
