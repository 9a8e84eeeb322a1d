// Package workloadaware scores nodes by the pod's workload class: batch and training
// pods are packed onto the most-allocated nodes (whole nodes stay free for the jobs
// that need them), services and other latency-sensitive pods are spread onto the
// least-allocated (they keep headroom), and pods that ask for no accelerator keep off
// accelerator nodes while other nodes can take them.
package workloadaware

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	resourcehelper "k8s.io/component-helpers/resource"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/scheduler/apis/config"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/gangview"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/names"
)

// Name is the plugin's registered name.
const Name = names.WorkloadAware

const stateKey fwk.StateKey = "PreScore" + Name

// Plugin is the WorkloadAware plugin.
type Plugin struct {
	args *config.WorkloadAwareArgs
	// gangs carries ResourceFragmentation's view of GPUs published through DRA
	// (nil in unit tests).
	gangs *gangview.Registry
}

var (
	_ fwk.PreScorePlugin    = &Plugin{}
	_ fwk.ScorePlugin       = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
	_ fwk.SignPlugin        = &Plugin{}
)

// New builds the plugin from its args and publishes its accelerator rule to the
// profile's other plugins (NetworkFabric plans gangs by it).
func New(_ context.Context, obj runtime.Object, h fwk.Handle, gangs *gangview.Registry) (*Plugin, error) {
	args, err := config.DecodeWorkloadAwareArgs(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	pl := &Plugin{args: args, gangs: gangs}
	if gangs != nil {
		gangs.SetKeepOff(h.ProfileName(), pl.keepsOff)
	}
	return pl, nil
}

// keepsOff returns, for a pod that asks for no accelerator, the test for an
// accelerator node; nil for a pod that asks for one (gangview.KeepOffFunc).
func (pl *Plugin) keepsOff(pod *corev1.Pod) func(fwk.NodeInfo) bool {
	if accelerator, _ := pl.asksForAccelerator(pod, resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})); accelerator {
		return nil
	}
	draNode := pl.draGPUs().Nodes
	var has func(string) bool
	if draNode != nil {
		has = draNode()
	}
	return func(ni fwk.NodeInfo) bool { return pl.isAcceleratorNode(ni, has) }
}

// asksForAccelerator reports whether requests name one of the accelerator resources,
// or the pod's ResourceClaims ask for GPU-class DRA devices (onlyDRA: only they do).
func (pl *Plugin) asksForAccelerator(pod *corev1.Pod, reqs corev1.ResourceList) (accelerator, onlyDRA bool) {
	for _, r := range pl.args.AcceleratorResources {
		if q, ok := reqs[corev1.ResourceName(r)]; ok && q.Sign() > 0 {
			return true, false
		}
	}
	if len(pod.Spec.ResourceClaims) > 0 {
		if f := pl.draGPUs().Pod; f != nil && f(pod) {
			return true, true
		}
	}
	return false, false
}

// draGPUs is ResourceFragmentation's view of GPUs published through DRA (zero when
// it does not run).
func (pl *Plugin) draGPUs() gangview.DRAGPUs {
	if pl.gangs == nil {
		return gangview.DRAGPUs{}
	}
	return pl.gangs.DRAGPUs()
}

// Name returns the plugin's name.
func (pl *Plugin) Name() string { return Name }

// EventsToRegister is empty: the plugin only scores, it never rejects a pod.
func (pl *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{}, nil
}

// SignPod: the score depends on the pod's class (its labels and owners, as
// ProfileClassifier reads them) and its requests, which the default plugins already
// sign; the class is added here.
func (pl *Plugin) SignPod(_ context.Context, pod *corev1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	return []fwk.SignFragment{{Key: "kubenexus.io/workload-strategy", Value: pl.strategyOf(pod)}}, nil
}

// packs reports whether pods of class are packed.
func (pl *Plugin) packs(class string) bool { return slices.Contains(pl.args.PackClasses, class) }
