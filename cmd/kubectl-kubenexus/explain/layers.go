package explain

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	podv1 "k8s.io/kubernetes/pkg/api/v1/pod"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/api/hardware"
	"github.com/kube-nexus/kubenexus/api/topology"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/controllers/admissioncheck"
	"github.com/kube-nexus/kubenexus/controllers/feasibility"
)

// Unknown: no time can be given.
const Unknown = "unknown"

// group is what the layers look at: pods with one fate (a gang, or pods placed one
// by one), the PodGroup and the Kueue Workload.
type group struct {
	key      *gang.Key
	pg       *v1alpha1.PodGroup
	min      int
	members  []corev1.Pod
	bound    int
	pending  []*corev1.Pod
	gated    int
	finished int
	wl       *kueue.Workload
	ns       *corev1.Namespace
}

// foreignPodGroups are the other gang APIs a gang's PodGroup may be of, in the order
// the scheduler looks them up (scheduler/crdcache): scheduler-plugins', Volcano's,
// Kubernetes' own.
var foreignPodGroups = []struct {
	newObject func() *unstructured.Unstructured
	read      func(*unstructured.Unstructured) (*v1alpha1.PodGroup, error)
}{
	{v1alpha1.NewSigsPodGroup, v1alpha1.FromSigsPodGroup},
	{v1alpha1.NewVolcanoPodGroup, v1alpha1.FromVolcanoPodGroup},
	{v1alpha1.NewNativePodGroup, v1alpha1.FromNativePodGroup},
}

// podGroup reads the gang's PodGroup: KubeNexus's, else one of another gang API the
// cluster serves, as the scheduler would. NotFound when there is none.
func (e *Explainer) podGroup(ctx context.Context, k gang.Key) (*v1alpha1.PodGroup, error) {
	key := client.ObjectKey{Namespace: k.Namespace, Name: k.Name}
	pg := &v1alpha1.PodGroup{}
	err := e.Client.Get(ctx, key, pg)
	if err == nil {
		return pg, nil
	}
	if !notFound(err) && !feasibility.NotServed(err) {
		return nil, err
	}
	for _, f := range foreignPodGroups {
		u := f.newObject()
		switch ferr := e.Client.Get(ctx, key, u); {
		case ferr == nil:
			return f.read(u)
		case !notFound(ferr) && !feasibility.NotServed(ferr):
			return nil, ferr
		}
	}
	return nil, err
}

// roleCounts counts the group's bound members, and its bound or pending ones, by
// role (workload.RoleOf), as the scheduler counts them against a PodGroup's
// per-role minimums.
func (g *group) roleCounts() (bound, present map[string]int) {
	bound, present = map[string]int{}, map[string]int{}
	for i := range g.members {
		p := &g.members[i]
		if workload.Finished(p) || gang.IsGated(p) {
			continue
		}
		role := string(workload.RoleOf(p))
		present[role]++
		if p.Spec.NodeName != "" {
			bound[role]++
		}
	}
	return bound, present
}

func (e *Explainer) newGroup(ctx context.Context, members []corev1.Pod, wl *kueue.Workload) (*group, error) {
	g := &group{members: members, wl: wl}
	for i := range members {
		p := &members[i]
		switch {
		case workload.Finished(p):
			g.finished++
		case p.Spec.NodeName != "":
			g.bound++
		case gang.IsGated(p):
			g.gated++
		default:
			g.pending = append(g.pending, p)
		}
	}
	namespace := ""
	switch {
	case len(members) > 0:
		namespace = members[0].Namespace
	case wl != nil:
		namespace = wl.Namespace
	}
	if namespace != "" {
		g.ns = &corev1.Namespace{}
		if err := e.Client.Get(ctx, client.ObjectKey{Name: namespace}, g.ns); err != nil {
			if !notFound(err) {
				return nil, err
			}
			g.ns = nil
		}
	}
	return g, nil
}

// section explains pods that are in no gang: each is placed on its own.
func (e *Explainer) section(ctx context.Context, st *state, pods []corev1.Pod, wl *kueue.Workload) (Section, error) {
	g, err := e.newGroup(ctx, pods, wl)
	if err != nil {
		return Section{}, err
	}
	g.min = 1
	return e.lines(st, g), nil
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
	return e.lines(st, g), nil
}

