package gangpreemption

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/api/workload"
)

// priorities returns a pod's priority for preemption: the value of the
// PriorityClass its gang's PodGroup names, as Coscheduling resolved it for the queue
// (for a gang it does not know, from the PodGroup, once per gang per call), else
// the pod's own — never more than the pod's own (workload.PreemptionPriority).
func (pl *Plugin) priorities() priorityFunc {
	// byGang: each gang's priority, looked up once per call (nil: its pods' own).
	byGang := map[gang.Key]*int32{}
	return func(p *corev1.Pod, g *gang.Key) int32 {
		if g == nil {
			return workload.PreemptionPriority(p, nil)
		}
		v, seen := byGang[*g]
		if !seen {
			v = pl.gangPriority(*g)
			byGang[*g] = v
		}
		return workload.PreemptionPriority(p, v)
	}
}

// gangPriority is the gang's priority as the queue orders it (the gang Service's),
// else, for a gang with no member of this profile, the value of the PriorityClass
// its PodGroup names; nil when it names none.
func (pl *Plugin) gangPriority(g gang.Key) *int32 {
	if pl.gangs != nil {
		if v, known := pl.gangs.Priority(g); known {
			return v
		}
	}
	if pg := pl.crds.PodGroup(g); pg != nil && pg.Spec.PriorityClassName != "" {
		if pc, err := pl.classes.Get(pg.Spec.PriorityClassName); err == nil {
			return &pc.Value
		}
	}
	return nil
}

// gangOf returns a pod's gang, if it is in one.
func (e *evictor) gangOf(p *corev1.Pod) (gang.Key, bool) {
	m, ok, err := e.gangs.Of(p)
	return m.Key, ok && err == nil
}
