package explain

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/controllers/feasibility"
)

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
	// forecast is when the group starts behind the gangs queued ahead (nil: none
	// ahead, or it fits now).
	forecast *queueForecast
}

// foreignPodGroups are the other gang APIs a gang's PodGroup may be of, in the order
// the scheduler looks them up (scheduler/crdcache): Kubernetes' own,
// scheduler-plugins', Volcano's, KAI's.
var foreignPodGroups = []struct {
	newObject func() *unstructured.Unstructured
	read      func(*unstructured.Unstructured) (*v1alpha1.PodGroup, error)
}{
	{v1alpha1.NewNativePodGroup, v1alpha1.FromNativePodGroup},
	{v1alpha1.NewSigsPodGroup, v1alpha1.FromSigsPodGroup},
	{v1alpha1.NewVolcanoPodGroup, v1alpha1.FromVolcanoPodGroup},
	{v1alpha1.NewKAIPodGroup, v1alpha1.FromKAIPodGroup},
}

// podGroup reads the gang's PodGroup: KubeNexus's, else one of another gang API the
// cluster serves, as the scheduler would. NotFound when there is none.
func (e *Explainer) podGroup(ctx context.Context, k gang.Key) (*v1alpha1.PodGroup, error) {
	key := client.ObjectKey{Namespace: k.Namespace, Name: k.Name}
	if k.Composite {
		return e.compositeGroup(ctx, key)
	}
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
	cq := ""
	if g.wl != nil && g.wl.Status.Admission != nil {
		cq = string(g.wl.Status.Admission.ClusterQueue)
	}
	return st.cluster.WorkloadOf(&feasibility.Gang{Key: g.key, PodGroup: g.pg, Members: g.members, Pending: g.pending}, need, g.tierLabels(st), cq)
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

// compositeGroup reads the gang of a root CompositePodGroup with everything under
// it, as the scheduler does (feasibility.CompositeGang).
func (e *Explainer) compositeGroup(ctx context.Context, key client.ObjectKey) (*v1alpha1.PodGroup, error) {
	return feasibility.CompositeGang(ctx, e.Client, key)
}

// composites maps the Kubernetes PodGroups the pods name to the gang of the
// CompositePodGroup tree each belongs to (feasibility.CompositeGangs).
func (e *Explainer) composites(ctx context.Context, pods []corev1.Pod) map[gang.Key]gang.Key {
	return feasibility.CompositeGangs(ctx, e.Client, pods)
}