// lines builds the layers of one group.
func (e *Explainer) lines(st *state, g *group) Section {
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
		w := &feasibility.Workload{Tenant: workload.TierOf(workload.Namespace{Labels: g.tierLabels(st)}, ""), PodSets: admissioncheck.PodSetsOf(g.wl)}
		if g.wl.Status.Admission != nil {
			w.ClusterQueue = string(g.wl.Status.Admission.ClusterQueue)
		}
		d := feasibility.Decide(st.cluster, w)
		s.Lines = append(s.Lines, placementLines(g, st, w, &d)...)
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
	}
	s.Lines = append(s.Lines, placementLines(g, st, w, &d, preemption...)...)
	return s
}

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
	if name := g.schedulerName(); d.Fits && name != "" && name != v1alpha1.DefaultSchedulerName {
		start.Text = fmt.Sprintf("they fit now: %s (not KubeNexus) decides when and where", name)
	}
	return append(append(out, extra...), start)
}

// schedulerName is the scheduler the group's pods name ("" when there are none).
func (g *group) schedulerName() string {
	switch {
	case len(g.pending) > 0:
		return g.pending[0].Spec.SchedulerName
	case len(g.members) > 0:
		return g.members[0].Spec.SchedulerName
	}
	return ""
}

// workload is what Decide places: need of the pending pods, grouped by shape, with
// the required topology the gang's policy gives.
func (g *group) workload(st *state, need int) *feasibility.Workload {
	w := &feasibility.Workload{Tenant: workload.TierOf(workload.Namespace{Labels: g.tierLabels(st)}, "")}
	if g.wl != nil && g.wl.Status.Admission != nil {
		w.ClusterQueue = string(g.wl.Status.Admission.ClusterQueue)
	}
	if g.key != nil {
		// Room its own ResourceReservations hold is the gang's to use.
		w.Gang = &types.NamespacedName{Namespace: g.key.Namespace, Name: g.key.Name}
	}
	idx := map[string]int{}
	for _, p := range g.pending[:need] {
		sig := signature(p)
		i, ok := idx[sig]
		if !ok {
			i = len(w.PodSets)
			idx[sig] = i
			w.PodSets = append(w.PodSets, feasibility.PodSet{Name: p.Name, Template: corev1.PodTemplateSpec{ObjectMeta: p.ObjectMeta, Spec: p.Spec}})
		}
		w.PodSets[i].Count++
	}
	if g.key != nil {
		if pol, ok, err := topology.PolicyOf(g.pending[0], g.pg, st.cluster.Levels); err == nil && ok && pol.Required {
			for i := range w.PodSets {
				w.PodSets[i].RequiredTopology = st.cluster.Levels[pol.Level].NodeLabel
			}
		}
		// Its members already running anchor the plan, as in the scheduler's.
		for i := range g.members {
			if p := &g.members[i]; p.Spec.NodeName != "" && !workload.Finished(p) {
				w.PlacedOn = append(w.PlacedOn, p.Spec.NodeName)
			}
		}
	}
	return w
}

// units counts what is placed: a gang's members, or pods.
func (g *group) units(n int) string {
	if g.key != nil {
		return plural(n, "member", "members")
	}
	return plural(n, "pod", "pods")
}

// tierLabels are the labels that carry the pods' tenant tier, read as the scheduler
// reads them: the admitting ClusterQueue's when the KubeNexusConfig takes tiers from
// ClusterQueues (spec.kueue.tenantTierFrom) and that queue has a tier label, else
// the namespace's (nil when it cannot be read).
func (g *group) tierLabels(st *state) map[string]string {
	if st.cluster != nil && st.cluster.TierFromClusterQueue && g.wl != nil && g.wl.Status.Admission != nil {
		if l := st.queueLabels[string(g.wl.Status.Admission.ClusterQueue)]; workload.HasTier(l) {
			return l
		}
	}
	if g.ns == nil {
		return nil
	}
	return g.ns.Labels
}

