package coscheduling

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/plugintest"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/resourcereservation"
	"github.com/kube-nexus/kubenexus/test/util/schedtest"
)

// newPlugin builds the plugin through New, as the scheduler does, with args (nil:
// the defaults) over a handle holding kube (pods, PriorityClasses) and a KubeNexus
// cache serving crds (PodGroups). The handle's informers are started, and the gang
// Service has filed the gang members among kube's pods.
func newPlugin(t *testing.T, args string, kube []runtime.Object, crds ...client.Object) (*Plugin, *plugintest.Services) {
	t.Helper()
	s := plugintest.New(t, schedtest.New(t, kube...), crds...)
	var obj runtime.Object
	if args != "" {
		obj = &runtime.Unknown{Raw: []byte(args)}
	}
	pl, err := New(t.Context(), obj, s.Env.Handle, s.CRDs, s.Gangs(), resourcereservation.NewShared())
	if err != nil {
		t.Fatal(err)
	}
	s.Env.Start()
	var members []*corev1.Pod
	for _, o := range kube {
		if p, ok := o.(*corev1.Pod); ok && p.Spec.SchedulerName == schedtest.SchedulerName {
			if _, ok, err := gang.Of(p); ok && err == nil {
				members = append(members, p)
			}
		}
	}
	s.WaitForMembers(members...)
	return pl, s
}
