package explain

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	podv1 "k8s.io/kubernetes/pkg/api/v1/pod"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/controllers/feasibility"
)

// Unknown: no time can be given.
const Unknown = "unknown"

// section explains pods that are in no gang: each is placed on its own.
func (e *Explainer) section(ctx context.Context, st *state, pods []corev1.Pod, wl *kueue.Workload) (Section, error) {
	g, err := e.newGroup(ctx, pods, wl)
	if err != nil {
		return Section{}, err
	}
	g.min = 1
	return e.lines(ctx, st, g), nil
}

// gangSection explains one gang.
func (e *Explainer) gangSection(ctx context.Context, st *state, k gang.Key, members []corev1.Pod, wl *kueue.Workload) (Section, error) {
	g, err := e.newGroup(ctx, members, wl)
	if err != nil {
		return Section{}, err
	}
	g.key = &k
	if pg, err := e.podGroup(ctx, k); err == nil {
		g.pg = pg
		g.min = int(pg.Spec.MinMember)
	} else if !notFound(err) && !feasibility.NotServed(err) {
		return Section{}, err
	}
	if g.pg == nil {
		for i := range members {
			if m, ok, _ := gang.Of(&members[i]); ok && m.MinMember > 0 {
				g.min = int(m.MinMember)
				break
			}
		}
	}
	return e.lines(ctx, st, g), nil
}

// lines builds the layers of one group.
func (e *Explainer) lines(ctx context.Context, st *state, g *group) Section {
	var s Section
	s.Lines = append(s.Lines, admission(g, st), queue(g, st.placementChecks), gangLine(g, st))
	if st.namespaceView {
		s.Lines = append(s.Lines, schedulerLine(g, st))
		return s
	}
	need := len(g.pending)
	if g.key != nil && g.min > 0 {
		// The gang is tried all at once until its quorum is bound; after that each
		// late member is tried on its own.
		if missing := g.min - g.bound; missing > 0 {
			need = min(missing, len(g.pending))
		} else if need > 0 {
			need = 1
		}
	}
	if len(g.members) == 0 && g.wl != nil && len(g.wl.Spec.PodSets) > 0 {
		// Kueue holds the job: no pod exists yet. Place what the Workload asks for.
		w := &feasibility.Workload{Tenant: workload.TierOf(workload.Namespace{Labels: g.tierLabels(st)}, ""), PodSets: feasibility.PodSetsOf(g.wl)}
		if g.wl.Status.Admission != nil {
			w.ClusterQueue = string(g.wl.Status.Admission.ClusterQueue)
		}
		d := feasibility.Decide(st.cluster, w)
		s.Lines = append(s.Lines, placementLines(g, st, w, &d)...)
		if g.wl.Status.Admission == nil {
			// It waits for quota: when Kueue's queues admit it comes first.
			if l, ok := e.quotaStartLine(ctx, st, g.wl); ok {
				s.Lines = slices.DeleteFunc(s.Lines, func(l Line) bool { return l.Layer == LayerStart })
				s.Lines = append(s.Lines, l)
			}
		}
		return s
	}
	if need == 0 {
		verdict, text := OK, fmt.Sprintf("no member waits for a node (%d bound)", g.bound)
		if len(g.members) == 0 {
			verdict, text = None, "no pods yet"
		} else if g.gated > 0 {
			verdict, text = Waiting, fmt.Sprintf("%s behind scheduling gates: placement is decided once they are lifted", plural(g.gated, "pod", "pods"))
		}
		s.Lines = append(s.Lines, Line{Layer: LayerTopology, Verdict: verdict, Text: text})
		return s
	}
	w := g.workload(st, need)
	d := feasibility.Decide(st.cluster, w)
	var preemption []Line
	if !d.Fits && d.Eligible > 0 {
		preemption = append(preemption, preemptionLine(g, st, w))
		g.forecast = e.forecast(ctx, st, g, w)
	}
	s.Lines = append(s.Lines, placementLines(g, st, w, &d, preemption...)...)
	return s
}

func admission(g *group, st *state) Line {
	l := Line{Layer: LayerAdmission, Verdict: OK}
	if len(g.members) == 0 {
		l.Verdict, l.Text = None, "no pods yet"
		return l
	}
	p := &g.members[0]
	if len(g.pending) > 0 {
		p = g.pending[0]
	}
	prof := workload.Classify(p, workload.Namespace{Labels: g.tierLabels(st)}, "")
	what := string(prof.Class)
	if prof.Framework != "" {
		what += " (" + string(prof.Framework)
		if prof.Role != "" {
			what += " " + string(prof.Role)
		}
		what += ")"
	}
	var parts []string
	parts = append(parts, what+", tenant tier "+string(prof.Tier))
	switch {
	case prof.GangError != nil:
		l.Verdict, l.Text = Blocked, what+": its gang labels are invalid: "+prof.GangError.Error()
		l.Action = "fix the pod template's gang labels"
		return l
	case g.key != nil:
		m, _, _ := gang.Of(p)
		parts = append(parts, fmt.Sprintf("ganged as %s (%s)", g.key.Name, m.Dialect))
	case p.Annotations[v1alpha1.AnnotationAutoGangSkipped] != "":
		parts = append(parts, "not ganged: "+p.Annotations[v1alpha1.AnnotationAutoGangSkipped])
		l.Action = "set " + v1alpha1.AnnotationGangMinMember + " on the pod template to gang its pods"
	default:
		parts = append(parts, "in no gang: each pod is placed on its own")
	}
	if p.Spec.SchedulerName != v1alpha1.DefaultSchedulerName {
		l.Verdict = None
		parts = append(parts, fmt.Sprintf("scheduled by %s, not KubeNexus", p.Spec.SchedulerName))
		l.Action = fmt.Sprintf("label namespace %s %s=true so that the webhook sends its pods to %s", p.Namespace, v1alpha1.LabelNamespaceEnabled, v1alpha1.DefaultSchedulerName)
	}
	l.Text = strings.Join(parts, "; ")
	return l
}

