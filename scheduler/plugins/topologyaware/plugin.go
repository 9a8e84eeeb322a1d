// Package topologyaware spreads the replicas of a service over zones, then over
// nodes: a pod of a controller (ReplicaSet, StatefulSet, ...) that declares no
// topologySpreadConstraints of its own is scored toward the zones, and within them
// the nodes, that run the fewest of its controller's pods, so that replicas end with a
// skew of at most one where capacity allows. Pods that declare constraints are left
// to PodTopologySpread; gangs (batch and training) are left to NetworkFabric, which
// packs them instead.
package topologyaware

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/apis/config"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/names"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/profileclassifier"

	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/cyclestate"
)

// Name is the plugin's registered name.
const Name = names.TopologyAware

const stateKey fwk.StateKey = "PreScore" + Name

// Plugin is the TopologyAware plugin.
type Plugin struct {
	handle    fwk.Handle
	zoneLabel string
}

var (
	_ fwk.PreScorePlugin    = &Plugin{}
	_ fwk.ScorePlugin       = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
	_ fwk.SignPlugin        = &Plugin{}
)

// New builds the plugin.
func New(_ context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	args, err := config.DecodeTopologyAwareArgs(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return &Plugin{handle: h, zoneLabel: args.ZoneLabel}, nil
}

// Name returns the plugin's name.
func (pl *Plugin) Name() string { return Name }

// EventsToRegister is empty: the plugin only scores.
func (pl *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{}, nil
}

// SignPod refuses the pods the plugin spreads: where one replica lands changes the
// zone and node counts every other node is scored by, so the ranking opportunistic
// batching would carry from one replica to the next is stale (kube-scheduler's
// PodTopologySpread refuses pods with spread constraints for the same reason).
// Pods it does not score (no controller, gangs, batch and training, pods with
// constraints of their own) add nothing.
func (pl *Plugin) SignPod(_ context.Context, pod *corev1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	if metav1.GetControllerOfNoCopy(pod) == nil || len(pod.Spec.TopologySpreadConstraints) > 0 {
		return nil, nil // not a replica it spreads: no classification needed
	}
	profile := workload.Classify(pod, workload.Namespace{}, "")
	if _, ok := spreads(pod, profile.Class, profile.Gang != nil); ok {
		return nil, fwk.NewStatus(fwk.Unschedulable, "replicas the plugin spreads over zones and nodes are not signable")
	}
	return nil, nil
}

type stateData struct {
	// perZone and perNode count the controller's pods; minZone and minNode are the
	// smallest counts over the zones and nodes that can take the pod.
	perZone          map[string]int
	perNode          map[string]int
	minZone, minNode int
}

func (s *stateData) Clone() fwk.StateData { return s }

// spreads reports whether the plugin handles the pod: a replica of a controller,
// of a class that is spread (not a gang, not batch or training), with no spread
// constraints of its own.
func spreads(pod *corev1.Pod, class v1alpha1.WorkloadClass, inGang bool) (types.UID, bool) {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil || inGang || len(pod.Spec.TopologySpreadConstraints) > 0 {
		return "", false
	}
	switch class {
	case v1alpha1.WorkloadClassBatch, v1alpha1.WorkloadClassTraining:
		return "", false
	}
	return ref.UID, true
}

// PreScore counts the controller's pods per zone and per node over the whole
// snapshot (assumed pods included), once per pod; pods it does not handle are skipped.
func (pl *Plugin) PreScore(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, feasible []fwk.NodeInfo) *fwk.Status {
	if metav1.GetControllerOfNoCopy(pod) == nil {
		return fwk.NewStatus(fwk.Skip) // not a replica: nothing to spread
	}
	profile, ok := profileclassifier.ProfileOf(cs)
	if !ok {
		profile = workload.Classify(pod, workload.Namespace{}, "")
	}
	owner, ok := spreads(pod, profile.Class, profile.Gang != nil)
	if !ok {
		return fwk.NewStatus(fwk.Skip)
	}
	all, err := pl.handle.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return fwk.AsStatus(err)
	}
	s := &stateData{perZone: map[string]int{}, perNode: map[string]int{}}
	for _, ni := range all {
		n := 0
		for _, pi := range ni.GetPods() {
			p := pi.GetPod()
			if p.Namespace != pod.Namespace {
				continue
			}
			if ref := metav1.GetControllerOfNoCopy(p); ref != nil && ref.UID == owner {
				n++
			}
		}
		if n > 0 {
			s.perNode[ni.Node().Name] = n
			s.perZone[ni.Node().Labels[pl.zoneLabel]] += n
		}
	}
	s.minZone, s.minNode = -1, -1
	for _, ni := range feasible {
		z, n := s.perZone[ni.Node().Labels[pl.zoneLabel]], s.perNode[ni.Node().Name]
		if s.minZone < 0 || z < s.minZone {
			s.minZone = z
		}
		if s.minNode < 0 || n < s.minNode {
			s.minNode = n
		}
	}
	cs.Write(stateKey, s)
	return nil
}

// Score: 80 for a node in a zone with the fewest replicas (0 in any other zone),
// plus 20 for a node with the fewest replicas, less 5 per replica above that.
func (pl *Plugin) Score(_ context.Context, cs fwk.CycleState, _ *corev1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	s := cyclestate.Read[*stateData](cs, stateKey)
	if s == nil {
		return 0, nil
	}
	node := nodeInfo.Node()
	var score int64
	if s.perZone[node.Labels[pl.zoneLabel]] == s.minZone {
		score = 80
	}
	score += max(0, 20-5*int64(s.perNode[node.Name]-s.minNode))
	return score, nil
}

// ScoreExtensions is nil: scores are already on the 0–100 scale.
func (pl *Plugin) ScoreExtensions() fwk.ScoreExtensions { return nil }
