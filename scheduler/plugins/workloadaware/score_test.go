package workloadaware

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/kube-nexus/kubenexus/scheduler/apis/config"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/accelerators"
	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/snapshot"
)

// nodeWith returns a node of the given capacity carrying pods of the given requests.
func nodeWith(t *testing.T, capacity []string, podRequests ...[]string) fwk.NodeInfo {
	t.Helper()
	var pods []*corev1.Pod
	for i, req := range podRequests {
		name := "p" + string(rune('a'+i))
		pods = append(pods, testutil.MakePod(name, "ns").UID("uid-"+name).Req(req...).Obj())
	}
	return snapshot.NodeInfo(testutil.MakeNode("n").Capacity(capacity...).Obj(), pods...)
}

func newPlugin(t *testing.T) *Plugin { return newPluginWith(t, nil) }

// newPluginWith builds the plugin with the default args and these DRA GPUs.
func newPluginWith(t *testing.T, gpus accelerators.GPUs) *Plugin {
	t.Helper()
	pl, err := New(context.Background(), nil, nil, nil, gpus)
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

func score(t *testing.T, pl *Plugin, pod *corev1.Pod, ni fwk.NodeInfo) int64 {
	t.Helper()
	cs := framework.NewCycleState()
	if st := pl.PreScore(context.Background(), cs, pod, nil); !st.IsSuccess() {
		t.Fatal(st)
	}
	s, st := pl.Score(context.Background(), cs, pod, ni)
	if !st.IsSuccess() {
		t.Fatal(st)
	}
	return s
}

func TestScore(t *testing.T) {
	pl := newPlugin(t)
	cpuNode := []string{"cpu", "32", "memory", "128Gi"}
	gpuNode := []string{"cpu", "96", "memory", "1Ti", "nvidia.com/gpu", "8"}
	batch := testutil.MakePod("job", "ns").Label("workload.kubenexus.io/type", "batch").Req("cpu", "4", "memory", "8Gi").Obj()
	service := testutil.MakePod("web", "ns").Label("workload.kubenexus.io/type", "service").Req("cpu", "4", "memory", "8Gi").Obj()
	training := testutil.MakePod("train", "ns").Label("workload.kubenexus.io/type", "training").
		Req("cpu", "8", "memory", "64Gi", "nvidia.com/gpu", "4").Limit("nvidia.com/gpu", "4").Obj()

	empty, busy := nodeWith(t, cpuNode), nodeWith(t, cpuNode, []string{"cpu", "24", "memory", "96Gi"})
	if b, e := score(t, pl, batch, busy), score(t, pl, batch, empty); b <= e {
		t.Errorf("batch: busy node %d, empty node %d; want the busy one higher (pack)", b, e)
	}
	if b, e := score(t, pl, service, busy), score(t, pl, service, empty); b >= e {
		t.Errorf("service: busy node %d, empty node %d; want the empty one higher (spread)", b, e)
	}
	// CPU-only pods: any CPU node beats any GPU node, however allocated.
	gpuEmpty := nodeWith(t, gpuNode)
	for _, p := range []*corev1.Pod{batch, service} {
		g := score(t, pl, p, gpuEmpty)
		if g != 0 {
			t.Errorf("%s on a GPU node scored %d, want 0 (acceleratorNodeScore)", p.Name, g)
		}
		for name, n := range map[string]fwk.NodeInfo{"empty": empty, "busy": busy} {
			if s := score(t, pl, p, n); s < 50 {
				t.Errorf("%s on the %s CPU node scored %d, want at least 50", p.Name, name, s)
			}
		}
	}
	// A GPU pod packs GPUs: the node with 4 of 8 GPUs used beats the pristine one.
	gpuHalf := nodeWith(t, gpuNode, []string{"nvidia.com/gpu", "4"})
	if h, e := score(t, pl, training, gpuHalf), score(t, pl, training, gpuEmpty); h <= e {
		t.Errorf("training: half-used GPU node %d, pristine %d; want the half-used one higher", h, e)
	}
	// A pod requesting none of the weighted resources is neutral on CPU nodes.
	bare := testutil.MakePod("bare", "ns").Obj()
	if a, b := score(t, pl, bare, empty), score(t, pl, bare, busy); a != b {
		t.Errorf("a pod without requests scored %d and %d; want the same", a, b)
	}
}

// fakeGPUs publishes DRA GPUs on the named node; a pod with claims asks for them.
type fakeGPUs struct{ node string }

func (f fakeGPUs) Nodes() func(string) bool       { return func(n string) bool { return n == f.node } }
func (f fakeGPUs) AsksForGPUs(p *corev1.Pod) bool { return len(p.Spec.ResourceClaims) > 0 }

func TestDRAGPUNodesAndPods(t *testing.T) {
	pl := newPlugin(t)
	// The node publishes its GPUs only as DRA devices (no nvidia.com/gpu).
	draNode := nodeWith(t, []string{"cpu", "96", "memory", "1Ti"})
	batch := testutil.MakePod("job", "ns").Label("workload.kubenexus.io/type", "batch").Req("cpu", "4", "memory", "8Gi").Obj()
	claimPod := batch.DeepCopy()
	claimPod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu"}}
	if s := score(t, pl, batch, draNode); s < 50 {
		t.Fatalf("without DRA GPUs published the node is a CPU node: %d, want at least 50", s)
	}
	pl = newPluginWith(t, fakeGPUs{node: draNode.Node().Name})
	if s := score(t, pl, batch, draNode); s != 0 {
		t.Errorf("a CPU-only pod on a node with DRA GPUs scored %d, want 0 (kept off)", s)
	}
	// A pod whose claims ask for GPUs is left to ResourceFragmentation, which sees
	// the cards' shares.
	if st := pl.PreScore(context.Background(), framework.NewCycleState(), claimPod, nil); st.Code() != fwk.Skip {
		t.Errorf("a pod whose claims ask for GPUs: PreScore %v, want Skip", st)
	}
	if off := pl.accelerators.KeepsOff(batch); off == nil || !off(draNode) {
		t.Error("keepsOff: a CPU-only pod should keep off the DRA GPU node")
	}
	if pl.accelerators.KeepsOff(claimPod) != nil {
		t.Error("keepsOff: a pod whose claims ask for GPUs keeps off nothing")
	}
}

func TestArgsValidation(t *testing.T) {
	a := &config.WorkloadAwareArgs{PackClasses: []string{"batch", "gpu-jobs"}, Resources: []config.ResourceWeight{{Name: "cpu", Weight: 0}}}
	config.SetDefaultsWorkloadAwareArgs(a)
	errs := config.ValidateWorkloadAwareArgs(nil, a)
	if len(errs) != 2 {
		t.Fatalf("got %v, want an unsupported class and a weight out of range", errs.ToAggregate())
	}
}
