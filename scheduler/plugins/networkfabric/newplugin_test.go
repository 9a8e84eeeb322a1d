package networkfabric

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/plugintest"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/resourcereservation"
	"github.com/kube-nexus/kubenexus/test/util/schedtest"
)

// newPlugin builds the plugin through New, as the scheduler does, over a handle
// holding kube (nodes, pods) and a KubeNexus cache serving crds; the handle's
// informers are started.
func newPlugin(t *testing.T, kube []runtime.Object, crds ...client.Object) (*Plugin, *plugintest.Services) {
	t.Helper()
	s := plugintest.New(t, schedtest.New(t, kube...), crds...)
	pl, err := New(context.Background(), nil, s.Env.Handle, s.CRDs, s.Gangs(), resourcereservation.NewShared(), s.GPUs(), s.Tiers(), s.Accelerators)
	if err != nil {
		t.Fatal(err)
	}
	s.Env.Start()
	return pl, s
}
