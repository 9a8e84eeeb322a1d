// Package resourcereservation admits a ResourceReservation as its pods would be
// admitted: within the KubeNexusConfig's bounds on slots and TTL, on a node whose
// HardwareTier admits the namespace's tenant tier, and within the namespace's
// ResourceQuotas together with what its pods and its other reservations use.
// Whoever may create one in a namespace could otherwise hold any capacity, on any
// hardware, for up to a week.
package resourcereservation

import (
	"context"
	"fmt"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kube-nexus/kubenexus/api/hardware"
	reservationapi "github.com/kube-nexus/kubenexus/api/reservation"
	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
)

// +kubebuilder:webhook:path=/validate-scheduling-kubenexus-io-v1alpha1-resourcereservation,mutating=false,failurePolicy=fail,sideEffects=None,groups=scheduling.kubenexus.io,resources=resourcereservations,verbs=create;update,versions=v1alpha1,name=vresourcereservation.scheduling.kubenexus.io,admissionReviewVersions=v1,timeoutSeconds=5
// +kubebuilder:rbac:groups="",resources=resourcequotas,verbs=list
// +kubebuilder:rbac:groups="",resources=pods,verbs=list
// +kubebuilder:rbac:groups=scheduling.kubenexus.io,resources=resourcereservations,verbs=list

// Validator checks a ResourceReservation against the limits, tiers and quotas.
type Validator struct {
	// Client reads nodes, namespaces, HardwareTiers and devices (the manager's cache).
	Client client.Reader
	// Live reads the KubeNexusConfig, ResourceQuotas, the namespace's reservations
	// and pods from the API server: a reservation created a moment before must
	// count.
	Live client.Reader
}

var _ admission.Validator[*v1alpha1.ResourceReservation] = &Validator{}

func (v *Validator) ValidateCreate(ctx context.Context, rr *v1alpha1.ResourceReservation) (admission.Warnings, error) {
	return nil, v.validate(ctx, rr)
}

// ValidateUpdate checks a changed spec only: metadata changes (labels, finalizers)
// of a stored reservation are never refused.
func (v *Validator) ValidateUpdate(ctx context.Context, old, rr *v1alpha1.ResourceReservation) (admission.Warnings, error) {
	if reflect.DeepEqual(old.Spec, rr.Spec) {
		return nil, nil
	}
	return nil, v.validate(ctx, rr)
}

func (v *Validator) ValidateDelete(context.Context, *v1alpha1.ResourceReservation) (admission.Warnings, error) {
	return nil, nil
}

func (v *Validator) validate(ctx context.Context, rr *v1alpha1.ResourceReservation) error {
	limits, err := v.limits(ctx)
	if err != nil {
		return err
	}
	if errs := ValidateLimits(rr, limits); len(errs) > 0 {
		return invalid(rr, errs)
	}
	if err := v.checkTier(ctx, rr); err != nil {
		return err
	}
	return v.checkQuota(ctx, rr)
}

// ValidateLimits refuses slots and a TTL above the KubeNexusConfig's bounds.
func ValidateLimits(rr *v1alpha1.ResourceReservation, limits v1alpha1.ReservationsSpec) field.ErrorList {
	maxTTL, maxSlots := limits.Limits()
	var errs field.ErrorList
	if rr.Spec.Slots > maxSlots {
		errs = append(errs, field.Invalid(field.NewPath("spec", "slots"), rr.Spec.Slots,
			fmt.Sprintf("must be at most %d (KubeNexusConfig spec.reservations.maxSlots)", maxSlots)))
	}
	if rr.Spec.TTLSeconds > maxTTL {
		errs = append(errs, field.Invalid(field.NewPath("spec", "ttlSeconds"), rr.Spec.TTLSeconds,
			fmt.Sprintf("must be at most %d (%s; KubeNexusConfig spec.reservations.maxTTLSeconds)", maxTTL, time.Duration(maxTTL)*time.Second)))
	}
	return append(errs, metav1validation.ValidateLabels(rr.Spec.NodeSelector, field.NewPath("spec", "nodeSelector"))...)
}

// limits reads the KubeNexusConfig's bounds (the defaults without one).
func (v *Validator) limits(ctx context.Context) (v1alpha1.ReservationsSpec, error) {
	knc := &v1alpha1.KubeNexusConfig{}
	switch err := v.Live.Get(ctx, types.NamespacedName{Name: v1alpha1.DefaultConfigName}, knc); {
	case apierrors.IsNotFound(err):
		return v1alpha1.ReservationsSpec{}, nil
	case err != nil:
		return v1alpha1.ReservationsSpec{}, apierrors.NewInternalError(fmt.Errorf("reading the KubeNexusConfig: %w", err))
	}
	return knc.Spec.Reservations, nil
}

