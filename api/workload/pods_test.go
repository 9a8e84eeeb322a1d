package workload_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	testutil "github.com/kube-nexus/kubenexus/test/util"
)

func TestPodPredicates(t *testing.T) {
	pod := func() *testutil.PodWrapper { return testutil.MakePod("p", "ns").GPUs(2) }
	for name, tc := range map[string]struct {
		pod                *corev1.Pod
		finished, occupies bool
		requested, held    int64
	}{
		"pending":                      {pod().Obj(), false, false, 2, 0},
		"bound and running":            {pod().Node("n").Phase(corev1.PodRunning).Obj(), false, true, 2, 2},
		"bound, phase not set":         {pod().Node("n").Obj(), false, true, 2, 2},
		"succeeded on its node":        {pod().Node("n").Phase(corev1.PodSucceeded).Obj(), true, false, 2, 0},
		"failed on its node":           {pod().Node("n").Phase(corev1.PodFailed).Obj(), true, false, 2, 0},
		"an init container wants more": {pod().InitReq(string(v1alpha1.ResourceNvidiaGPU), "4").Node("n").Obj(), false, true, 4, 4},
		"no GPU":                       {testutil.MakePod("cpu", "ns").Req("cpu", "1").Node("n").Obj(), false, true, 0, 0},
	} {
		if got := workload.Finished(tc.pod); got != tc.finished {
			t.Errorf("%s: Finished %v, want %v", name, got, tc.finished)
		}
		if got := workload.OccupiesNode(tc.pod); got != tc.occupies {
			t.Errorf("%s: OccupiesNode %v, want %v", name, got, tc.occupies)
		}
		if got := workload.RequestedGPUs(tc.pod); got != tc.requested {
			t.Errorf("%s: RequestedGPUs %d, want %d", name, got, tc.requested)
		}
		if got := workload.HeldGPUs(tc.pod); got != tc.held {
			t.Errorf("%s: HeldGPUs %d, want %d", name, got, tc.held)
		}
	}
	names := []corev1.ResourceName{v1alpha1.ResourceNvidiaGPU}
	if !workload.NamesAny(testutil.MakePod("i", "ns").InitReq(string(v1alpha1.ResourceNvidiaGPU), "1").Obj(), names) {
		t.Error("NamesAny misses a GPU named by an init container only")
	}
	if workload.NamesAny(testutil.MakePod("c", "ns").Req("cpu", "1").Obj(), names) {
		t.Error("NamesAny finds a GPU in a CPU-only pod")
	}
	// Other GPU resources count only when named.
	amd := testutil.MakePod("amd", "ns").Req("amd.com/gpu", "1").Obj()
	if got := workload.RequestedGPUs(amd); got != 0 {
		t.Errorf("amd.com/gpu without names: %d, want 0 (nvidia.com/gpu by default)", got)
	}
	if got := workload.RequestedGPUs(amd, "nvidia.com/gpu", "amd.com/gpu"); got != 1 {
		t.Errorf("amd.com/gpu named: %d, want 1", got)
	}
}

// A pod whose only GPU request is in an init container is classified as training,
// as kube-scheduler counts the GPUs it holds while it starts.
func TestInitContainerGPUsMakeATrainingPod(t *testing.T) {
	p := testutil.MakePod("p", "ns").InitReq(string(v1alpha1.ResourceNvidiaGPU), "1").Obj()
	if got := workload.Classify(p, workload.Namespace{}, "").Class; got != v1alpha1.WorkloadClassTraining {
		t.Errorf("class %s, want training", got)
	}
}
