package explain

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	podv1 "k8s.io/kubernetes/pkg/api/v1/pod"

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/api/hardware"
	"github.com/kube-nexus/kubenexus/api/topology"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/controllers/feasibility"
)

// placementLines are the tier, topology, capacity, then the extra (preemption) and
// start lines of a decision. When no node is open to the pods at all, the tier line
// says why and the others have nothing to add.
func placementLines(g *group, st *state, w *feasibility.Workload, d *feasibility.Decision, extra ...Line) []Line {
	out := []Line{tierLine(g, w, d)}
	if d.GPUMemory > 0 {
		out = append(out, nodeLine(d))
	}
	if d.NUMARefused > 0 {
		out = append(out, numaLine(d))
	}
	if d.Eligible == 0 {
		return out
	}
	out = append(out, topologyLine(g, st, d), capacityLine(d, g, st))
	start := startLine(d, st)
	if g.forecast != nil {
		start = queuedStartLine(d, st, g.forecast)
	}
	if name := g.schedulerName(); d.Fits && name != "" && name != v1alpha1.DefaultSchedulerName {
		start.Text = fmt.Sprintf("they fit now: %s (not KubeNexus) decides when and where", name)
	}
	return append(append(out, extra...), start)
}

func tierLine(g *group, w *feasibility.Workload, d *feasibility.Decision) Line {
	l := Line{Layer: LayerTier, Verdict: OK}
	tier := "tenant tier " + string(w.Tenant)
	// Nodes the tier and the pods' selectors allow; GPU memory and NUMA cells are the
	// node lines'.
	open := d.Eligible + d.MemoryRefused + d.NUMARefused
	switch {
	case open == 0 && d.TierRefused > 0:
		l.Verdict = Blocked
		names, one := tiers(d.RefusingTiers)
		l.Text = fmt.Sprintf("%s: %s %s it on all %s the pods could otherwise use", tier, names, verb(one, "refuses", "refuse"), plural(d.TierRefused, "node", "nodes"))
		l.Action = fmt.Sprintf("run it from a namespace of a tenant tier that %s (label %s), or allow %s there", verb(one, "it allows", "they allow"), v1alpha1.LabelTenantTier, w.Tenant)
	case open == 0:
		l.Verdict = Blocked
		l.Text = fmt.Sprintf("none of the %s takes the pods: their node selector, affinity, tolerations or Kueue flavor rule every one out", plural(d.Nodes, "node", "nodes"))
		l.Action = "relax the pods' node selector or affinity, or add the tolerations their nodes' taints need"
	case d.TierRefused > 0:
		names, one := tiers(d.RefusingTiers)
		l.Text = fmt.Sprintf("%s: %s open to the pods; %s more %s %s, which %s it", tier, plural(open, "node", "nodes"), plural(d.TierRefused, "node", "nodes"),
			verb(d.TierRefused == 1, "belongs to", "belong to"), names, verb(one, "does not admit", "do not admit"))
	default:
		l.Text = fmt.Sprintf("%s: %s of %d open to the pods", tier, plural(open, "node", "nodes"), d.Nodes)
	}
	return l
}

// nodeLine says what the nodes' own facts allow of GPU memory per GPU.
func nodeLine(d *feasibility.Decision) Line {
	need := resource.NewQuantity(d.GPUMemory, resource.BinarySI).String()
	l := Line{Layer: LayerNode, Verdict: OK}
	switch {
	case d.Eligible == 0 && d.MemoryRefused > 0:
		l.Verdict = Blocked
		l.Text = fmt.Sprintf("%s of GPU memory per GPU (%s): the GPUs of all %s otherwise open to the pods have less (their %s or %s labels, else their DRA devices' %s)", need, v1alpha1.AnnotationVRAMRequest,
			plural(d.MemoryRefused, "node", "nodes"), v1alpha1.LabelGPUMemory, v1alpha1.LabelGPUVRAMFallback, hardware.DeviceMemoryCapacity)
		l.Action = "lower " + v1alpha1.AnnotationVRAMRequest + ", or select nodes with larger GPUs"
	case d.MemoryRefused > 0:
		l.Text = fmt.Sprintf("%s of GPU memory per GPU: %s open have it; the GPUs of %s more have less", need, plural(d.Eligible, "node", "nodes"), plural(d.MemoryRefused, "node", "nodes"))
	default:
		l.Text = fmt.Sprintf("%s of GPU memory per GPU: no node open to the pods has less", need)
	}
	return l
}

