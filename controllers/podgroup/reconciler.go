// Package podgroup reconciles PodGroup status from member pods, creates PodGroups for
// label-only gangs and garbage-collects the ones it created.
package podgroup

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
)

// IndexGangKey indexes pods by the namespace/name of their gang.
const IndexGangKey = "kubenexus.gang"

// Reconciler keeps PodGroups in step with their member pods.
type Reconciler struct {
	Client client.Client
	// APIReader reads the owners of gang members uncached, by metadata (the manager's
	// API reader): a gang's PodGroup is created once, so its owner chain is read once.
	APIReader client.Reader
	// Now is the clock (tests replace it).
	Now func() time.Time
	// GCGrace is how long an auto-created PodGroup without members is kept, so that
	// a workload between pod generations keeps its group.
	GCGrace time.Duration
	// Recorder, when set, reports the PodGroups the controller creates.
	Recorder recorder.EventRecorder

	// departed is the last state of members deleted while bound.
	departed departed
}

// +kubebuilder:rbac:groups=scheduling.kubenexus.io,resources=podgroups,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=scheduling.kubenexus.io,resources=podgroups/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// The owners between a framework object and its pods, read to find the object that
// owns an auto-created PodGroup.
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get
// +kubebuilder:rbac:groups=apps,resources=statefulsets;replicasets,verbs=get
// +kubebuilder:rbac:groups=jobset.x-k8s.io,resources=jobsets,verbs=get

// SetupWithManager registers the pod index and the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Now == nil {
		r.Now = time.Now
	}
	serveWaiting(mgr.GetClient())
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Pod{}, IndexGangKey, podGangKey); err != nil {
		return fmt.Errorf("indexing pods by gang: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("podgroup").
		For(&v1alpha1.PodGroup{}).
		Watches(&corev1.Pod{}, r.podEvents()).
		Complete(r)
}

// enqueueGang maps a pod to a request for the PodGroup of its gang (of whichever API
// the controller reconciles).
func enqueueGang() handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		if m, ok, err := gang.Of(o.(*corev1.Pod)); err == nil && ok {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: m.Key.Namespace, Name: m.Key.Name}}}
		}
		return nil
	})
}

// listMembers returns the gang's pods, from the manager's pod index.
func listMembers(ctx context.Context, c client.Reader, key gang.Key) ([]corev1.Pod, error) {
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(key.Namespace), client.MatchingFields{IndexGangKey: key.String()}); err != nil {
		return nil, err
	}
	return pods.Items, nil
}

func podGangKey(o client.Object) []string {
	p, ok := o.(*corev1.Pod)
	if !ok {
		return nil
	}
	if m, ok, err := gang.Of(p); err == nil && ok {
		return []string{m.Key.String()}
	}
	return nil
}

// collect deletes an auto-created PodGroup without members once it is older than
// the GC grace. Reconcile keeps one whose gang is under repair or whose members
// have just been lost: a workload's controller that restarts a gang whole
// (LeaderWorkerSet's group, a JobSet) creates the new generation only once the
// old one is gone, and it is the same gang, whose repair and held room must
// outlive the gap (the repair's timeout bounds it).
func (r *Reconciler) collect(ctx context.Context, pg *v1alpha1.PodGroup) (ctrl.Result, error) {
	if wait := pg.CreationTimestamp.Add(r.GCGrace).Sub(r.Now()); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	if err := r.Client.Delete(ctx, pg, client.Preconditions{UID: &pg.UID}); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	ctrl.LoggerFrom(ctx).V(2).Info("Deleted auto-created PodGroup without members", "podGroup", klog.KObj(pg))
	return ctrl.Result{}, nil
}

