package networkfabric

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/plugintest"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/resourcereservation"
	"github.com/kube-nexus/kubenexus/test/util/schedtest"
)

// newPlugin builds the plugin through New, as the scheduler does, over a handle
// holding kube (nodes, pods, DRA objects) and a KubeNexus cache serving crds; the
// handle's informers are started, the gang Service has filed the gang members
// among kube's pods and the plugin has seen the topology labels of kube's nodes.
func newPlugin(t *testing.T, kube []runtime.Object, crds ...client.Object) (*Plugin, *plugintest.Services) {
	t.Helper()
	return newPluginOn(t, nil, kube, crds...)
}

// newPluginOn is newPlugin with New handed wrap(handle) (nil: the handle itself).
func newPluginOn(t *testing.T, wrap func(fwk.Handle) fwk.Handle, kube []runtime.Object, crds ...client.Object) (*Plugin, *plugintest.Services) {
	t.Helper()
	s := plugintest.New(t, schedtest.New(t, kube...), crds...)
	h := s.Env.Handle
	if wrap != nil {
		h = wrap(h)
	}
	pl, err := New(context.Background(), nil, h, s.CRDs, s.Gangs(), resourcereservation.NewShared(), s.GPUs(), s.Tiers(), s.Accelerators)
	if err != nil {
		t.Fatal(err)
	}
	s.Env.Start()
	var members []*corev1.Pod
	labelled := 0
	for _, o := range kube {
		switch v := o.(type) {
		case *corev1.Pod:
			if _, ok, err := gang.Of(v); ok && err == nil && v.Spec.SchedulerName == schedtest.SchedulerName {
				members = append(members, v)
			}
		case *corev1.Node:
			if pl.nodeLabels != nil && pl.nodeLabels.bits(v) != 0 {
				labelled++
			}
		}
	}
	s.WaitForMembers(members...)
	schedtest.WaitFor(t, "the node informer to bring the nodes' topology labels", func() bool {
		if pl.nodeLabels == nil {
			return true
		}
		pl.nodeLabels.mu.Lock()
		defer pl.nodeLabels.mu.Unlock()
		return len(pl.nodeLabels.nodes) == labelled
	})
	return pl, s
}
