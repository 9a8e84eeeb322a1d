// Package explain answers "why is it pending, and when will it run?" for a pod, a
// PodGroup, a framework job or a Kueue Workload: one line per layer KubeNexus passes a
// workload through — admission, queue, gang, tier, topology, capacity, preemption, start — each
// with its verdict and, where one exists, what would unblock it. Each fact is said
// once; no layer quotes another's message. Placement is decided by the engine of the
// Kueue placement check (controllers/feasibility), over what a reader with list
// access sees.
package explain

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/controllers/admissioncheck"
	"github.com/kube-nexus/kubenexus/controllers/feasibility"
)

// Verdicts of a layer.
const (
	// OK: this layer lets the workload through.
	OK = "ok"
	// Blocked: this layer holds the workload; the line says why.
	Blocked = "blocked"
	// Waiting: this layer is still at work on it (queued, binding).
	Waiting = "waiting"
	// None: the layer does not apply (no Kueue, no gang).
	None = "-"
)

// Layers, in the order a workload passes them.
const (
	LayerAdmission = "admission"
	LayerQueue     = "queue"
	LayerGang      = "gang"
	LayerTier      = "tier"
	// LayerNode: what the nodes' own facts allow (GPU memory per GPU).
	LayerNode     = "node"
	LayerTopology = "topology"
	LayerCapacity = "capacity"
	LayerStart    = "start"
	// LayerPreemption: whether evicting lower-priority pods would make room.
	LayerPreemption = "preemption"
	// LayerScheduler: in the namespace view, the scheduler's own last verdict on the
	// pods, in place of the placement layers a namespace reader cannot compute.
	LayerScheduler = "scheduler"
)

// Line is one layer's verdict.
type Line struct {
	Layer, Verdict, Text string
	// Action is what would unblock the layer ("" when nothing the user does would).
	Action string
}

// Section is the explanation of one gang (or of one ungrouped set of pods) of the
// subject.
type Section struct {
	Title string
	Lines []Line
}

// Report is the explanation of a subject.
type Report struct {
	Subject string
	// View says what the report could not read ("" when it read the whole cluster).
	View     string
	Sections []Section
}

// Line returns the section's line of a layer (nil when it has none).
func (s *Section) Line(layer string) *Line {
	for i := range s.Lines {
		if s.Lines[i].Layer == layer {
			return &s.Lines[i]
		}
	}
	return nil
}