// numaLine says which nodes' NUMA cells cannot hold the pods under their NUMA policy
// (the pod's hint or the kubelet's, the stricter) even with nothing else on them.
func numaLine(d *feasibility.Decision) Line {
	l := Line{Layer: LayerNode, Verdict: OK}
	if d.Eligible == 0 {
		l.Verdict = Blocked
		l.Text = fmt.Sprintf("NUMA: the cells of all %s otherwise open to the pods cannot hold one under its NUMA policy, even with nothing else on them (%s)",
			plural(d.NUMARefused, "node", "nodes"), d.NUMAWhy)
		l.Action = "ask for less per pod, loosen " + v1alpha1.AnnotationNUMAPolicy + " (restricted or best-effort), or select nodes with larger NUMA cells"
		return l
	}
	l.Text = fmt.Sprintf("NUMA: %s open can hold the pods under their NUMA policy; the cells of %s more cannot (%s)", plural(d.Eligible, "node", "nodes"),
		plural(d.NUMARefused, "node", "nodes"), d.NUMAWhy)
	return l
}

// tiers names HardwareTiers ("HardwareTier a", "HardwareTiers a and b"); one is
// set when there is one.
func tiers(names []string) (string, bool) {
	if len(names) == 1 {
		return "HardwareTier " + names[0], true
	}
	return "HardwareTiers " + join(names), false
}

func verb(one bool, singular, plural string) string {
	if one {
		return singular
	}
	return plural
}

func topologyLine(g *group, st *state, d *feasibility.Decision) Line {
	l := Line{Layer: LayerTopology}
	// Slices and sub-groups: the layers within the gang's domain, and why none holds them.
	layered := func(what, why, action string) Line {
		where := "the cluster"
		if d.Level != feasibility.Anywhere {
			where = "one " + d.Level
		}
		l.Verdict, l.Text = OK, fmt.Sprintf("in %s, %s: fits in %s now", where, what, join(d.Domains))
		if !d.Fits {
			l.Verdict, l.Text, l.Action = Blocked, why, action
		}
		return l
	}
	if d.Slices != "" {
		return layered("in "+d.Slices, d.SliceWhy,
			"wait for room in whole slices, or make the slices smaller (spec.networkTopology.slices on the PodGroup, or Kueue's podset-slice annotations)")
	}
	if d.Groups != "" {
		return layered(d.Groups, d.GroupWhy,
			"wait for room in one domain per sub-group, or widen a sub-group's level (spec.networkTopology.subGroups on the PodGroup)")
	}
	if len(g.pending) > 0 && topology.PlacedByKueue(g.pending[0]) {
		// Kueue's TAS chose the domains; the pods' node selectors hold them, and the
		// capacity line counts the nodes those selectors leave.
		l.Verdict, l.Text = OK, fmt.Sprintf("Kueue's topology-aware scheduling chose the domains (Workload %s): the pods' node selectors hold them",
			g.pending[0].Annotations[v1alpha1.AnnotationKueueWorkload])
		if !d.Fits {
			l.Verdict = Blocked
			l.Text += "; the nodes they name do not hold the pods now"
		}
		return l
	}
	if d.Level == feasibility.Anywhere {
		l.Verdict, l.Text = None, "no topology domain required: the members may spread"
		if d.Fits {
			l.Verdict, l.Text = OK, "no topology domain required; they fit now"
		}
		return l
	}
	switch {
	case d.Fits:
		l.Verdict, l.Text = OK, fmt.Sprintf("fits in %s %s now", d.Level, join(d.Domains))
	case d.Short != nil && d.Short.Spread:
		l.Verdict, l.Text = Blocked, fmt.Sprintf("its bound members already run in more than one %s, so no %s can hold the rest with them", d.Level, d.Level)
	case d.Short != nil && d.Short.Anchored != "":
		l.Verdict, l.Text = Blocked, fmt.Sprintf("its bound members run in %s %s, which holds %d of the %d still needed", d.Level, d.Short.Anchored, d.Short.BestFits, d.Short.Need)
	case d.Short != nil:
		best := ""
		if d.Short.BestDomain != "" && d.Short.BestFits > 0 {
			best = " (" + d.Short.BestDomain + ")"
		}
		l.Verdict = Blocked
		l.Text = fmt.Sprintf("one %s must hold all %d: the largest holds %d%s", d.Level, d.Short.Need, d.Short.BestFits, best)
		l.Action = fmt.Sprintf("wait for room in one %s, lower the gang's size, or make co-location preferred (%s=preferred, or spec.networkTopology.mode on the PodGroup)", d.Level, v1alpha1.AnnotationCoLocate)
	default:
		l.Verdict, l.Text = Blocked, fmt.Sprintf("no %s can hold them", d.Level)
	}
	return l
}

