package gangpreemption

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/plugintest"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/resourcereservation"
	"github.com/kube-nexus/kubenexus/test/util/schedtest"
)

// newPlugin builds the plugin through New, as the scheduler does, with args (""
// for the defaults) over a handle holding kube (nodes, pods: the snapshot holds
// the nodes and the pods bound to them) and a KubeNexus cache serving crds; the
// handle's informers are started. Its evictor stops with the test.
func newPlugin(t *testing.T, args string, kube []runtime.Object, crds ...client.Object) (*Plugin, *plugintest.Services) {
	t.Helper()
	return plugintest.Build(t, kube, crds, func(s *plugintest.Services) (*Plugin, error) {
		return New(t.Context(), plugintest.Args(args), s.Env.Handle, s.CRDs, s.Gangs(), s.Tiers(), resourcereservation.NewShared())
	})
}

// preempted commits a preemption for owner as PostFilter does once it has chosen:
// victims are evicted for members, the first of them the pod whose PostFilter
// chose, each member claiming the node of the same index in nodes.
func preempted(t *testing.T, pl *Plugin, owner string, members []*corev1.Pod, nodes []string, victims []*corev1.Pod) {
	t.Helper()
	infos, err := pl.handle.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	s := pl.newSearch(infos, members, nil, nil)
	at := make([]int, len(nodes))
	for i, n := range nodes {
		idx, ok := s.byName[n]
		if !ok {
			t.Fatalf("node %s is not in the snapshot", n)
		}
		at[i] = idx
	}
	pl.commit(owner, members[0], s, at, victims)
}

// deleted deletes the pod through the clientset and waits until the informer has
// dropped it.
func deleted(t *testing.T, s *plugintest.Services, pod *corev1.Pod) {
	t.Helper()
	if err := s.Env.Client.CoreV1().Pods(pod.Namespace).Delete(t.Context(), pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	lister := s.Env.Handle.SharedInformerFactory().Core().V1().Pods().Lister()
	schedtest.WaitFor(t, "the informer to drop "+pod.Name, func() bool {
		_, err := lister.Pods(pod.Namespace).Get(pod.Name)
		return apierrors.IsNotFound(err)
	})
}
