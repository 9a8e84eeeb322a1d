// Package kubenexusconfig reconciles the KubeNexusConfig named "default" into a
// running kubenexus-scheduler: its configuration, Deployment, Service and, with more
// than one replica, PodDisruptionBudget.
package kubenexusconfig

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/controllers/kubenexusconfig/render"
	"github.com/kube-nexus/kubenexus/controllers/podgroup"
)

// Condition reasons.
const (
	ReasonInvalidConfiguration = "InvalidConfiguration"
	ReasonApplyFailed          = "ApplyFailed"
	ReasonNoServiceAccount     = "ServiceAccountMissing"
	ReasonInvalidWebhookScope  = "InvalidWebhookScope"
	ReasonVolcanoActive        = "VolcanoSchedulerActive"
	ReasonAsExpected           = "AsExpected"
	ReasonMinimumReplicas      = "MinimumReplicasAvailable"
	ReasonNoReadyReplicas      = "NoReadyReplicas"
	ReasonRollingOut           = "RollingOut"
	ReasonRolloutComplete      = "RolloutComplete"
)

// +kubebuilder:rbac:groups=scheduling.kubenexus.io,resources=kubenexusconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.kubenexus.io,resources=kubenexusconfigs/status,verbs=get;update;patch
// The scheduler's objects are written in the manager's own namespace only.
// +kubebuilder:rbac:groups="",namespace=system,resources=configmaps;services,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,namespace=system,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=policy,namespace=system,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",namespace=system,resources=serviceaccounts,verbs=get,resourceNames=kubenexus-scheduler
// The scheduler's leader-election Lease is applied (its metadata) so that it is owned.
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=system,resources=leases,verbs=get;patch,resourceNames=kubenexus-scheduler

// Reconciler applies the rendered scheduler for the KubeNexusConfig named "default"
// and reports the others as ignored.
type Reconciler struct {
	Client client.Client
	// APIReader reads the scheduler's ServiceAccount, which the manager neither
	// caches nor applies.
	APIReader client.Reader
	// Options says where the scheduler runs and its default image.
	Options render.Options
	// ServerMinor reads the API server's minor version (nil: unknown), for the
	// scheduler's feature gates (render.Options.APIServerMinor).
	ServerMinor func() (int, error)
}

