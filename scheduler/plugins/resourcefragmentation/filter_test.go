package resourcefragmentation

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedframework "k8s.io/kubernetes/pkg/scheduler/framework"
)

// verdicts runs the keeping filter for pod over nodes: node name → "" (fits) or the
// refusal's message.
func verdicts(t *testing.T, k *keeping, pod *corev1.Pod, nodes []fwk.NodeInfo) (map[string]string, bool) {
	t.Helper()
	cs := schedframework.NewCycleState()
	_, st := k.PreFilter(context.Background(), cs, pod, nodes)
	if st.IsSkip() {
		return nil, true
	}
	if !st.IsSuccess() {
		t.Fatalf("PreFilter: %v", st)
	}
	out := map[string]string{}
	for _, ni := range nodes {
		st := k.Filter(context.Background(), cs, pod, ni)
		if st.IsSuccess() {
			out[ni.Node().Name] = ""
			continue
		}
		if st.Code() != fwk.Unschedulable {
			t.Errorf("%s: code %v, want Unschedulable", ni.Node().Name, st.Code())
		}
		out[ni.Node().Name] = st.Message()
	}
	return out, false
}

func TestKeepHostsForQueued(t *testing.T) {
	one := gpuPod("one", 1)
	waiting := gpuPod("waiting-8", 8)
	cluster := []gpuNode{node("pristine", 0), node("half-used", 4)}
	k, s := newKeeping(t, setup{nodes: cluster, queued: []*corev1.Pod{waiting, one}})
	nodes := infos(t, s, cluster...)
	got, skipped := verdicts(t, k, one, nodes)
	if skipped {
		t.Fatal("the 1-GPU pod was skipped while an 8-GPU pod is queued")
	}
	if got["half-used"] != "" {
		t.Errorf("half-used refused: %s", got["half-used"])
	}
	if want := "node kept for queued pods: 1 pod(s) of 8 GPUs wait and 1 node(s) can host them"; !strings.HasPrefix(got["pristine"], want) {
		t.Errorf("pristine: %q, want a refusal starting %q", got["pristine"], want)
	}
	// Two hosts for one queued 8-GPU pod: one may be split.
	addNode(t, s, node("pristine-2", 0))
	got, _ = verdicts(t, k, one, infos(t, s, append(cluster, node("pristine-2", 0))...))
	if got["pristine"] != "" || got["pristine-2"] != "" {
		t.Errorf("with two hosts for one queued pod, a pristine node was refused: %v", got)
	}
	// The queued size itself, and anything larger, is not held back.
	other, otherS := newKeeping(t, setup{nodes: cluster, queued: []*corev1.Pod{waiting, gpuPod("other-8", 8)}})
	if _, skipped := verdicts(t, other, gpuPod("other-8", 8), infos(t, otherS, cluster...)); !skipped {
		t.Error("an 8-GPU pod was filtered for a queued 8-GPU pod")
	}
	if _, skipped := verdicts(t, k, gpuPod("cpu", 0), infos(t, s, cluster...)); !skipped {
		t.Error("a CPU pod was not skipped")
	}
}

func TestKeepHostsForQueuedRequeues(t *testing.T) {
	k, _ := newKeeping(t, setup{})
	refused := gpuPod("one", 1)
	queued := gpuPod("waiting-8", 8)
	bound := queued.DeepCopy()
	bound.Spec.NodeName = "n"
	cpuPod := gpuPod("cpu", 0)
	tests := []struct {
		name     string
		old, new any
		want     fwk.QueueingHint
	}{
		{"a queued GPU pod is placed", queued, bound, fwk.Queue},
		{"a GPU pod this scheduler bound shows up as assigned", nil, bound, fwk.Queue},
		{"a CPU pod is bound", nil, func() *corev1.Pod { p := cpuPod.DeepCopy(); p.Spec.NodeName = "n"; return p }(), fwk.QueueSkip},
		{"a GPU pod is deleted", bound, nil, fwk.Queue},
		{"a CPU pod is deleted", cpuPod, nil, fwk.QueueSkip},
		{"a pending GPU pod changes, still pending", queued, queued.DeepCopy(), fwk.QueueSkip},
	}
	for _, tc := range tests {
		got, err := k.isSchedulableAfterPodChange(klog.Background(), refused, tc.old, tc.new)
		if err != nil || got != tc.want {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}
