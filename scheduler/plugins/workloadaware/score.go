package workloadaware

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/profileclassifier"

	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/cyclestate"
)

// weighted is one resource the pod requests, with its weight in the score.
type weighted struct {
	name    corev1.ResourceName
	weight  int64
	request int64 // milli-units for cpu, units otherwise
}

type stateData struct {
	pack bool
	// accelerator: the pod requests one of the accelerator resources (or GPU-class
	// DRA devices).
	accelerator bool
	resources   []weighted
	// draNode tells the nodes whose GPUs are DRA devices (nil: none are).
	draNode func(string) bool
}

func (s *stateData) Clone() fwk.StateData { return s }

// strategyOf names the pod's strategy (for SignPod).
func (pl *Plugin) strategyOf(pod *corev1.Pod) string {
	if pl.packs(string(workload.Classify(pod, workload.Namespace{}, "").Class)) {
		return "pack"
	}
	return "spread"
}

// PreScore reads the pod's class (from ProfileClassifier, or classifies the pod
// itself when that plugin is off) and its requests of the weighted resources. A pod
// whose GPUs are DRA devices of a GPU class (and no accelerator resource) is
// skipped: ResourceFragmentation places it by the cards' free shares, and packing
// it by CPU and memory alone, which is all this plugin sees of it, would pull it
// from partly used GPUs to whole ones.
func (pl *Plugin) PreScore(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	profile, ok := profileclassifier.ProfileOf(cs)
	if !ok {
		profile = workload.Classify(pod, workload.Namespace{}, "")
	}
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	accelerator, onlyDRA := pl.accelerators.AsksFor(pod, reqs)
	if onlyDRA {
		return fwk.NewStatus(fwk.Skip)
	}
	s := &stateData{pack: pl.packs(string(profile.Class)), accelerator: accelerator}
	s.draNode = pl.accelerators.DRANodes()
	for _, r := range pl.args.Resources {
		q, ok := reqs[r.Name]
		if !ok || q.Sign() <= 0 {
			continue
		}
		v := q.Value()
		if r.Name == corev1.ResourceCPU {
			v = q.MilliValue()
		}
		s.resources = append(s.resources, weighted{name: r.Name, weight: int64(r.Weight), request: v})
	}
	cs.Write(stateKey, s)
	return nil
}

// Score rates the node for the pod on the 0–100 scale (see scoreNode).
func (pl *Plugin) Score(_ context.Context, cs fwk.CycleState, _ *corev1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	s := cyclestate.Read[*stateData](cs, stateKey)
	if s == nil {
		return 0, fwk.AsStatus(cyclestate.ErrMissing)
	}
	return pl.scoreNode(s, nodeInfo.GetAllocatable(), nodeInfo.GetRequested(), pl.accelerators.IsAcceleratorNode(nodeInfo, s.draNode)), nil
}

// scoreNode is the score of a node with these allocatable and requested resources
// (acceleratorNode: it has accelerators, in allocatable or as DRA devices).
// For each resource the pod requests, the node's allocation after placing the pod
// is u in [0, 1]; packing scores 100·u, spreading 100·(1−u), weighted over the
// resources. A pod that requests no accelerator scores an accelerator node
// AcceleratorNodeScore and other nodes 50 + score/2, so that it keeps off
// accelerator nodes while other nodes can take it.
func (pl *Plugin) scoreNode(s *stateData, alloc, requested fwk.Resource, acceleratorNode bool) int64 {
	if !s.accelerator && acceleratorNode {
		return int64(*pl.args.AcceleratorNodeScore)
	}
	var sum, weights int64
	for _, r := range s.resources {
		a, used := amount(alloc, r.name), amount(requested, r.name)
		if a <= 0 {
			continue
		}
		u := (used + r.request) * 100 / a
		if u > 100 {
			u = 100
		}
		if !s.pack {
			u = 100 - u
		}
		sum += u * r.weight
		weights += r.weight
	}
	score := int64(50) // a pod that requests none of the weighted resources: neutral
	if weights > 0 {
		score = sum / weights
	}
	if !s.accelerator {
		score = 50 + score/2
	}
	return score
}

// amount reads one resource: milli-CPU, bytes of memory or ephemeral storage, or the
// scalar count.
func amount(r fwk.Resource, name corev1.ResourceName) int64 {
	switch name {
	case corev1.ResourceCPU:
		return r.GetMilliCPU()
	case corev1.ResourceMemory:
		return r.GetMemory()
	case corev1.ResourceEphemeralStorage:
		return r.GetEphemeralStorage()
	}
	return r.GetScalarResources()[name]
}

// ScoreExtensions is nil: scores are already on the 0–100 scale.
func (pl *Plugin) ScoreExtensions() fwk.ScoreExtensions { return nil }