func capacityLine(d *feasibility.Decision, g *group, st *state) Line {
	l := Line{Layer: LayerCapacity, Verdict: OK}
	where := "on the nodes open to them"
	if d.Anchored != "" {
		where = fmt.Sprintf("in %s %s, where its placed members run, on the nodes open to them", d.Level, d.Anchored)
	}
	free := fmt.Sprintf("%s %s free %s, %s needed (%s)", d.Quantity(d.Free), d.Resource, where, d.Quantity(d.Need), d.Shapes)
	switch {
	case d.Fits:
		l.Text = free
	case d.Level == feasibility.Anywhere && d.Short != nil && d.Fragmented():
		l.Verdict, l.Text = Blocked, fmt.Sprintf("%s: enough in total, but in pieces that hold %d of the %s", free, d.Short.BestFits, g.units(d.Short.Need))
	case d.Level == feasibility.Anywhere && d.Short != nil:
		l.Verdict, l.Text = Blocked, fmt.Sprintf("%s; they hold %d of the %s", free, d.Short.BestFits, g.units(d.Short.Need))
	case !d.Fragmented():
		l.Verdict, l.Text = Blocked, free
	case d.Slices != "":
		l.Text = free + ": enough in total, not in whole slices"
	default:
		l.Text = free + ": enough in total, not in one " + d.Level
	}
	if held := reservationsHolding(st, g); held != "" {
		l.Text += "; " + held
	}
	return l
}

// reservationsHolding names the ResourceReservations of other owners that hold room
// now (the scheduler keeps the gang off it; the placement figures above do not count
// it as taken).
func reservationsHolding(st *state, g *group) string {
	var held []string
	for _, rr := range st.reservations {
		if rr.Status.Phase != v1alpha1.ReservationReserved {
			continue
		}
		if g.key != nil && rr.Namespace == g.key.Namespace && rr.Spec.Owner.Kind == v1alpha1.ReservationOwnerPodGroup && rr.Spec.Owner.Name == g.key.Name {
			continue
		}
		slots := rr.Unconsumed()
		if slots <= 0 {
			continue
		}
		where := rr.Status.NodeName
		if where == "" {
			where = "nodes it accumulates"
		}
		var res []string
		for name, q := range rr.Spec.Resources {
			if name == corev1.ResourceCPU || name == corev1.ResourceMemory {
				continue
			}
			res = append(res, fmt.Sprintf("%d × %s %s", slots, q.String(), name))
		}
		sort.Strings(res)
		if len(res) == 0 {
			res = append(res, plural(int(slots), "slot", "slots"))
		}
		held = append(held, fmt.Sprintf("%s/%s (%s on %s, for %s %s)", rr.Namespace, rr.Name, strings.Join(res, ", "), where, rr.Spec.Owner.Kind, rr.Spec.Owner.Name))
	}
	sort.Strings(held)
	if len(held) == 0 {
		return ""
	}
	if len(held) > 3 {
		held = append(held[:3], fmt.Sprintf("%d more", len(held)-3))
	}
	return "ResourceReservations holding room for others: " + join(held)
}