// Reconcile computes the PodGroup's status, creating the group for a label-only gang
// and deleting an auto-created group whose members are all gone.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	key := gang.Key{Namespace: req.Namespace, Name: req.Name}
	members, err := listMembers(ctx, r.Client, key)
	if err != nil {
		return ctrl.Result{}, err
	}
	pods := &corev1.PodList{Items: members}

	pg := &v1alpha1.PodGroup{}
	if err := r.Client.Get(ctx, req.NamespacedName, pg); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		desired, err := AutoPodGroup(key, pods.Items, r.controllerOf(ctx))
		if err != nil {
			return ctrl.Result{}, err
		}
		if desired == nil {
			return ctrl.Result{}, nil
		}
		if err := r.Client.Create(ctx, desired); err != nil {
			// AlreadyExists: created by a reconcile whose object the cache did not
			// hold yet; it reported the creation.
			if apierrors.IsAlreadyExists(err) {
				return ctrl.Result{}, nil
			}
			return ctrl.Result{}, fmt.Errorf("creating PodGroup for label-only gang: %w", err)
		}
		log.V(2).Info("Created PodGroup for a label-only gang", "podGroup", klog.KObj(desired), "minMember", desired.Spec.MinMember)
		if r.Recorder != nil {
			of := ""
			if ref := metav1.GetControllerOfNoCopy(desired); ref != nil {
				of = fmt.Sprintf(" of %s %s", ref.Kind, ref.Name)
			}
			r.Recorder.Eventf(desired, nil, corev1.EventTypeNormal, v1alpha1.EventReasonPodGroupCreated, "Create",
				"Created for the label-only gang%s: minMember %d", of, desired.Spec.MinMember)
		}
		return ctrl.Result{}, nil
	}

	now := r.Now()
	status := ComputeStatus(pg, pods.Items, metav1.NewTime(now))
	// The members the cache holds, and those deleted while bound that it no longer
	// holds: a loss is read from both.
	seen := pods.Items
	if gone := r.departed.of(key, pods.Items, now); len(gone) > 0 {
		seen = append(slices.Clip(pods.Items), gone...)
	}
	d := decideRepair(pg, seen, now, func() string { return r.repairDomain(ctx, pg, seen) })
	if len(pods.Items) == 0 && pg.Labels[v1alpha1.LabelManagedBy] == v1alpha1.ManagedByValue && pg.Status.Repair == nil && !d.started {
		return r.collect(ctx, pg)
	}
	if d.started && d.repair.Cause == v1alpha1.RepairCauseMemberDeleted {
		// The member's last state may be on its way: nothing is written until it
		// comes or the wait ends (a status showing the gang short would end its
		// Running phase, and with it the repair).
		if wait := r.departed.unexplained(key, now); wait > 0 {
			return ctrl.Result{RequeueAfter: wait}, nil
		}
	}
	prevRepair := pg.Status.Repair
	status.Repair = d.repair
	if d.cond != nil {
		meta.SetStatusCondition(&status.Conditions, *d.cond)
	}
	if !equality.Semantic.DeepEqual(status, pg.Status) {
		patch := client.MergeFrom(pg.DeepCopy())
		if d.started || d.ended != "" || !equality.Semantic.DeepEqual(d.repair, prevRepair) {
			// A repair's transitions are written against the status they were decided
			// on: a reconcile of a stale copy must not start, restart or end it twice.
			patch = client.MergeFromWithOptions(pg.DeepCopy(), client.MergeFromWithOptimisticLock{})
		}
		pg.Status = status
		if err := r.Client.Status().Patch(ctx, pg, patch); err != nil {
			if apierrors.IsConflict(err) {
				return ctrl.Result{RequeueAfter: time.Second}, nil // the newer copy comes with its own event
			}
			return ctrl.Result{}, fmt.Errorf("updating PodGroup status: %w", err)
		}
	}
	// The repair's actions follow the status that records them: a restart is
	// recorded (status.repair.restartTime) before any member is deleted, so that a
	// reconcile after a failed write never deletes the members of the new
	// generation.
	if d.started || d.ended != "" {
		r.departed.forget(key)
	}
	requeue, err := r.actOnRepair(ctx, pg, seen, prevRepair, d, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// actOnRepair carries out a repair decision once its status is written: the
// reservation held or dropped, the old generation deleted, events and metrics.
func (r *Reconciler) actOnRepair(ctx context.Context, pg *v1alpha1.PodGroup, members []corev1.Pod, prev *v1alpha1.GangRepairStatus, d repairDecision, now time.Time) (time.Duration, error) {
	requeue := d.requeue
	if d.started && d.cond != nil {
		r.event(pg, corev1.EventTypeWarning, v1alpha1.EventReasonGangMembersLost, "Repair", d.cond.Message)
	}
	if d.dropHold && prev != nil && prev.Reservation != "" {
		if err := r.dropHold(ctx, pg, prev.Reservation); err != nil {
			return 0, fmt.Errorf("deleting ResourceReservation %s: %w", prev.Reservation, err)
		}
	}
	if d.hold && d.repair != nil {
		_, timeout := recoveryOf(pg)
		if want := holdFor(pg, d.repair, members, now, timeout); want != nil {
			again, err := r.ensureHold(ctx, pg, want)
			if err != nil {
				return 0, err
			}
			if again > 0 && (requeue == 0 || again < requeue) {
				requeue = again
			}
		}
	}
	if d.restart && d.repair != nil && d.repair.RestartTime != nil {
		n, err := r.restartMembers(ctx, members, d.repair.RestartTime.Time)
		if err != nil {
			return 0, err
		}
		if n > 0 && (prev == nil || prev.RestartTime == nil) {
			r.event(pg, corev1.EventTypeWarning, v1alpha1.EventReasonGangRestarted, "Restart", fmt.Sprintf("Deleted %d member(s) so that the workload's controller restarts the gang whole.", n))
		}
	}
	if d.ended != "" {
		repairsTotal.WithLabelValues(metricOutcome(d.ended)).Inc()
		repairSeconds.WithLabelValues(metricOutcome(d.ended)).Observe(d.took.Seconds())
		kind, reason := corev1.EventTypeNormal, v1alpha1.EventReasonGangRepaired
		if d.ended == v1alpha1.RepairOutcomeGaveUp {
			kind, reason = corev1.EventTypeWarning, v1alpha1.EventReasonGangRepairGaveUp
		}
		r.event(pg, kind, reason, "Repair", d.cond.Message)
	}
	return requeue, nil
}

// AutoPodGroup is the PodGroup to create for a gang defined only by pod labels
// (KubeNexus, sigs or Kueue dialects), or nil when the gang's members name a PodGroup
// object the user owns. The oldest member's labels give minMember. The group is owned
// by the framework object the webhook sized the gang from, or by the object that
// created that one for its whole life (a TrainJob its JobSet, a RayJob its
// RayCluster), so that deleting the workload deletes the group: found by following
// controller references up from the member (controllerOf reads them; a JobSet's pods
// are controlled by its child Jobs, a LeaderWorkerSet's by StatefulSets), else named
// by the member's labels (JobSet's jobset-uid), else the member's own controller. An error reading the chain is
// returned: the group is created once, with the owner it gets then.
func AutoPodGroup(key gang.Key, members []corev1.Pod, controllerOf workload.ControllerOfFunc) (*v1alpha1.PodGroup, error) {
	if len(members) == 0 {
		return nil, nil
	}
	sorted := append([]corev1.Pod(nil), members...)
	sort.Slice(sorted, func(i, j int) bool {
		return sorted[i].CreationTimestamp.Before(&sorted[j].CreationTimestamp) ||
			(sorted[i].CreationTimestamp.Equal(&sorted[j].CreationTimestamp) && sorted[i].Name < sorted[j].Name)
	})
	oldest := &sorted[0]
	m, ok, err := gang.Of(oldest)
	if err != nil || !ok || m.NeedsPodGroupObject() {
		return nil, nil //nolint:nilerr // untrusted labels: a pod whose gang cannot be read names no group
	}
	pg := &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{
			Name:      key.Name,
			Namespace: key.Namespace,
			Labels:    map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedByValue},
		},
		Spec: v1alpha1.PodGroupSpec{MinMember: m.MinMember},
	}
	if src, ok := workload.GangSourceOf(oldest, workload.Classify(oldest, workload.Namespace{}, "")); ok && src.Forms(key.Name) {
		if controllerOf != nil {
			ref, found, err := src.ResolveOwner(oldest, controllerOf)
			if err != nil {
				return nil, fmt.Errorf("finding the %s that owns pod %s: %w", src.GVK.Kind, oldest.Name, err)
			}
			if found {
				pg.OwnerReferences = []metav1.OwnerReference{ref}
				return pg, nil
			}
		}
		if ref, ok := src.OwnerReference(); ok {
			pg.OwnerReferences = []metav1.OwnerReference{ref}
			return pg, nil
		}
	}
	if ref := metav1.GetControllerOf(oldest); ref != nil {
		pg.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: ref.UID,
		}}
	}
	return pg, nil
}

// controllerOf reads the controller reference of an object by its metadata alone.
// An owner that is gone, of a kind the API does not serve, or that the manager may
// not read ends the chain; other errors are returned.
func (r *Reconciler) controllerOf(ctx context.Context) workload.ControllerOfFunc {
	return func(namespace string, ref metav1.OwnerReference) (*metav1.OwnerReference, error) {
		obj := &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind))
		if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, obj); err != nil {
			if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || meta.IsNoMatchError(err) {
				return nil, nil
			}
			return nil, err
		}
		if obj.UID != ref.UID {
			return nil, nil // a different object under the same name: not this pod's owner
		}
		return metav1.GetControllerOf(obj), nil
	}
}