// checkTier refuses a reservation pinned to a node whose HardwareTier does not
// admit the namespace's tenant tier. A node that does not exist yet is checked by
// the scheduler when it appears (it holds nothing there until then).
func (v *Validator) checkTier(ctx context.Context, rr *v1alpha1.ResourceReservation) error {
	if rr.Spec.NodeName == "" {
		return nil
	}
	node := &corev1.Node{}
	switch err := v.Client.Get(ctx, types.NamespacedName{Name: rr.Spec.NodeName}, node); {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return apierrors.NewInternalError(fmt.Errorf("reading node %s: %w", rr.Spec.NodeName, err))
	}
	var list v1alpha1.HardwareTierList
	if err := v.Client.List(ctx, &list); err != nil {
		return apierrors.NewInternalError(fmt.Errorf("listing HardwareTiers: %w", err))
	}
	tiers, _ := hardware.NewTierSet(list.Items) // a tier whose selector does not build selects no node
	var devices func(string) []hardware.Device
	if tiers.UsesDevices() {
		var err error
		if devices, err = hardware.ListDevices(ctx, v.Client); err != nil {
			return apierrors.NewInternalError(fmt.Errorf("listing ResourceSlices: %w", err))
		}
	}
	ns := &corev1.Namespace{}
	if err := v.Client.Get(ctx, types.NamespacedName{Name: rr.Namespace}, ns); err != nil {
		return apierrors.NewInternalError(fmt.Errorf("reading namespace %s: %w", rr.Namespace, err))
	}
	tenant := workload.TierOf(workload.Namespace{Labels: ns.Labels}, "")
	if why := tiers.RefusesHolding(node.Name, node.Labels, devices, tenant); why != "" {
		return invalid(rr, field.ErrorList{field.Forbidden(field.NewPath("spec", "nodeName"),
			fmt.Sprintf("%s (namespace %s is tenant tier %s, from its %s label)", why, rr.Namespace, tenant, v1alpha1.LabelTenantTier))})
	}
	return nil
}

// checkQuota refuses a reservation whose charge (reservation.Charge), with what the
// namespace's pods use and its other reservations hold, exceeds one of the
// namespace's unscoped ResourceQuotas.
func (v *Validator) checkQuota(ctx context.Context, rr *v1alpha1.ResourceReservation) error {
	var quotas corev1.ResourceQuotaList
	if err := v.Live.List(ctx, &quotas, client.InNamespace(rr.Namespace)); err != nil {
		return apierrors.NewInternalError(fmt.Errorf("listing the ResourceQuotas of namespace %s: %w", rr.Namespace, err))
	}
	applies := false
	for i := range quotas.Items {
		applies = applies || reservationapi.Applies(&quotas.Items[i])
	}
	if !applies {
		return nil
	}
	var pods corev1.PodList
	if err := v.Live.List(ctx, &pods, client.InNamespace(rr.Namespace)); err != nil {
		return apierrors.NewInternalError(fmt.Errorf("listing the pods of namespace %s: %w", rr.Namespace, err))
	}
	podPtrs := make([]*corev1.Pod, len(pods.Items))
	for i := range pods.Items {
		podPtrs[i] = &pods.Items[i]
	}
	var rrs v1alpha1.ResourceReservationList
	if err := v.Live.List(ctx, &rrs, client.InNamespace(rr.Namespace)); err != nil {
		return apierrors.NewInternalError(fmt.Errorf("listing the ResourceReservations of namespace %s: %w", rr.Namespace, err))
	}
	now := time.Now()
	var others []corev1.ResourceList
	for i := range rrs.Items {
		o := &rrs.Items[i]
		if o.Name == rr.Name || !reservationapi.Holds(o, now) {
			continue
		}
		others = append(others, reservationapi.Charge(o, podPtrs))
	}
	other, mine := reservationapi.Sum(others...), reservationapi.Charge(rr, podPtrs)
	for i := range quotas.Items {
		if why := reservationapi.OverQuota(&quotas.Items[i], other, mine); why != "" {
			return invalid(rr, field.ErrorList{field.Forbidden(field.NewPath("spec", "resources"),
				fmt.Sprintf("%d slot(s) exceed the namespace's quota: %s", max(rr.Spec.Slots, 1), why))})
		}
	}
	return nil
}

func invalid(rr *v1alpha1.ResourceReservation, errs field.ErrorList) error {
	return apierrors.NewInvalid(v1alpha1.GroupVersion.WithKind("ResourceReservation").GroupKind(), rr.Name, errs)
}

// SetupWithManager serves the validator on mgr's webhook server.
func (v *Validator) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &v1alpha1.ResourceReservation{}).WithValidator(v).Complete()
}