// Write prints the report as aligned columns: layer, verdict, what, and the action
// on a line of its own under it. It writes once.
func (r *Report) Write(w io.Writer) error {
	var b bytes.Buffer
	fmt.Fprintln(&b, r.Subject)
	if r.View != "" {
		fmt.Fprintf(&b, "  (%s)\n", r.View)
	}
	for _, s := range r.Sections {
		if s.Title != "" {
			fmt.Fprintf(&b, "\n%s\n", s.Title)
		}
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		for _, l := range s.Lines {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", l.Layer, l.Verdict, l.Text)
			if l.Action != "" {
				fmt.Fprintf(tw, "  \t\t→ %s\n", l.Action)
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// Explainer reads the cluster once per explanation.
type Explainer struct {
	Client client.Reader
	// Now is the time the report is made at (time.Now when nil).
	Now func() time.Time
}

func (e *Explainer) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// state is what one explanation reads.
type state struct {
	cluster      *feasibility.Cluster
	pods         []corev1.Pod
	reservations []v1alpha1.ResourceReservation
	// placementChecks are the names of the Kueue AdmissionChecks the placement
	// check runs.
	placementChecks map[string]bool
	// queueLabels are the ClusterQueues' labels by name, read when tenant tiers come
	// from them (Cluster.TierFromClusterQueue).
	queueLabels map[string]map[string]string
	now         time.Time
	// gangValue is the value of the PriorityClass a gang's PodGroup names (nil:
	// none), read once per gang: what GangPreemption weighs the gang's pods by
	// (workload.PreemptionPriority). Nil in the namespace view.
	gangValue func(gang.Key) *int32
	// namespaceView is set when the reader may not read pods and nodes cluster-wide
	// (a tenant bound to kubenexus-explain-namespace): cluster is nil, pods are the
	// namespace's, and the placement layers give way to the scheduler's own verdict.
	namespaceView bool
	// podGroups are KubeNexus's PodGroups by gang, and namespaceObjects the
	// namespaces by name (listed when the start line needs the gangs queued ahead).
	podGroups        map[gang.Key]*v1alpha1.PodGroup
	namespaceObjects map[string]*corev1.Namespace
	// composites are the gangs of the CompositePodGroups that hold the Kubernetes
	// PodGroups the pods name (Explainer.composites).
	composites map[gang.Key]gang.Key
}

// gangOf is the pod's gang as the scheduler files it: gang.Of, with a Kubernetes
// PodGroup of a CompositePodGroup read as the composite's gang.
func (st *state) gangOf(p *corev1.Pod) (gang.Membership, bool) {
	m, ok, err := gang.Of(p)
	if err != nil || !ok {
		return m, false
	}
	if k, in := st.composites[m.Key]; in && m.Dialect == gang.DialectNative {
		m.Key = k
	}
	return m, true
}

// NamespaceView is what a report read in one namespace only leaves out.
const NamespaceView = "namespace view: the tier, topology, capacity, preemption and start layers need cluster-wide read (ClusterRole kubenexus-explain); the scheduler line is the scheduler's own last verdict"

// read reads the cluster; namespace, when not empty, is the namespace the view falls
// back to when the reader may not list pods and nodes cluster-wide.
func (e *Explainer) read(ctx context.Context, namespace string) (*state, error) {
	c, pods, err := feasibility.Read(ctx, e.Client)
	if apierrors.IsForbidden(err) && namespace != "" {
		return e.readNamespace(ctx, namespace)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the cluster: %w", err)
	}
	var rrs v1alpha1.ResourceReservationList
	if err := e.Client.List(ctx, &rrs); err != nil && !feasibility.NotServed(err) {
		return nil, fmt.Errorf("reading ResourceReservations: %w", err)
	}
	var checks kueue.AdmissionCheckList
	if err := e.Client.List(ctx, &checks); err != nil && !feasibility.NotServed(err) {
		return nil, fmt.Errorf("reading Kueue's AdmissionChecks: %w", err)
	}
	placement := map[string]bool{}
	for _, ac := range checks.Items {
		if ac.Spec.ControllerName == admissioncheck.ControllerName {
			placement[ac.Name] = true
		}
	}
	st := &state{cluster: c, pods: pods, reservations: rrs.Items, placementChecks: placement, now: e.now(), composites: e.composites(ctx, pods)}
	if st.gangValue, st.podGroups, err = e.gangValues(ctx); err != nil {
		return nil, err
	}
	if c.TierFromClusterQueue {
		var queues kueue.ClusterQueueList
		if err := e.Client.List(ctx, &queues); err != nil && !feasibility.NotServed(err) {
			return nil, fmt.Errorf("reading Kueue's ClusterQueues: %w", err)
		}
		st.queueLabels = map[string]map[string]string{}
		for _, q := range queues.Items {
			st.queueLabels[q.Name] = q.Labels
		}
	}
	return st, nil
}

// gangValues returns the value of the PriorityClass each gang's PodGroup names
// (nil: none, or the gang has no PodGroup), from KubeNexus's PodGroups listed once
// and, for a gang without one, its PodGroup of another gang API (podGroup); each
// gang and each class is read once. It returns KubeNexus's PodGroups by gang too.
func (e *Explainer) gangValues(ctx context.Context) (func(gang.Key) *int32, map[gang.Key]*v1alpha1.PodGroup, error) {
	var pgs v1alpha1.PodGroupList
	if err := e.Client.List(ctx, &pgs); err != nil && !feasibility.NotServed(err) {
		return nil, nil, fmt.Errorf("reading PodGroups: %w", err)
	}
	classOf := map[gang.Key]string{}
	byKey := make(map[gang.Key]*v1alpha1.PodGroup, len(pgs.Items))
	for i := range pgs.Items {
		k := gang.Key{Namespace: pgs.Items[i].Namespace, Name: pgs.Items[i].Name}
		classOf[k] = pgs.Items[i].Spec.PriorityClassName
		byKey[k] = &pgs.Items[i]
	}
	values := map[string]*int32{}
	seen := map[gang.Key]*int32{}
	return func(k gang.Key) *int32 {
		if v, ok := seen[k]; ok {
			return v
		}
		name, listed := classOf[k]
		if !listed {
			if pg, err := e.podGroup(ctx, k); err == nil {
				name = pg.Spec.PriorityClassName
			}
		}
		var v *int32
		if name != "" {
			c, read := values[name]
			if !read {
				pc := &schedulingv1.PriorityClass{}
				if err := e.Client.Get(ctx, client.ObjectKey{Name: name}, pc); err == nil {
					c = &pc.Value
				}
				values[name] = c
			}
			v = c
		}
		seen[k] = v
		return v
	}, byKey, nil
}

// readNamespace reads what a tenant may read of its own namespace: its pods.
func (e *Explainer) readNamespace(ctx context.Context, namespace string) (*state, error) {
	var pods corev1.PodList
	if err := e.Client.List(ctx, &pods, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("reading the pods of namespace %s: %w", namespace, err)
	}
	return &state{pods: pods.Items, now: e.now(), namespaceView: true, composites: e.composites(ctx, pods.Items)}, nil
}

// Explain explains the object kind/name (kind as kubectl takes it: pod, podgroup,
// workload, job, pytorchjob, jobset…, singular, plural or short) in namespace.
func (e *Explainer) Explain(ctx context.Context, namespace, kind, name string) (*Report, error) {
	t, err := resolve(kind)
	if err != nil {
		return nil, err
	}
	st, err := e.read(ctx, namespace)
	if err != nil {
		return nil, err
	}
	var r *Report
	switch t.kind {
	case "Pod":
		r, err = e.explainPod(ctx, st, namespace, name)
	case "PodGroup", "CompositePodGroup":
		r, err = e.explainPodGroup(ctx, st, namespace, name, t.kind == "CompositePodGroup")
	case "Workload":
		r, err = e.explainWorkload(ctx, st, namespace, name)
	default:
		r, err = e.explainOwner(ctx, st, t, namespace, name)
	}
	if r != nil && st.namespaceView {
		r.View = NamespaceView
	}
	return r, err
}

// since says how long ago t was, to the second.
func since(now, t time.Time) string {
	return now.Sub(t).Round(time.Second).String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

func join(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
