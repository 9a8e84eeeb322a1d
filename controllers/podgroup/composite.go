package podgroup

import (
	"context"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=compositepodgroups,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=compositepodgroups/status,verbs=get;update;patch

// CompositeReconciler keeps the CompositePodGroupInitiallyScheduled condition of
// the CompositePodGroups (scheduling.k8s.io/v1alpha3) that are the root of a gang
// — of gang policy, with no parent or a basic one — which kubenexus-scheduler
// places as one gang of the PodGroups under them (v1alpha1.ReadCompositeTree),
// computed by the same ComputeStatus as a KubeNexus PodGroup's from their members,
// and of the composites nested under such a root, each from the members under it
// (nestedStatus). It is set up only when the API server serves the API; it leaves
// basic composites and those none of whose members asks for kubenexus-scheduler
// alone.
type CompositeReconciler struct {
	Client client.Client
	// Now is the clock (tests replace it).
	Now func() time.Time
}

// SetupWithManager registers the controller. The pod index IndexGangKey must be
// registered (Reconciler.SetupWithManager does).
func (r *CompositeReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Now == nil {
		r.Now = time.Now
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("podgroup-composite").
		For(v1alpha1.NewCompositePodGroup()).
		Watches(v1alpha1.NewNativePodGroup(), handler.EnqueueRequestsFromMapFunc(r.rootRequest)).
		// A nested composite's change is its root's.
		Watches(v1alpha1.NewCompositePodGroup(), handler.EnqueueRequestsFromMapFunc(r.rootRequest)).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.podComposite)).
		Complete(r)
}

// rootRequest is the request of the root composite above a PodGroup or a nested
// composite (v1alpha1.CompositeRoot), if any.
func (r *CompositeReconciler) rootRequest(ctx context.Context, o client.Object) []reconcile.Request {
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	root, ok := v1alpha1.CompositeRoot(u, func(name string) *unstructured.Unstructured {
		c := v1alpha1.NewCompositePodGroup()
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: u.GetNamespace(), Name: name}, c); err != nil {
			return nil
		}
		return c
	})
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: u.GetNamespace(), Name: root}}}
}

// podComposite is the request of the composite of the PodGroup a pod names.
func (r *CompositeReconciler) podComposite(ctx context.Context, o client.Object) []reconcile.Request {
	pod, ok := o.(*corev1.Pod)
	if !ok {
		return nil
	}
	name, ok := v1alpha1.NativeGroupOf(pod)
	if !ok {
		return nil
	}
	pg := v1alpha1.NewNativePodGroup()
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: name}, pg); err != nil {
		return nil
	}
	return r.rootRequest(ctx, pg)
}

// Reconcile writes the composite's status from its children's members.
func (r *CompositeReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	u := v1alpha1.NewCompositePodGroup()
	if err := r.Client.Get(ctx, req.NamespacedName, u); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if root, err := r.gangRoot(ctx, u); err != nil || !root {
		return ctrl.Result{}, err
	}
	tree, err := listCompositeTree(ctx, r.Client, req.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	pg, err := v1alpha1.ReadCompositeTree(u, tree)
	if err != nil {
		// Its quorum is out of range, or its tree does not read: nothing to report,
		// and retrying changes nothing until an object changes.
		ctrl.LoggerFrom(ctx).Info("CompositePodGroup not read", "reason", err.Error())
		return ctrl.Result{}, nil
	}
	var members []corev1.Pod
	for _, kid := range slices.Sorted(maps.Keys(pg.Spec.MinMemberPerRole)) {
		pods, err := listMembers(ctx, r.Client, gang.Key{Namespace: req.Namespace, Name: kid})
		if err != nil {
			return ctrl.Result{}, err
		}
		members = append(members, pods...)
	}
	if ok, err := (&NativeReconciler{Client: r.Client}).ours(ctx, members); err != nil || !ok {
		return ctrl.Result{}, err
	}
	now := metav1.NewTime(r.Now())
	want, err := v1alpha1.CompositePodGroupStatus(u, ComputeStatus(pg, members, now))
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := patchForeignStatus(ctx, r.Client, u, want); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.nestedStatus(ctx, u.GetName(), tree, members, now)
}

// nestedStatus keeps the condition of every composite nested under the gang's
// composite parent, from the members of the PodGroups under it: such a composite
// is initially scheduled once its placed members meet its own sets (a replica of
// a serving tree the root needs one of stays unscheduled while another replica
// runs). The root's tree has read, so it has no cycle and at most
// v1alpha1.MaxCompositeNodes composites.
func (r *CompositeReconciler) nestedStatus(ctx context.Context, parent string, tree v1alpha1.CompositeTree, members []corev1.Pod, now metav1.Time) error {
	kids, _ := tree(parent)
	for _, kid := range kids {
		sub, err := v1alpha1.ReadCompositeTree(kid, tree)
		if err != nil {
			continue // the root's reading refuses what this one would
		}
		var mine []corev1.Pod
		for i := range members {
			if name, ok := v1alpha1.NativeGroupOf(&members[i]); ok {
				if _, under := sub.Spec.MinMemberPerRole[name]; under {
					mine = append(mine, members[i])
				}
			}
		}
		want, err := v1alpha1.CompositePodGroupStatus(kid, ComputeStatus(sub, mine, now))
		if err != nil {
			return err
		}
		if err := patchForeignStatus(ctx, r.Client, kid, want); err != nil {
			return err
		}
		if err := r.nestedStatus(ctx, kid.GetName(), tree, members, now); err != nil {
			return err
		}
	}
	return nil
}

// listCompositeTree lists namespace's CompositePodGroups and PodGroups once and
// returns them by parent (v1alpha1.CompositeTree).
func listCompositeTree(ctx context.Context, c client.Reader, namespace string) (v1alpha1.CompositeTree, error) {
	groups := v1alpha1.NewNativePodGroupList()
	if err := c.List(ctx, groups, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	composites := v1alpha1.NewCompositePodGroupList()
	if err := c.List(ctx, composites, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	return v1alpha1.TreeOf(composites, groups), nil
}

// gangRoot reports whether u is the root of a gang: of gang policy, and with no
// parent or a basic one (whose children are scheduled each on its own, as
// v1alpha1.CompositeRoot files them).
func (r *CompositeReconciler) gangRoot(ctx context.Context, u *unstructured.Unstructured) (bool, error) {
	g := v1alpha1.CompositeGangOf(u)
	if !g.Gang {
		return false, nil
	}
	if g.Parent == "" {
		return true, nil
	}
	parent := v1alpha1.NewCompositePodGroup()
	switch err := r.Client.Get(ctx, types.NamespacedName{Namespace: u.GetNamespace(), Name: g.Parent}, parent); {
	case apierrors.IsNotFound(err):
		return false, nil // the gang is the parent's, once it exists
	case err != nil:
		return false, err
	}
	return !v1alpha1.CompositeGangOf(parent).Gang, nil
}
