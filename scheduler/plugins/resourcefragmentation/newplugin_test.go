package resourcefragmentation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/plugintest"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/resourcereservation"
	"github.com/kube-nexus/kubenexus/test/util/schedtest"
)

// gpuNode is a node and the pods bound to it.
type gpuNode struct {
	node *corev1.Node
	pods []*corev1.Pod
}

// setup is what a plugin is built over.
type setup struct {
	// reservations are what ResourceReservations hold (nil: none).
	reservations *resourcereservation.Shared
	// nodes make the snapshot; queued are the profile's pods waiting for a node;
	// arrived are pods that waited and have been placed since (on a node outside
	// the snapshot): the demand remembers them as arrivals only.
	nodes   []gpuNode
	queued  []*corev1.Pod
	arrived []*corev1.Pod
}

// newPlugin builds the plugin through New with the default args, as the scheduler
// does, over a handle holding c's nodes and pods, whose informers are started; the
// demand has seen the queued pods and the arrivals.
func newPlugin(t *testing.T, c setup) (*Plugin, *plugintest.Services) {
	t.Helper()
	p, s := build(t, c, nil)
	pl, ok := p.(*Plugin)
	if !ok {
		t.Fatalf("New returned %T, want *Plugin", p)
	}
	return pl, s
}

// newKeeping is newPlugin with keepHostsForQueued: New returns its filter over the
// plugin.
func newKeeping(t *testing.T, c setup) (*keeping, *plugintest.Services) {
	t.Helper()
	p, s := build(t, c, &runtime.Unknown{Raw: []byte(`{"keepHostsForQueued": true}`)})
	k, ok := p.(*keeping)
	if !ok {
		t.Fatalf("New returned %T, want *keeping", p)
	}
	return k, s
}

// build is newPlugin with args, returning what New returned.
func build(t *testing.T, c setup, args runtime.Object) (fwk.Plugin, *plugintest.Services) {
	t.Helper()
	var kube []runtime.Object
	for _, n := range c.nodes {
		kube = append(kube, n.node)
		for _, p := range n.pods {
			kube = append(kube, p)
		}
	}
	for _, p := range append(append([]*corev1.Pod(nil), c.queued...), c.arrived...) {
		kube = append(kube, p)
	}
	s := plugintest.New(t, schedtest.New(t, kube...))
	reservations := c.reservations
	if reservations == nil {
		reservations = resourcereservation.NewShared()
	}
	p, err := New(t.Context(), args, s.Env.Handle, s.CRDs, reservations, s.GPUs())
	if err != nil {
		t.Fatal(err)
	}
	s.Env.Start()
	var demand *tracker
	switch v := p.(type) {
	case *Plugin:
		demand = v.demand
	case *keeping:
		demand = v.demand
	}
	// Every pod arrives waiting; the arrivals are then placed.
	waitQueued(t, demand, append(append([]*corev1.Pod(nil), c.queued...), c.arrived...))
	for _, p := range c.arrived {
		placed := p.DeepCopy()
		placed.Spec.NodeName = "elsewhere"
		if _, err := s.Env.Client.CoreV1().Pods(p.Namespace).Update(t.Context(), placed, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitQueued(t, demand, c.queued)
	return p, s
}

// waitQueued waits until the demand holds exactly pods as queued.
func waitQueued(t *testing.T, demand *tracker, pods []*corev1.Pod) {
	t.Helper()
	want := map[types.UID]bool{}
	for _, p := range pods {
		if demand.shape(p).isGPU() {
			want[p.UID] = true
		}
	}
	schedtest.WaitFor(t, "the pod informer to bring the demand its pods", func() bool {
		demand.mu.Lock()
		defer demand.mu.Unlock()
		if len(demand.queued) != len(want) {
			return false
		}
		for uid := range demand.queued {
			if !want[uid] {
				return false
			}
		}
		return true
	})
}

// infos are the snapshot's NodeInfos of nodes, in their order.
func infos(t *testing.T, s *plugintest.Services, nodes ...gpuNode) []fwk.NodeInfo {
	t.Helper()
	var out []fwk.NodeInfo
	for _, n := range nodes {
		ni, err := s.Env.Handle.SnapshotSharedLister().NodeInfos().Get(n.node.Name)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ni)
	}
	return out
}

// addNode adds a node (and the pods bound to it) to the cluster and brings the
// snapshot up to it.
func addNode(t *testing.T, s *plugintest.Services, n gpuNode) {
	t.Helper()
	if _, err := s.Env.Client.CoreV1().Nodes().Create(t.Context(), n.node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range n.pods {
		if _, err := s.Env.Client.CoreV1().Pods(p.Namespace).Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	s.Env.SyncSnapshot(t)
}
