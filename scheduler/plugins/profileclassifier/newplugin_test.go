package profileclassifier

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/gangs"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/plugintest"
	"github.com/kube-nexus/kubenexus/test/util/schedtest"
)

// newPlugin builds the plugin through New, as the scheduler does, with args ("":
// the defaults) over a handle holding kube (namespaces, pods) and a KubeNexus cache
// serving crds, handing it the profile's gang Service (withGangs) or none. The
// handle's informers are started, and the gang Service has filed the gang members
// among kube's pods.
func newPlugin(t *testing.T, args string, withGangs bool, kube []runtime.Object, crds ...client.Object) (*Plugin, *plugintest.Services) {
	t.Helper()
	s := plugintest.New(t, schedtest.New(t, kube...), crds...)
	var obj runtime.Object
	if args != "" {
		obj = &runtime.Unknown{Raw: []byte(args)}
	}
	var svc *gangs.Service
	if withGangs {
		svc = s.Gangs()
	}
	p, err := New(t.Context(), obj, s.Env.Handle, s.CRDs, s.Tenants, svc)
	if err != nil {
		t.Fatal(err)
	}
	s.Env.Start()
	if withGangs {
		var members []*corev1.Pod
		for _, o := range kube {
			if p, ok := o.(*corev1.Pod); ok && p.Spec.SchedulerName == schedtest.SchedulerName {
				if _, ok, err := gang.Of(p); ok && err == nil {
					members = append(members, p)
				}
			}
		}
		s.WaitForMembers(members...)
	}
	return p.(*Plugin), s
}