func queue(g *group, placementChecks map[string]bool) Line {
	l := Line{Layer: LayerQueue, Verdict: None, Text: "not queued by Kueue"}
	wl := g.wl
	if wl == nil {
		for i := range g.members {
			for _, gate := range g.members[i].Spec.SchedulingGates {
				if gate.Name == v1alpha1.KueueAdmissionGate {
					l.Verdict, l.Text = Waiting, "pods gated by Kueue ("+v1alpha1.KueueAdmissionGate+"), but no Workload of theirs was found"
					return l
				}
			}
		}
		return l
	}
	name := "Workload " + wl.Name
	cq := ""
	if wl.Status.Admission != nil {
		cq = string(wl.Status.Admission.ClusterQueue)
	}
	switch {
	case apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadFinished):
		l.Verdict, l.Text = OK, name+" finished"
	case apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadAdmitted):
		l.Verdict, l.Text = OK, fmt.Sprintf("%s admitted by ClusterQueue %s", name, cq)
	case apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadQuotaReserved):
		var checks []string
		l.Verdict = Waiting
		for _, c := range wl.Status.AdmissionChecks {
			if c.State == kueue.CheckStateReady {
				continue
			}
			if c.State == kueue.CheckStateRetry || c.State == kueue.CheckStateRejected {
				l.Verdict = Blocked
			}
			// The placement check's reasons are the topology and capacity lines.
			msg := c.Message
			if placementChecks[string(c.Name)] {
				msg = "the topology and capacity lines say why"
			}
			checks = append(checks, fmt.Sprintf("admission check %s: %s (%s)", c.Name, c.State, msg))
		}
		if len(checks) == 0 {
			l.Text = fmt.Sprintf("%s has quota in ClusterQueue %s and passed its admission checks: Kueue admits it next", name, cq)
		} else {
			l.Text = fmt.Sprintf("%s has quota in ClusterQueue %s; %s", name, cq, join(checks))
		}
	default:
		l.Verdict = Blocked
		c := apimeta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadQuotaReserved)
		l.Text = name + " waits for quota in LocalQueue " + string(wl.Spec.QueueName)
		if c != nil && c.Message != "" {
			l.Text += ": " + c.Message
		}
		l.Action = "more quota (nominal or borrowable) in its ClusterQueue, or fewer workloads ahead of it"
	}
	return l
}

