package podgroup

import (
	"context"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
)

// +kubebuilder:rbac:groups=scheduling.volcano.sh,resources=podgroups,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.volcano.sh,resources=podgroups/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get

// VolcanoReconciler does for Volcano's PodGroups (scheduling.volcano.sh/v1beta1) what
// the Volcano scheduler does, when the KubeNexusConfig's spec.volcano.enabled is set
// and no Volcano scheduler holds its lease: it admits a PodGroup (phase Inqueue) once
// its minResources fit the cluster's free capacity — the check Coscheduling makes
// before placing a gang, placement.Shortfall — and keeps Running / Completed and the
// counts from the members, with the same ComputeStatus as KubeNexus PodGroups.
// Controllers written for Volcano (Kubeflow's training-operator among them) create
// their pods only once the PodGroup is Inqueue.
type VolcanoReconciler struct {
	Client client.Client
	// APIReader reads the Volcano scheduler's Lease (not cached).
	APIReader client.Reader
	// Now is the clock (tests replace it).
	Now func() time.Time
	// Recheck is how soon a PodGroup that does not fit yet is looked at again.
	Recheck time.Duration
}

// SetupWithManager registers the controller. The pod index IndexGangKey must be
// registered (Reconciler.SetupWithManager does).
func (r *VolcanoReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Now == nil {
		r.Now = time.Now
	}
	if r.Recheck == 0 {
		r.Recheck = 5 * time.Second
	}
	allPodGroups := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		items, err := r.listPodGroups(ctx)
		if err != nil {
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(items))
		for _, nn := range items {
			reqs = append(reqs, reconcile.Request{NamespacedName: nn})
		}
		return reqs
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("podgroup-volcano").
		For(v1alpha1.NewVolcanoPodGroup()).
		Watches(&corev1.Pod{}, enqueueGang()).
		// Turning the switch on (or off) reaches every Volcano PodGroup.
		Watches(&v1alpha1.KubeNexusConfig{}, allPodGroups).
		Complete(r)
}

func (r *VolcanoReconciler) listPodGroups(ctx context.Context) ([]types.NamespacedName, error) {
	list := v1alpha1.NewVolcanoPodGroupList()
	if err := r.Client.List(ctx, list); err != nil {
		return nil, err
	}
	out := make([]types.NamespacedName, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, types.NamespacedName{Namespace: list.Items[i].GetNamespace(), Name: list.Items[i].GetName()})
	}
	return out, nil
}

// Reconcile admits the PodGroup when it fits and writes its status from its members.
func (r *VolcanoReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	knc := &v1alpha1.KubeNexusConfig{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: v1alpha1.DefaultConfigName}, knc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !ptr.Deref(knc.Spec.Volcano.Enabled, false) {
		return ctrl.Result{}, nil
	}
	if held, err := VolcanoLeaseHeld(ctx, r.APIReader, knc.Spec.Volcano.SchedulerLease, r.Now()); err != nil || held {
		// A running Volcano scheduler owns its PodGroups (the KubeNexusConfig says so).
		return ctrl.Result{RequeueAfter: r.Recheck}, err
	}
	u := v1alpha1.NewVolcanoPodGroup()
	if err := r.Client.Get(ctx, req.NamespacedName, u); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	pg, err := v1alpha1.FromVolcanoPodGroup(u)
	if err != nil {
		return ctrl.Result{}, err
	}
	members, err := listMembers(ctx, r.Client, gang.Key{Namespace: req.Namespace, Name: req.Name})
	if err != nil {
		return ctrl.Result{}, err
	}
	current, _ := u.Object["status"].(map[string]any)
	phase, _ := current["phase"].(string)
	admitted := phase != "" && phase != v1alpha1.VolcanoPodGroupPending
	var result ctrl.Result
	if !admitted {
		short, err := r.shortfall(ctx, pg.Spec.MinResources, members)
		if err != nil {
			return ctrl.Result{}, err
		}
		admitted = len(short) == 0
		if !admitted {
			result.RequeueAfter = r.Recheck // free capacity is not watched: look again
		}
	}
	want := v1alpha1.VolcanoPodGroupStatus(ComputeStatus(pg, members, metav1.NewTime(r.Now())), admitted)
	if conds, ok := current["conditions"]; ok {
		want["conditions"] = conds // Volcano's own conditions are kept as they are
	}
	return result, patchForeignStatus(ctx, r.Client, u, want)
}

// shortfall is what the PodGroup's minResources lack in the cluster's free capacity:
// schedulable nodes' allocatable less the requests of the non-terminal pods bound to
// them; the gang's own bound members count as placed.
func (r *VolcanoReconciler) shortfall(ctx context.Context, min corev1.ResourceList, members []corev1.Pod) ([]string, error) {
	if len(min) == 0 {
		return nil, nil
	}
	var nodes corev1.NodeList
	if err := r.Client.List(ctx, &nodes); err != nil {
		return nil, err
	}
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods); err != nil {
		return nil, err
	}
	// model has its final capacity up front, so the pointers byNode keeps stay valid.
	byNode := make(map[string]*placement.Node, len(nodes.Items))
	model := make([]placement.Node, 0, len(nodes.Items))
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if n.Spec.Unschedulable {
			continue
		}
		model = append(model, placement.Node{Allocatable: n.Status.Allocatable, Requested: corev1.ResourceList{}})
		byNode[n.Name] = &model[len(model)-1]
	}
	placed := corev1.ResourceList{}
	for i := range pods.Items {
		p := &pods.Items[i]
		n := byNode[p.Spec.NodeName]
		if n == nil || !workload.OccupiesNode(p) {
			continue
		}
		add(n.Requested, resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}))
		n.Pods++
	}
	for i := range members {
		if members[i].Spec.NodeName != "" {
			add(placed, resourcehelper.PodRequests(&members[i], resourcehelper.PodResourcesOptions{}))
		}
	}
	return placement.Shortfall(min, placed, placement.FreeOf(model)), nil
}

func add(total, rl corev1.ResourceList) {
	for name, q := range rl {
		sum := total[name]
		sum.Add(q)
		total[name] = sum
	}
}

// VolcanoLeaseHeld reports whether a Volcano scheduler holds its leader lease: the
// Lease exists, names a holder, and was renewed within its duration.
func VolcanoLeaseHeld(ctx context.Context, r client.Reader, ref v1alpha1.LeaseReference, now time.Time) (bool, error) {
	ns, name := ref.Namespace, ref.Name
	if ns == "" {
		ns = "volcano-system"
	}
	if name == "" {
		name = "volcano"
	}
	lease := &coordinationv1.Lease{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, lease); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
			return false, nil
		}
		return false, err
	}
	s := lease.Spec
	if ptr.Deref(s.HolderIdentity, "") == "" || s.RenewTime == nil {
		return false, nil
	}
	d := time.Duration(ptr.Deref(s.LeaseDurationSeconds, 15)) * time.Second
	return now.Before(s.RenewTime.Add(d)), nil
}