// Reconcile renders the configuration, refuses it (Degraded) if the scheduler would,
// applies every object with server-side apply — which also restores drifted or
// deleted ones — and reports the Deployment's state.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	knc := &v1alpha1.KubeNexusConfig{}
	if err := r.Client.Get(ctx, req.NamespacedName, knc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !knc.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // the garbage collector removes what it owns
	}
	status := knc.Status.DeepCopy()
	status.ObservedGeneration = knc.Generation

	if knc.Name != v1alpha1.DefaultConfigName {
		msg := fmt.Sprintf("Only the KubeNexusConfig named %q configures KubeNexus; this one is ignored.", v1alpha1.DefaultConfigName)
		setConditions(status, knc.Generation,
			cond(v1alpha1.ConditionAvailable, false, v1alpha1.ReasonIgnored, msg),
			cond(v1alpha1.ConditionProgressing, false, v1alpha1.ReasonIgnored, msg),
			cond(v1alpha1.ConditionDegraded, false, v1alpha1.ReasonIgnored, msg))
		return ctrl.Result{}, r.writeStatus(ctx, knc, status)
	}

	if errs := render.Validate(&knc.Spec, r.Options.Namespace); len(errs) > 0 {
		// Admission refuses such a spec; this catches one stored before the webhook
		// ran. The scheduler keeps its last good configuration.
		setConditions(status, knc.Generation,
			cond(v1alpha1.ConditionDegraded, true, ReasonInvalidConfiguration, "The scheduler would reject this configuration; the previous one stays in effect: "+errs.ToAggregate().Error()),
			cond(v1alpha1.ConditionProgressing, false, ReasonInvalidConfiguration, "Not applied."))
		return ctrl.Result{}, r.writeStatus(ctx, knc, status)
	}
	opts := r.Options
	if r.ServerMinor != nil {
		minor, err := r.ServerMinor()
		if err != nil {
			return ctrl.Result{}, err
		}
		opts.APIServerMinor = minor
	}
	objs, err := render.Render(knc, opts)
	if err != nil {
		return ctrl.Result{}, err
	}
	for _, obj := range objs.All() {
		if err := r.Client.Apply(ctx, obj, client.FieldOwner(render.ManagedBy), client.ForceOwnership); err != nil {
			setConditions(status, knc.Generation, cond(v1alpha1.ConditionDegraded, true, ReasonApplyFailed, err.Error()))
			if werr := r.writeStatus(ctx, knc, status); werr != nil {
				log.FromContext(ctx).Error(werr, "Writing status")
			}
			return ctrl.Result{}, fmt.Errorf("applying the scheduler's objects: %w", err)
		}
	}
	if objs.PodDisruptionBudget == nil {
		if err := r.deleteBudget(ctx, knc); err != nil {
			return ctrl.Result{}, fmt.Errorf("deleting the scheduler's PodDisruptionBudget: %w", err)
		}
	}
	status.ConfigHash = objs.Hash

	dep := &appsv1.Deployment{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: r.Options.Namespace, Name: render.Name}, dep); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		dep = nil // applied but not in the cache yet: its event brings us back
	}
	deploymentConditions(status, knc.Generation, dep, objs.Hash)

	// The ServiceAccount and its role bindings come with the installation; without
	// them the Deployment cannot create pods, and this says why.
	var result ctrl.Result
	err = r.APIReader.Get(ctx, types.NamespacedName{Namespace: r.Options.Namespace, Name: render.Name}, &corev1.ServiceAccount{})
	switch {
	case apierrors.IsNotFound(err):
		setConditions(status, knc.Generation, cond(v1alpha1.ConditionDegraded, true, ReasonNoServiceAccount,
			fmt.Sprintf("ServiceAccount %s/%s does not exist, so the scheduler's pods cannot be created; it and the scheduler's role bindings are installed by the kubenexus chart (config/rbac/scheduler).",
				r.Options.Namespace, render.Name)))
		result.RequeueAfter = serviceAccountRecheck // not watched: the manager does not cache ServiceAccounts
	case err != nil:
		return ctrl.Result{}, err
	default:
		setConditions(status, knc.Generation, cond(v1alpha1.ConditionDegraded, false, ReasonAsExpected, "The scheduler's objects are applied."))
		if result.RequeueAfter, err = r.degradedBySettings(ctx, knc, status); err != nil {
			return ctrl.Result{}, err
		}
	}
	return result, r.writeStatus(ctx, knc, status)
}

// degradedBySettings reports as Degraded what the applied configuration asks and
// the cluster does not allow: a pod webhook scope that cannot be used, Volcano
// compatibility while a Volcano scheduler runs. It returns when to look at the
// Volcano lease again (0: not watched).
func (r *Reconciler) degradedBySettings(ctx context.Context, knc *v1alpha1.KubeNexusConfig, status *v1alpha1.KubeNexusConfigStatus) (time.Duration, error) {
	// Admission refuses such a selector; this catches one stored before the webhook
	// ran. The pod webhook falls back to its default scope rather than refusing pods.
	if errs := render.ValidateWebhook(&knc.Spec.Webhook); len(errs) > 0 {
		setConditions(status, knc.Generation, cond(v1alpha1.ConditionDegraded, true, ReasonInvalidWebhookScope,
			fmt.Sprintf("The pod webhook cannot use this namespace selector and uses the default scope (%s) instead: %s",
				v1alpha1.DefaultWebhookScope(), errs.ToAggregate())))
	}
	// Volcano compatibility steps aside while a Volcano scheduler runs.
	v := knc.Spec.Volcano
	if !ptr.Deref(v.Enabled, false) {
		return 0, nil
	}
	held, err := podgroup.VolcanoLeaseHeld(ctx, r.APIReader, v.SchedulerLease, time.Now())
	if err != nil {
		return 0, err
	}
	if held {
		setConditions(status, knc.Generation, cond(v1alpha1.ConditionDegraded, true, ReasonVolcanoActive,
			fmt.Sprintf("spec.volcano.enabled is set, but a Volcano scheduler holds its lease %s/%s: KubeNexus leaves Volcano's PodGroups to it until it stops.",
				v.SchedulerLease.Namespace, v.SchedulerLease.Name)))
	}
	// The lease is not watched (the manager does not cache Leases): look again.
	return volcanoLeaseRecheck, nil
}