func gangLine(g *group, st *state) Line {
	l := Line{Layer: LayerGang, Verdict: None, Text: "in no gang"}
	if g.key == nil {
		return l
	}
	if g.pg == nil && g.min == 0 && g.key.Composite {
		l.Verdict = Blocked
		l.Text = fmt.Sprintf("its pods' PodGroups name CompositePodGroup %s, which does not exist: they wait for it", g.key.Name)
		l.Action = fmt.Sprintf("create CompositePodGroup %s in %s with spec.schedulingPolicy.gang.minGroupCount", g.key.Name, g.key.Namespace)
		return l
	}
	if g.pg == nil && g.min == 0 {
		l.Verdict = Blocked
		l.Text = fmt.Sprintf("its pods name PodGroup %s, which does not exist", g.key.Name)
		l.Action = fmt.Sprintf("create PodGroup %s in %s with spec.minMember", g.key.Name, g.key.Namespace)
		return l
	}
	counts := fmt.Sprintf("%d of its quorum of %d bound, %d waiting for a node", g.bound, g.min, len(g.pending))
	if g.pg != nil && g.pg.APIVersion != "" && g.pg.APIVersion != v1alpha1.GroupVersion.String() {
		kind := "PodGroup"
		if g.pg.Kind != "" {
			kind = g.pg.Kind
		}
		counts = fmt.Sprintf("%s of %s: ", kind, g.pg.APIVersion) + counts
	}
	if g.gated > 0 {
		counts += fmt.Sprintf(", %d gated", g.gated)
	}
	if g.finished > 0 {
		counts += fmt.Sprintf(", %d finished", g.finished)
	}
	present := len(g.members) - g.finished
	roles := gang.RolesOf(g.pg)
	boundRoles, presentRoles := g.roleCounts()
	switch {
	case g.bound >= g.min && gang.RolesMet(roles, boundRoles):
		l.Verdict, l.Text = OK, "quorum bound: "+counts
	case g.bound+len(g.pending)+g.gated < g.min:
		l.Verdict = Waiting
		l.Text = fmt.Sprintf("%d of %d members exist (%s): the gang waits for the rest to be created", present, g.min, counts)
		l.Action = "check that the job's controller creates all its pods, or lower the gang's minMember"
	case !gang.RolesMet(roles, presentRoles):
		l.Verdict = Waiting
		l.Text = fmt.Sprintf("%s: the gang waits for members of every role its PodGroup requires (%s)", counts,
			gang.DescribeShortfall(roles, gang.RoleShortfall(roles, presentRoles)))
		l.Action = fmt.Sprintf("check that the job's controller creates the pods of each role (label %s names a pod's role), or lower spec.minMemberPerRole",
			v1alpha1.LabelWorkloadRole)
	case g.bound >= g.min:
		l.Verdict = Waiting
		l.Text = fmt.Sprintf("%s; %s bound", counts, gang.DescribeShortfall(roles, gang.RoleShortfall(roles, boundRoles)))
	default:
		l.Verdict, l.Text = Waiting, counts
	}
	if g.pg != nil {
		if c := apimeta.FindStatusCondition(g.pg.Status.Conditions, v1alpha1.PodGroupConditionScheduled); c != nil && c.Status != metav1.ConditionTrue && c.Reason != "" {
			l.Text += fmt.Sprintf("; %s for %s", c.Reason, since(st.now, c.LastTransitionTime.Time))
		}
		// A running gang that lost members: what the manager does about it.
		if c := apimeta.FindStatusCondition(g.pg.Status.Conditions, v1alpha1.PodGroupConditionRepairing); c != nil && c.Status == metav1.ConditionTrue {
			l.Verdict = Waiting
			l.Text += fmt.Sprintf("; repairing (%s) for %s: %s", c.Reason, since(st.now, c.LastTransitionTime.Time), c.Message)
			l.Action = "the workload's controller creates the replacements; spec.recovery of the PodGroup bounds how long before the gang is restarted whole"
		}
	}
	return l
}

// schedulerLine is the scheduler's last verdict on the group's waiting pods (their
// PodScheduled condition) and on its gang (the PodGroup's Scheduled condition): what
// a reader of one namespace can know of placement.
func schedulerLine(g *group, st *state) Line {
	l := Line{Layer: LayerScheduler, Verdict: OK, Text: fmt.Sprintf("no pod waits for a node (%d bound)", g.bound)}
	switch {
	case len(g.members) == 0:
		l.Verdict, l.Text = None, "no pods yet"
		return l
	case len(g.pending) == 0 && g.gated > 0:
		l.Verdict, l.Text = Waiting, fmt.Sprintf("%s behind scheduling gates: the scheduler tries them once the gates are lifted", plural(g.gated, "pod", "pods"))
		return l
	case len(g.pending) == 0:
		return l
	}
	// The most recent refusal among the waiting pods, and how many share its message.
	refusal := func(p *corev1.Pod) *corev1.PodCondition {
		if _, c := podv1.GetPodCondition(&p.Status, corev1.PodScheduled); c != nil && c.Status == corev1.ConditionFalse && c.Message != "" {
			return c
		}
		return nil
	}
	var last *corev1.PodCondition
	for _, p := range g.pending {
		if c := refusal(p); c != nil && (last == nil || c.LastTransitionTime.After(last.LastTransitionTime.Time)) {
			last = c
		}
	}
	same := 0
	for _, p := range g.pending {
		if c := refusal(p); c != nil && last != nil && c.Message == last.Message {
			same++
		}
	}
	l.Action = "the placement layers (tier, topology, capacity, preemption, start) need cluster-wide read: ask for the ClusterRole kubenexus-explain"
	var parts []string
	if last != nil {
		l.Verdict = Blocked
		parts = append(parts, fmt.Sprintf("%s, %s ago, of %s waiting: %s", last.Reason, since(st.now, last.LastTransitionTime.Time),
			plural(len(g.pending), "pod", "pods"), last.Message))
		if same < len(g.pending) {
			parts[0] += fmt.Sprintf(" (%d of them with this message)", same)
		}
	}
	if g.pg != nil {
		if c := apimeta.FindStatusCondition(g.pg.Status.Conditions, v1alpha1.PodGroupConditionScheduled); c != nil && c.Status != metav1.ConditionTrue && c.Message != "" {
			parts = append(parts, fmt.Sprintf("PodGroup %s: %s", c.Reason, c.Message))
			if c.Reason == v1alpha1.ReasonInsufficientCapacity || c.Reason == v1alpha1.ReasonTopologyUnsatisfiable || c.Reason == v1alpha1.ReasonTimeout {
				l.Verdict = Blocked
			}
		}
	}
	if len(parts) == 0 {
		l.Verdict = Waiting
		parts = append(parts, fmt.Sprintf("%s waiting, not refused yet: the scheduler has not reported on them", plural(len(g.pending), "pod", "pods")))
	}
	l.Text = strings.Join(parts, "; ")
	return l
}