func startLine(d *feasibility.Decision, st *state) Line {
	l := Line{Layer: LayerStart}
	switch {
	case d.Fits:
		l.Verdict, l.Text = OK, "they fit now: the scheduler places them at its next attempt"
	case !d.Start.IsZero():
		l.Verdict = Waiting
		in := d.Start.Sub(st.now).Round(time.Second)
		if in < 0 {
			in = 0
		}
		at := ""
		if d.Level != feasibility.Anywhere {
			at = ", " + where(d)
		}
		l.Text = fmt.Sprintf("earliest %s (in %s)%s, %s", d.Start.UTC().Format(time.RFC3339), in, at, d.StartWhen)
	default:
		l.Verdict = Unknown
		l.Text = "no time can be given: pods in its way have no runtime bound (spec.activeDeadlineSeconds or " + v1alpha1.LabelKueueMaxExecTime + ")"
	}
	return l
}

// queuedStartLine is the start line counting the gangs queued ahead (f): when the
// forecast starts the pods, how many gangs ahead start first, and what it assumes.
func queuedStartLine(d *feasibility.Decision, st *state, f *queueForecast) Line {
	l := Line{Layer: LayerStart}
	assumes := "running pods end at their runtime bounds, gangs ahead run to theirs"
	ahead := fmt.Sprintf("%s queued ahead", plural(f.queued, "gang", "gangs"))
	switch {
	case f.OK:
		in := max(f.Start.Sub(st.now).Round(time.Second), 0)
		l.Verdict = Waiting
		l.Text = fmt.Sprintf("earliest %s (in %s), behind %s (%d of them start first); assumes %s",
			f.Start.UTC().Format(time.RFC3339), in, ahead, len(f.Started), assumes)
	case len(f.Unbounded) > 0:
		l.Verdict = Unknown
		l.Text = fmt.Sprintf("no time can be given: of the %s, %s would start first and %s no runtime bound (spec.activeDeadlineSeconds or %s)",
			ahead, join(f.Unbounded), verb(len(f.Unbounded) == 1, "has", "have"), v1alpha1.LabelKueueMaxExecTime)
	default:
		l = startLine(d, st)
		l.Text += fmt.Sprintf(" (%s)", ahead)
	}
	return l
}

// preemptionLine says whether evicting the running pods GangPreemption could choose
// for the waiting pods — of lower priority, not of the same gang, not services for
// batch or training unless the KubeNexusConfig allows it — would make room, and what
// the scheduler last said of preemption for them.
func preemptionLine(g *group, st *state, w *feasibility.Workload) Line {
	l := Line{Layer: LayerPreemption, Verdict: None}
	p := g.pending[0]
	if p.Spec.PreemptionPolicy != nil && *p.Spec.PreemptionPolicy == corev1.PreemptNever {
		l.Text = "the pods never preempt (preemptionPolicy: Never)"
		return l
	}
	// As GangPreemption weighs them (workload.PreemptionPriority, MayPreempt): a
	// gang's pods at its PodGroup's class, never above their own, and a gang is a
	// victim only when all its running members may be.
	gangValue := func(p *corev1.Pod) *int32 {
		if m, ok, err := gang.Of(p); ok && err == nil && st.gangValue != nil {
			return st.gangValue(m.Key)
		}
		return nil
	}
	prio := workload.PreemptionPriority(p, gangValue(p))
	prof := workload.Classify(p, workload.Namespace{Labels: g.tierLabels(st)}, "")
	c := preemptionCandidates(st, prof, prio, gangValue)
	services, young, victims, evicting, gpuHours := c.services, c.young, c.victims, c.evicting, c.gpuHours
	said := ""
	if _, c := podv1.GetPodCondition(&p.Status, corev1.PodScheduled); c != nil {
		if _, after, ok := strings.Cut(c.Message, "preemption: "); ok {
			said = "; the scheduler's last attempt: " + strings.TrimSuffix(strings.TrimSpace(after), ".")
		}
	}
	spared := ""
	if services > 0 {
		spared = fmt.Sprintf(" (%s of lower priority %s spared: batch does not evict services unless spec.plugins.gangPreemption.preemptServicesForBatch)",
			plural(services, "service pod", "service pods"), verb(services == 1, "is", "are"))
	}
	if young > 0 {
		spared += fmt.Sprintf(" (%s of lower priority %s within the minimum runtime %s, %s, against a tier not above %s)",
			plural(young, "pod", "pods"), verb(young == 1, "is", "are"), verb(young == 1, "it declares", "they declare"), v1alpha1.AnnotationMinRuntime, verb(young == 1, "its own", "their own"))
	}
	lost := ""
	if gpuHours > 0 {
		lost = fmt.Sprintf("; at most %.1f GPU-hours since their last checkpoints would be lost", gpuHours)
	}
	if len(victims) == 0 {
		l.Text = fmt.Sprintf("no running pod it may evict has a priority below %d%s%s%s", prio, spared, consolidationNote(st, w, prof, prio, gangValue), said)
		return l
	}
	d := feasibility.Decide(st.cluster.Without(victims), w)
	switch {
	case evicting > 0:
		l.Verdict, l.Text = Waiting, fmt.Sprintf("%s of priority below %d are being evicted%s", plural(evicting, "pod", "pods"), prio, said)
	case d.Fits:
		l.Text = fmt.Sprintf("evicting pods of priority below %d (%d run now) would make room %s%s%s%s", prio, len(victims), where(&d), lost, spared, said)
	default:
		l.Text = fmt.Sprintf("evicting every pod of priority below %d (%d) would still not make room%s%s%s", prio, len(victims), spared, consolidationNote(st, w, prof, prio, gangValue), said)
	}
	return l
}