// signature tells pods with the same placement needs apart from others: requests,
// node selector, affinity, tolerations and whether they may borrow.
func signature(p *corev1.Pod) string {
	requests := map[string]string{}
	for i, c := range p.Spec.Containers {
		for name, q := range c.Resources.Requests {
			requests[fmt.Sprintf("%d/%s", i, name)] = q.String()
		}
	}
	raw, _ := json.Marshal(struct {
		Requests     map[string]string
		NodeSelector map[string]string
		Affinity     *corev1.Affinity
		Tolerations  []corev1.Toleration
		Preemptible  string
	}{requests, p.Spec.NodeSelector, p.Spec.Affinity, p.Spec.Tolerations, p.Labels[v1alpha1.LabelPreemptible]})
	return string(raw)
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
	if g.pg == nil && g.min == 0 {
		l.Verdict = Blocked
		l.Text = fmt.Sprintf("its pods name PodGroup %s, which does not exist", g.key.Name)
		l.Action = fmt.Sprintf("create PodGroup %s in %s with spec.minMember", g.key.Name, g.key.Namespace)
		return l
	}
	counts := fmt.Sprintf("%d of its quorum of %d bound, %d waiting for a node", g.bound, g.min, len(g.pending))
	if g.pg != nil && g.pg.APIVersion != "" && g.pg.APIVersion != v1alpha1.GroupVersion.String() {
		counts = fmt.Sprintf("PodGroup of %s: ", g.pg.APIVersion) + counts
	}
	if g.gated > 0 {
		counts += fmt.Sprintf(", %d gated", g.gated)
	}
	if g.finished > 0 {
		counts += fmt.Sprintf(", %d finished", g.finished)
	}
	present := len(g.members) - g.finished
	var roles map[string]int32
	if g.pg != nil {
		roles = g.pg.Spec.MinMemberPerRole
	}
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
			gang.DescribeShortfall(gang.RoleShortfall(roles, presentRoles)))
		l.Action = fmt.Sprintf("check that the job's controller creates the pods of each role (label %s names a pod's role), or lower spec.minMemberPerRole",
			v1alpha1.LabelWorkloadRole)
	case g.bound >= g.min:
		l.Verdict = Waiting
		l.Text = fmt.Sprintf("%s; %s bound", counts, gang.DescribeShortfall(gang.RoleShortfall(roles, boundRoles)))
	default:
		l.Verdict, l.Text = Waiting, counts
	}
	if g.pg != nil {
		if c := apimeta.FindStatusCondition(g.pg.Status.Conditions, v1alpha1.PodGroupConditionScheduled); c != nil && c.Status != metav1.ConditionTrue && c.Reason != "" {
			l.Text += fmt.Sprintf("; %s for %s", c.Reason, since(st.now, c.LastTransitionTime.Time))
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
	prio := int32(0)
	if p.Spec.Priority != nil {
		prio = *p.Spec.Priority
	}
	prof := workload.Classify(p, workload.Namespace{Labels: g.tierLabels(st)}, "")
	batch := prof.Class == v1alpha1.WorkloadClassBatch || prof.Class == v1alpha1.WorkloadClassTraining
	var victims []*corev1.Pod
	evicting, services := 0, 0
	for i := range st.pods {
		v := &st.pods[i]
		vprio := int32(0)
		if v.Spec.Priority != nil {
			vprio = *v.Spec.Priority
		}
		if !workload.OccupiesNode(v) || vprio >= prio {
			continue
		}
		if m, ok, _ := gang.Of(v); ok && g.key != nil && m.Key == *g.key {
			continue
		}
		if batch && !st.cluster.PreemptServicesForBatch {
			if c := workload.Classify(v, workload.Namespace{}, "").Class; c == v1alpha1.WorkloadClassService || c == v1alpha1.WorkloadClassInference || c == v1alpha1.WorkloadClassInteractive {
				services++
				continue
			}
		}
		if v.DeletionTimestamp != nil {
			evicting++
		}
		victims = append(victims, v)
	}
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
	if len(victims) == 0 {
		l.Text = fmt.Sprintf("no running pod it may evict has a priority below %d%s%s", prio, spared, said)
		return l
	}
	d := feasibility.Decide(st.cluster.Without(victims), w)
	switch {
	case evicting > 0:
		l.Verdict, l.Text = Waiting, fmt.Sprintf("%s of priority below %d are being evicted%s", plural(evicting, "pod", "pods"), prio, said)
	case d.Fits:
		l.Text = fmt.Sprintf("evicting pods of priority below %d (%d run now) would make room %s%s%s", prio, len(victims), where(&d), spared, said)
	default:
		l.Text = fmt.Sprintf("evicting every pod of priority below %d (%d) would still not make room%s%s", prio, len(victims), spared, said)
	}
	return l
}

// where says where a fitting decision puts the pods.
func where(d *feasibility.Decision) string {
	if d.Level == feasibility.Anywhere {
		return "on the cluster"
	}
	return fmt.Sprintf("in %s %s", d.Level, join(d.Domains))
}