// deleteBudget deletes the scheduler's PodDisruptionBudget that an earlier
// configuration with more than one replica had applied (one scheduler pod under a
// budget of one would block every drain of its node). A budget of that name that
// knc does not control is left alone.
func (r *Reconciler) deleteBudget(ctx context.Context, knc *v1alpha1.KubeNexusConfig) error {
	pdb := &policyv1.PodDisruptionBudget{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: r.Options.Namespace, Name: render.Name}, pdb); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !metav1.IsControlledBy(pdb, knc) {
		return nil
	}
	return client.IgnoreNotFound(r.Client.Delete(ctx, pdb, client.Preconditions{UID: &pdb.UID}))
}

// serviceAccountRecheck is how often a missing scheduler ServiceAccount is looked for.
const serviceAccountRecheck = 10 * time.Second

// volcanoLeaseRecheck is how often the Volcano scheduler's lease is looked at while
// spec.volcano.enabled is set.
const volcanoLeaseRecheck = 10 * time.Second

// deploymentConditions sets Available, Progressing and readyReplicas from the
// scheduler Deployment.
func deploymentConditions(status *v1alpha1.KubeNexusConfigStatus, gen int64, dep *appsv1.Deployment, hash string) {
	if dep == nil {
		status.ReadyReplicas = 0
		setConditions(status, gen,
			cond(v1alpha1.ConditionAvailable, false, ReasonNoReadyReplicas, "The scheduler Deployment is being created."),
			cond(v1alpha1.ConditionProgressing, true, ReasonRollingOut, "The scheduler Deployment is being created."))
		return
	}
	want := int32(1)
	if dep.Spec.Replicas != nil {
		want = *dep.Spec.Replicas
	}
	st := dep.Status
	status.ReadyReplicas = st.ReadyReplicas
	if st.AvailableReplicas > 0 {
		setConditions(status, gen, cond(v1alpha1.ConditionAvailable, true, ReasonMinimumReplicas,
			fmt.Sprintf("%d/%d scheduler replicas available.", st.AvailableReplicas, want)))
	} else {
		setConditions(status, gen, cond(v1alpha1.ConditionAvailable, false, ReasonNoReadyReplicas,
			fmt.Sprintf("0/%d scheduler replicas available.", want)))
	}
	if st.ObservedGeneration < dep.Generation || st.UpdatedReplicas < want || st.AvailableReplicas < want || st.Replicas > want {
		setConditions(status, gen, cond(v1alpha1.ConditionProgressing, true, ReasonRollingOut,
			fmt.Sprintf("Rolling out configuration %s: %d/%d replicas updated, %d available.", hash, st.UpdatedReplicas, want, st.AvailableReplicas)))
	} else {
		setConditions(status, gen, cond(v1alpha1.ConditionProgressing, false, ReasonRolloutComplete,
			fmt.Sprintf("Configuration %s is rolled out to %d replicas.", hash, want)))
	}
}

func cond(t string, ok bool, reason, msg string) metav1.Condition {
	s := metav1.ConditionFalse
	if ok {
		s = metav1.ConditionTrue
	}
	return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg}
}

func setConditions(status *v1alpha1.KubeNexusConfigStatus, gen int64, conds ...metav1.Condition) {
	for _, c := range conds {
		c.ObservedGeneration = gen
		meta.SetStatusCondition(&status.Conditions, c)
	}
}

func (r *Reconciler) writeStatus(ctx context.Context, knc *v1alpha1.KubeNexusConfig, status *v1alpha1.KubeNexusConfigStatus) error {
	if equality.Semantic.DeepEqual(knc.Status, *status) {
		return nil
	}
	patch := client.MergeFromWithOptions(knc.DeepCopy(), client.MergeFromWithOptimisticLock{})
	knc.Status = *status
	return r.Client.Status().Patch(ctx, knc, patch)
}

// SetupWithManager watches KubeNexusConfigs (spec changes only) and every object the
// operator applies, so that a drifted or deleted child is restored.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("kubenexusconfig").
		For(&v1alpha1.KubeNexusConfig{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&corev1.ConfigMap{}).
		Owns(&corev1.Service{}).
		Owns(&appsv1.Deployment{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Complete(r)
}
