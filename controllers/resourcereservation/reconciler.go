package resourcereservation

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
)

// ownerIndex indexes reservations by "<kind>/<name>" of their owner.
const ownerIndex = "spec.owner"

// +kubebuilder:rbac:groups=scheduling.kubenexus.io,resources=resourcereservations,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.kubenexus.io,resources=resourcereservations/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=scheduling.kubenexus.io,resources=podgroups,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch

// Reconciler expires and releases ResourceReservations.
type Reconciler struct {
	Client client.Client
	// Resync is the longest a held reservation goes without being re-checked, a
	// backstop for a missed owner event. Expiry itself is scheduled exactly.
	Resync time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Recorder, when set, reports each release (Warning when the TTL ran out
	// unconsumed, Normal otherwise).
	Recorder recorder.EventRecorder
}

func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rr := &v1alpha1.ResourceReservation{}
	if err := r.Client.Get(ctx, req.NamespacedName, rr); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !rr.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	owner, err := r.owner(ctx, rr)
	if err != nil {
		return ctrl.Result{}, err
	}
	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	d := Decide(rr, owner, now)

	status := rr.Status.DeepCopy()
	status.Phase = d.Phase
	status.ExpireTime = &metav1.Time{Time: d.Expire}
	// Recorded so that the owner's absence after it was seen reads as a deletion,
	// also after a manager restart, and a new object of the same name as a
	// replacement. The patch's optimistic lock keeps a stale cached reservation
	// (one without the recorded UID yet) from binding another incarnation.
	status.OwnerUID = d.OwnerUID
	status.ObservedGeneration = rr.Generation
	d.Held.ObservedGeneration = rr.Generation
	meta.SetStatusCondition(&status.Conditions, d.Held)
	if !equality.Semantic.DeepEqual(rr.Status, *status) {
		was := rr.Status.Phase
		patch := client.MergeFromWithOptions(rr.DeepCopy(), client.MergeFromWithOptimisticLock{})
		rr.Status = *status
		if err := r.Client.Status().Patch(ctx, rr, patch); err != nil {
			if apierrors.IsConflict(err) {
				// A newer copy (the scheduler writes the status too) comes with its
				// own event.
				return ctrl.Result{RequeueAfter: time.Second}, nil
			}
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		if ended(status.Phase) && !ended(was) && r.Recorder != nil {
			kind := corev1.EventTypeNormal
			if d.Held.Reason == ReasonTTLExpired {
				kind = corev1.EventTypeWarning
			}
			r.Recorder.Eventf(rr, nil, kind, d.Held.Reason, "Release", "%s", v1alpha1.EventNote(d.Held.Message))
		}
	}
	if d.Recheck <= 0 {
		if d.Phase == v1alpha1.ReservationConsumed && r.Resync > 0 {
			return ctrl.Result{RequeueAfter: r.Resync}, nil
		}
		return ctrl.Result{}, nil
	}
	if r.Resync > 0 && d.Recheck > r.Resync {
		d.Recheck = r.Resync
	}
	return ctrl.Result{RequeueAfter: d.Recheck}, nil
}

// ended: the reservation holds nothing any more.
func ended(p v1alpha1.ReservationPhase) bool {
	return p == v1alpha1.ReservationExpired || p == v1alpha1.ReservationReleased
}

// owner looks the reservation's owner up in the manager's cache.
func (r *Reconciler) owner(ctx context.Context, rr *v1alpha1.ResourceReservation) (Owner, error) {
	key := types.NamespacedName{Namespace: rr.Namespace, Name: rr.Spec.Owner.Name}
	var obj client.Object
	switch rr.Spec.Owner.Kind {
	case v1alpha1.ReservationOwnerPod:
		obj = &corev1.Pod{}
	default:
		obj = &v1alpha1.PodGroup{}
	}
	if err := r.Client.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return Owner{}, nil
		}
		return Owner{}, err
	}
	o := Owner{Exists: obj.GetDeletionTimestamp().IsZero(), UID: string(obj.GetUID())}
	switch t := obj.(type) {
	case *corev1.Pod:
		o.Finished = workload.Finished(t)
	case *v1alpha1.PodGroup:
		// A gang under repair (status.repair) shows Failed while a failed member
		// waits for its replacement: it has not finished.
		o.Finished = t.Status.Repair == nil && (t.Status.Phase == v1alpha1.PodGroupSucceeded || t.Status.Phase == v1alpha1.PodGroupFailed)
	}
	return o, nil
}

func ownerKey(kind v1alpha1.ReservationOwnerKind, name string) string {
	return string(kind) + "/" + name
}

// SetupWithManager watches reservations and their owners: a deleted or finished
// PodGroup or pod releases its reservations at once, and a created one binds the
// reservations waiting for it.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.ResourceReservation{}, ownerIndex, func(o client.Object) []string {
		rr := o.(*v1alpha1.ResourceReservation)
		return []string{ownerKey(rr.Spec.Owner.Kind, rr.Spec.Owner.Name)}
	}); err != nil {
		return err
	}
	byOwner := func(kind v1alpha1.ReservationOwnerKind) handler.EventHandler {
		return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			var list v1alpha1.ResourceReservationList
			if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{ownerIndex: ownerKey(kind, o.GetName())}); err != nil {
				return nil
			}
			reqs := make([]reconcile.Request, 0, len(list.Items))
			for i := range list.Items {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
			}
			return reqs
		})
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("resourcereservation").
		For(&v1alpha1.ResourceReservation{}).
		Watches(&v1alpha1.PodGroup{}, byOwner(v1alpha1.ReservationOwnerPodGroup)).
		Watches(&corev1.Pod{}, byOwner(v1alpha1.ReservationOwnerPod)).
		Complete(r)
}
