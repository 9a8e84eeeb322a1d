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
	pl := &Plugin{args: args}
	if gangs != nil {
		gangs.SetKeepOff(h.ProfileName(), pl.keepsOff)
	}
	return pl, nil
}

// keepsOff returns, for a pod that asks for no accelerator, the test for an
// accelerator node; nil for a pod that asks for one (gangview.KeepOffFunc).
func (pl *Plugin) keepsOff(pod *corev1.Pod) func(fwk.NodeInfo) bool {
	if pl.asksForAccelerator(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})) {
		return nil
	}
	return pl.isAcceleratorNode
}

// asksForAccelerator reports whether requests name one of the accelerator resources.
func (pl *Plugin) asksForAccelerator(reqs corev1.ResourceList) bool {
	for _, r := range pl.args.AcceleratorResources {
		if q, ok := reqs[corev1.ResourceName(r)]; ok && q.Sign() > 0 {
			return true
		}
	}
	return false
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
