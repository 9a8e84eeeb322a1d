package podgroup

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// +kubebuilder:rbac:groups=scheduling.x-k8s.io,resources=podgroups,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.x-k8s.io,resources=podgroups/status,verbs=get;update;patch

// SigsReconciler keeps the status of scheduler-plugins' PodGroups (scheduling.x-k8s.io)
// as scheduler-plugins' own controller would — phase and running / succeeded / failed
// counts from the member pods — so that the controllers that create them and read
// them back (Kubeflow's training-operator among them) work with kubenexus-scheduler.
// The status is computed by the same ComputeStatus as KubeNexus PodGroups'. It is set
// up only when the CRD is installed; it never creates or deletes such PodGroups.
type SigsReconciler struct {
	Client client.Client
	// Now is the clock (tests replace it).
	Now func() time.Time
}

// SetupWithManager registers the controller. The pod index IndexGangKey must be
// registered (Reconciler.SetupWithManager does).
func (r *SigsReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return (&statusReconciler{
		name:   "podgroup-scheduler-plugins",
		client: r.Client,
		now:    r.Now,
		empty:  v1alpha1.NewSigsPodGroup,
		read:   v1alpha1.FromSigsPodGroup,
		status: func(_ *unstructured.Unstructured, st v1alpha1.PodGroupStatus) (map[string]any, error) {
			return v1alpha1.SigsPodGroupStatus(st), nil
		},
	}).setup(mgr)
}

// statusReconciler writes the status of another API's PodGroups from their members,
// computed by ComputeStatus and put in that API's terms by status.
type statusReconciler struct {
	name   string
	client client.Client
	now    func() time.Time
	// empty returns an object of the API to read into; read converts one.
	empty func() *unstructured.Unstructured
	read  func(*unstructured.Unstructured) (*v1alpha1.PodGroup, error)
	// status is the status the object should have for the gang's KubeNexus status.
	status func(*unstructured.Unstructured, v1alpha1.PodGroupStatus) (map[string]any, error)
	// applies (nil: always) says whether KubeNexus keeps this group's status.
	applies func(ctx context.Context, members []corev1.Pod) (bool, error)
}

func (r *statusReconciler) setup(mgr ctrl.Manager) error {
	if r.now == nil {
		r.now = time.Now
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(r.name).
		For(r.empty()).
		Watches(&corev1.Pod{}, enqueueGang()).
		Complete(r)
}

// Reconcile writes the PodGroup's status from its members.
func (r *statusReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	u := r.empty()
	if err := r.client.Get(ctx, req.NamespacedName, u); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	pg, err := r.read(u)
	if err != nil {
		return ctrl.Result{}, err
	}
	members, err := listMembers(ctx, r.client, gang.Key{Namespace: req.Namespace, Name: req.Name})
	if err != nil {
		return ctrl.Result{}, err
	}
	if r.applies != nil {
		if ok, err := r.applies(ctx, members); err != nil || !ok {
			return ctrl.Result{}, err
		}
	}
	want, err := r.status(u, ComputeStatus(pg, members, metav1.NewTime(r.now())))
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, patchForeignStatus(ctx, r.client, u, want)
}

// patchForeignStatus writes another scheduler's PodGroup status when it differs.
// Volcano's CRD declares no status subresource (as of v1.8): its status is part of
// the object and the status endpoint answers NotFound, so the object is patched.
func patchForeignStatus(ctx context.Context, c client.Client, u *unstructured.Unstructured, want map[string]any) error {
	current, _ := u.Object["status"].(map[string]any)
	if equality.Semantic.DeepEqual(current, want) {
		return nil
	}
	patch := client.MergeFrom(u.DeepCopy())
	u.Object["status"] = want
	err := c.Status().Patch(ctx, u, patch)
	if apierrors.IsNotFound(err) {
		err = c.Patch(ctx, u, patch)
	}
	if err != nil {
		return fmt.Errorf("updating %s PodGroup status: %w", u.GroupVersionKind().Group, err)
	}
	return nil
}
