package explain

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/controllers/feasibility"
)

// consolidationNote is the dry run of GangPreemption's consolidation for pods that
// do not fit now: the pods it would move (workload.MayMove: labelled preemptible,
// or declaring checkpoints where the KubeNexusConfig allows it; of a priority and
// tier not above theirs; past their minimum runtime; recreated by a controller) to
// place them in one piece, where, and the GPU time lost — or that the plan needs
// more than the budget per gang. "" when consolidation is off, the pods fit
// already, or no plan exists.
func consolidationNote(st *state, w *feasibility.Workload, prof workload.Profile, prio int32, gangValue func(*corev1.Pod) *int32) string {
	c := st.cluster
	if !c.Consolidation.Enabled || feasibility.Decide(c, w).Fits {
		return ""
	}
	var movers []*corev1.Pod
	for i := range st.pods {
		v := &st.pods[i]
		if !workload.OccupiesNode(v) || v.DeletionTimestamp != nil {
			continue
		}
		if !workload.RecreatedElsewhere(v) {
			continue
		}
		// The victim's tier as the webhook wrote it on the pod.
		vp := workload.Classify(v, workload.Namespace{Labels: v.Labels}, "")
		ckpt, _ := workload.CheckpointingOf(v)
		if !workload.MayMove(prof, prio, vp, workload.PreemptionPriority(v, gangValue(v)), ckpt, c.Consolidation.CheckpointedPods, c.PreemptServicesForBatch) ||
			ckpt.Protected(workload.StartOf(v), st.now, vp.Tier, prof.Tier) {
			continue
		}
		movers = append(movers, v)
	}
	if len(movers) == 0 {
		return ""
	}
	plan := feasibility.Consolidate(c, w, movers, func(p *corev1.Pod) float64 {
		ckpt, _ := workload.CheckpointingOf(p)
		return float64(workload.RequestedGPUs(p)) * ckpt.Lost(workload.StartOf(p), st.now).Seconds()
	})
	if plan == nil {
		return ""
	}
	names := make([]string, 0, len(plan.Moved))
	for _, p := range plan.Moved {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	in := "on the cluster"
	if plan.Level != feasibility.Anywhere {
		in = fmt.Sprintf("in %s %s", plan.Level, strings.Join(plan.Domains, ", "))
	}
	note := fmt.Sprintf("; consolidation would move %s (%s) to place them in one piece %s, %.1f GPU-hours lost",
		plural(len(names), "pod", "pods"), strings.Join(names, ", "), in, plan.GPUHours)
	if n := int32(len(names)); n > c.Consolidation.MaxEvictionsPerGang {
		note += fmt.Sprintf(" — over spec.plugins.gangPreemption.consolidation.maxEvictionsPerGang (%d): it waits for pods to end instead", c.Consolidation.MaxEvictionsPerGang)
	}
	return note
}
