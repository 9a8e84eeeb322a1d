package networkfabric

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	schedframework "k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/topology"
	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/snapshot"
)

const clique = "nvidia.com/gpu.clique"

// Domain a has a node running a plain pod; domain b's nodes run only a DaemonSet's
// pod and a static pod; node c is in no domain. A pod that needs no domain scores
// c highest, then a (broken), and b (whole) lowest.
func TestKeepWholeDomains(t *testing.T) {
	inDomain := func(name, d string, pods ...*corev1.Pod) fwk.NodeInfo {
		n := testutil.MakeNode(name).Capacity("nvidia.com/gpu", "4")
		if d != "" {
			n = n.Label(clique, d)
		}
		return snapshot.NodeInfo(n.Obj(), pods...)
	}
	daemon := testutil.MakePod("agent", "kube-system").Owner("apps/v1", "DaemonSet", "agent").Obj()
	static := testutil.MakePod("etcd", "kube-system").Annotation(corev1.MirrorPodAnnotationKey, "x").Obj()
	nodes := []fwk.NodeInfo{
		inDomain("a0", "a", testutil.MakePod("job", "ml").Req("cpu", "1").Obj()),
		inDomain("a1", "a"),
		inDomain("a2", "a"),
		inDomain("a3", "a"),
		inDomain("b0", "b", daemon, static),
		inDomain("b1", "b"),
		inDomain("c0", ""),
	}
	var use nodeUse
	got := use.domains(nodes, clique)
	if diff := cmp.Diff(map[string]domainUse{"a": {nodes: 4, used: 1}, "b": {nodes: 2}}, got, cmp.AllowUnexported(domainUse{})); diff != "" {
		t.Fatalf("domains (-want +got):\n%s", diff)
	}
	s := &keepState{label: clique, domains: got}
	for name, want := range map[string]int64{"a0": 70, "b1": 0, "c0": 100} {
		for _, ni := range nodes {
			if ni.Node().Name == name {
				if score := keepWholeScore(s, ni.Node()); score != want {
					t.Errorf("%s: score %d, want %d", name, score, want)
				}
			}
		}
	}

	// A pod placed on b1 (a new generation) breaks b; a0's pod leaving keeps a
	// broken only if another of its nodes runs one.
	b1 := nodes[5].(*schedframework.NodeInfo)
	b1.AddPod(testutil.MakePod("svc", "web").Req("cpu", "1").Obj())
	a0 := schedframework.NewNodeInfo()
	a0.SetNode(nodes[0].Node())
	nodes[0] = a0
	got = use.domains(nodes, clique)
	if diff := cmp.Diff(map[string]domainUse{"a": {nodes: 4}, "b": {nodes: 2, used: 1}}, got, cmp.AllowUnexported(domainUse{})); diff != "" {
		t.Errorf("after the pods moved (-want +got):\n%s", diff)
	}
}

// Plain pods are not signed for opportunistic batching while some node carries the
// label of the level kept whole: the previous pod's ranking would not show the
// domain it broke. Without such nodes, or without a level kept whole, they are.
func TestKeepWholeSigning(t *testing.T) {
	plain := testutil.MakePod("p", "ml").Req("cpu", "1").Obj()
	daemon := testutil.MakePod("agent", "kube-system").Owner("apps/v1", "DaemonSet", "agent").Obj()
	pl := testPlugin(t)
	pl.keep = topology.KeptWhole(topology.DefaultLevels)
	pl.nodeLabels = newLabelled(topology.DefaultLevels)
	if _, st := pl.SignPod(context.Background(), plain); !st.IsSuccess() {
		t.Errorf("no node in an NVLink domain: %v, want signed", st)
	}
	pl.nodeLabels.set(testutil.MakeNode("n").Label(clique, "a").Obj())
	if _, st := pl.SignPod(context.Background(), plain); st.Code() != fwk.Unschedulable {
		t.Errorf("a node in an NVLink domain: %v, want refused", st)
	}
	if _, st := pl.SignPod(context.Background(), daemon); !st.IsSuccess() {
		t.Errorf("a DaemonSet's pod: %v, want signed (it breaks no domain)", st)
	}
	pl.keep = -1
	if _, st := pl.SignPod(context.Background(), plain); !st.IsSuccess() {
		t.Errorf("no level kept whole: %v, want signed", st)
	}
}

// BenchmarkKeepWholeDomains: the per-pod cost of reading 5000 nodes in 278 NVLink
// domains of 18 when no node changed since the last cycle (the common case: one
// node changes per binding).
func BenchmarkKeepWholeDomains(b *testing.B) {
	nodes := make([]fwk.NodeInfo, 5000)
	for i := range nodes {
		n := testutil.MakeNode(fmt.Sprintf("n%04d", i)).Label(clique, fmt.Sprintf("d%03d", i/18)).Obj()
		var pods []*corev1.Pod
		if i%3 == 0 {
			pods = append(pods, testutil.MakePod(fmt.Sprintf("p%d", i), "ml").Obj())
		}
		nodes[i] = snapshot.NodeInfo(n, pods...)
	}
	var use nodeUse
	use.domains(nodes, clique)
	b.ResetTimer()
	for range b.N {
		use.domains(nodes, clique)
	}
}