// candidates are the running pods GangPreemption may evict for a preemptor, with
// what the preemption line says of them.
type candidates struct {
	victims []*corev1.Pod
	// evicting of them are being evicted; gpuHours is the GPU time they would lose
	// since their last checkpoints; services and young count the pods of lower
	// priority spared: services for batch, pods within their minimum runtime.
	evicting, services, young int
	gpuHours                  float64
}

// preemptionCandidates applies GangPreemption's rules (workload.PreemptionPriority,
// MayPreempt, the minimum runtime) to the running pods for a preemptor of profile
// prof and priority prio: a gang is a victim only when all its running members are.
func preemptionCandidates(st *state, prof workload.Profile, prio int32, gangValue func(*corev1.Pod) *int32) candidates {
	var c candidates
	batch := prof.Class == v1alpha1.WorkloadClassBatch || prof.Class == v1alpha1.WorkloadClassTraining
	var order []string
	units := map[string][]*corev1.Pod{}
	refused := map[string]bool{}
	for i := range st.pods {
		v := &st.pods[i]
		if !workload.OccupiesNode(v) {
			continue
		}
		unit := string(v.UID)
		if m, ok, err := gang.Of(v); ok && err == nil {
			unit = m.Key.String()
		}
		vp := workload.Classify(v, workload.Namespace{}, "")
		vprio := workload.PreemptionPriority(v, gangValue(v))
		ckpt, _ := workload.CheckpointingOf(v)
		if !workload.MayPreempt(prof, prio, vp, vprio, st.cluster.PreemptServicesForBatch) {
			if vprio < prio && batch && !st.cluster.PreemptServicesForBatch && workload.IsService(vp.Class) {
				c.services++
			}
			refused[unit] = true
			continue
		}
		// The victim's tier as the webhook wrote it on the pod (the scheduler
		// reads its namespace's; the same unless the namespace's label changed).
		if ckpt.Protected(workload.StartOf(v), st.now, workload.TierOf(workload.Namespace{Labels: v.Labels}, ""), prof.Tier) {
			c.young++
			refused[unit] = true
			continue
		}
		if _, ok := units[unit]; !ok {
			order = append(order, unit)
		}
		units[unit] = append(units[unit], v)
	}
	for _, u := range order {
		if refused[u] {
			continue
		}
		for _, v := range units[u] {
			if v.DeletionTimestamp != nil {
				c.evicting++
			}
			c.victims = append(c.victims, v)
			ckpt, _ := workload.CheckpointingOf(v)
			c.gpuHours += float64(workload.RequestedGPUs(v)) * ckpt.Lost(workload.StartOf(v), st.now).Hours()
		}
	}
	return c
}

// where says where a fitting decision puts the pods.
func where(d *feasibility.Decision) string {
	if d.Level == feasibility.Anywhere {
		return "on the cluster"
	}
	return fmt.Sprintf("in %s %s", d.Level, join(d.Domains))
}
