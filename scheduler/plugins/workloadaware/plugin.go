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
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/scheduler/apis/config"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/accelerators"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/names"
)

// Name is the plugin's registered name.
const Name = names.WorkloadAware

const stateKey fwk.StateKey = "PreScore" + Name

// Plugin is the WorkloadAware plugin.
type Plugin struct {
	args *config.WorkloadAwareArgs
	// accelerators tells accelerator nodes and the pods that ask for accelerators.
	accelerators *accelerators.Rule
}

var (
	_ fwk.PreScorePlugin    = &Plugin{}
	_ fwk.ScorePlugin       = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
	_ fwk.SignPlugin        = &Plugin{}
)

// New builds the plugin from its args and applies its accelerator rule in the
// profile (NetworkFabric plans gangs by it). gpus tells GPUs published through DRA
// (nil: none are); rules nil in unit tests.
func New(_ context.Context, obj runtime.Object, h fwk.Handle, rules *accelerators.Rules, gpus accelerators.GPUs) (*Plugin, error) {
	args, err := config.DecodeWorkloadAwareArgs(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	resources := make([]corev1.ResourceName, len(args.AcceleratorResources))
	for i, r := range args.AcceleratorResources {
		resources[i] = corev1.ResourceName(r)
	}
	pl := &Plugin{args: args, accelerators: accelerators.New(resources, gpus)}
	if rules != nil {
		rules.Apply(h.ProfileName(), pl.accelerators)
	}
	return pl, nil
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
