// Package backfill lends capacity that ResourceReservations hold, and their owners
// have not consumed yet. Preemptible pods (workload.kubenexus.io/preemptible=true)
// may use any of it: the ResourceReservation filter lets them in, this plugin's
// score sends them there before they take capacity nobody holds, and GangPreemption
// evicts them when the owner comes for the room, whatever their priority. Pods whose
// runtime is bounded (activeDeadlineSeconds, Kueue's max execution time) may use the
// room accumulating for a waiting gang when they end, with the safety margin, before
// that gang can start (EASY backfill).
package backfill

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/scheduler/apis/config"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/nodefree"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/names"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/resourcereservation"

	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/cyclestate"
)

// Name is the plugin's registered name.
const Name = names.Backfill

const stateKey fwk.StateKey = "PreScore" + Name

// Plugin is the Backfill plugin.
type Plugin struct {
	shared *resourcereservation.Shared
}

var (
	_ fwk.PreScorePlugin = &Plugin{}
	_ fwk.ScorePlugin    = &Plugin{}
	_ fwk.SignPlugin     = &Plugin{}
)

// New builds the plugin and turns lending on in the reservations the process shares.
func New(_ context.Context, obj runtime.Object, _ fwk.Handle, shared *resourcereservation.Shared) (*Plugin, error) {
	args, err := config.DecodeBackfillArgs(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	shared.Lend()
	shared.LendBounded(time.Duration(*args.SafetyMarginSeconds) * time.Second)
	return &Plugin{shared: shared}, nil
}

// Name returns the plugin's name.
func (pl *Plugin) Name() string { return Name }

type requests map[corev1.ResourceName]int64

func (r requests) Clone() fwk.StateData { return r }

// PreScore skips every pod that is not preemptible.
func (pl *Plugin) PreScore(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	if !pl.shared.Lends(pod) {
		return fwk.NewStatus(fwk.Skip)
	}
	cs.Write(stateKey, requests(nodefree.Requests(pod)))
	return nil
}

// Score is 100 on a node where what reservations hold, unconsumed, covers the pod:
// a preemptible pod borrows held room before it takes room nobody holds.
func (pl *Plugin) Score(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, ni fwk.NodeInfo) (int64, *fwk.Status) {
	req := cyclestate.Read[requests](cs, stateKey)
	if req == nil {
		return 0, nil
	}
	held := pl.shared.Held(pod, ni)
	if len(held) == 0 {
		return 0, nil
	}
	for name, v := range req {
		if _, reserved := held[name]; reserved && held[name] < v {
			return 0, nil
		}
	}
	for name := range req {
		if held[name] > 0 {
			return fwk.MaxScore, nil
		}
	}
	return 0, nil
}

// ScoreExtensions is nil: scores are already on the 0–100 scale.
func (pl *Plugin) ScoreExtensions() fwk.ScoreExtensions { return nil }

// SignPod: only preemptible pods are scored.
func (pl *Plugin) SignPod(_ context.Context, pod *corev1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	return []fwk.SignFragment{{Key: "kubenexus.io/preemptible", Value: pod.Labels[v1alpha1.LabelPreemptible] == "true"}}, nil
}
