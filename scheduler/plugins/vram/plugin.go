// Package vram places pods that ask for GPU memory
// (scheduling.kubenexus.io/vram-request, per GPU) on GPUs that have it, and among
// those on the tightest fit, so that large-memory cards stay free for the pods that
// need them. A node's GPU memory comes from GPU Feature Discovery's
// nvidia.com/gpu.memory label (or the gpu.kubenexus.io/vram fallback), else from
// the memory capacity of the DRA devices its ResourceSlices publish. For pods whose
// GPUs come from DRA ResourceClaims, devices that allocated claims hold are not
// counted; the in-tree DynamicResources plugin still chooses the devices.
package vram

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/scheduler/apis/config"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/cyclestate"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/devices"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/names"
)

// Name is the plugin's registered name.
const Name = names.VRAM

const stateKey fwk.StateKey = "PreFilter" + Name

// Plugin is the VRAM plugin.
type Plugin struct {
	args    *config.VRAMArgs
	handle  fwk.Handle
	devices *devices.Index
}

var (
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.FilterPlugin      = &Plugin{}
	_ fwk.PreScorePlugin    = &Plugin{}
	_ fwk.ScorePlugin       = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
	_ fwk.SignPlugin        = &Plugin{}
)

// New builds the plugin on the shared device index.
func New(_ context.Context, obj runtime.Object, h fwk.Handle, index *devices.Index) (*Plugin, error) {
	args, err := config.DecodeVRAMArgs(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return &Plugin{args: args, handle: h, devices: index}, nil
}

// Name returns the plugin's name.
func (pl *Plugin) Name() string { return Name }

type stateData struct {
	// request is the GPU memory the pod needs per GPU, in bytes.
	request int64
	// gpus is how many device-plugin GPUs the pod requests; 0 for a pod whose GPUs
	// come from ResourceClaims.
	gpus int64
	// allocated are the DRA devices allocated claims hold (for claim pods).
	allocated *structured.AllocatedState
}

func (s *stateData) Clone() fwk.StateData { return s }

func readState(cs fwk.CycleState) *stateData { return cyclestate.Read[*stateData](cs, stateKey) }

// SignPod: the verdict depends on the request (the GPU count is in the requests
// NodeResourcesFit signs).
func (pl *Plugin) SignPod(_ context.Context, pod *corev1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	return []fwk.SignFragment{
		{Key: "v1.Pod.Annotations[" + v1alpha1.AnnotationVRAMRequest + "]", Value: pod.Annotations[v1alpha1.AnnotationVRAMRequest]},
	}, nil
}
