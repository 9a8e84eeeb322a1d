// Package podgroup refuses PodGroups that can never form (a minMember larger than
// the number of pods their owner creates, a topology level the KubeNexusConfig does
// not define) and PodGroups that name a PriorityClass their namespace's pods could
// not use. The CRD schema checks the PodGroup on its own; these rules need other
// objects.
package podgroup

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kube-nexus/kubenexus/api/topology"
	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
)

// +kubebuilder:webhook:path=/validate-scheduling-kubenexus-io-v1alpha1-podgroup,mutating=false,failurePolicy=fail,sideEffects=None,groups=scheduling.kubenexus.io,resources=podgroups,verbs=create;update,versions=v1alpha1,name=vpodgroup.scheduling.kubenexus.io,admissionReviewVersions=v1,timeoutSeconds=5
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets;replicasets,verbs=get

// Validator checks a PodGroup against its controlling owner.
type Validator struct {
	// Owners reads owners as unstructured objects (the frameworks are optional).
	Owners client.Reader
}

var _ admission.Validator[*v1alpha1.PodGroup] = &Validator{}

// gangOwners are the owner kinds whose spec says how many pods they create.
var gangOwners = map[schema.GroupKind]schema.GroupVersionKind{}

func init() {
	for _, gvk := range workload.GangOwners() {
		gangOwners[gvk.GroupKind()] = gvk
	}
}

var replicaOwners = map[schema.GroupKind]schema.GroupVersionKind{
	{Group: "apps", Kind: "Deployment"}:  {Group: "apps", Version: "v1", Kind: "Deployment"},
	{Group: "apps", Kind: "StatefulSet"}: {Group: "apps", Version: "v1", Kind: "StatefulSet"},
	{Group: "apps", Kind: "ReplicaSet"}:  {Group: "apps", Version: "v1", Kind: "ReplicaSet"},
}

func (v *Validator) ValidateCreate(ctx context.Context, pg *v1alpha1.PodGroup) (admission.Warnings, error) {
	if err := v.checkPriorityClass(ctx, pg, nil); err != nil {
		return nil, err
	}
	if err := v.checkReserveCapacity(ctx, pg, nil); err != nil {
		return nil, err
	}
	return v.validate(ctx, pg)
}

func (v *Validator) ValidateUpdate(ctx context.Context, old, pg *v1alpha1.PodGroup) (admission.Warnings, error) {
	if err := v.checkPriorityClass(ctx, pg, old); err != nil {
		return nil, err
	}
	if err := v.checkReserveCapacity(ctx, pg, old); err != nil {
		return nil, err
	}
	return v.validate(ctx, pg)
}

func (v *Validator) ValidateDelete(context.Context, *v1alpha1.PodGroup) (admission.Warnings, error) {
	return nil, nil
}

func (v *Validator) validate(ctx context.Context, pg *v1alpha1.PodGroup) (admission.Warnings, error) {
	if err := v.checkTopologyLevel(ctx, pg); err != nil {
		return nil, err
	}

	ref := metav1.GetControllerOf(pg)
	if ref == nil {
		return nil, nil
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, nil //nolint:nilerr // the API server validates owner references
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
	gvk, isGang := gangOwners[gk]
	if !isGang {
		if gvk, ok := replicaOwners[gk]; ok {
			return v.checkReplicas(ctx, pg, gvk, ref.Name)
		}
		return nil, nil
	}
	// The owner is read at the version its reference names (training-operator serves
	// MPIJob as kubeflow.org/v1, mpi-operator as v2beta1).
	if gv.Version != "" {
		gvk.Version = gv.Version
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	if err := v.Owners.Get(ctx, types.NamespacedName{Namespace: pg.Namespace, Name: ref.Name}, obj); err != nil {
		return ownerUnreadable(gvk, ref.Name, err)
	}
	most, err := workload.MaxMembersFrom(workload.GangSource{GVK: gvk, Name: ref.Name}, obj)
	if err != nil {
		return admission.Warnings{err.Error()}, nil //nolint:nilerr // the size cannot be read: warned about, not refused
	}
	return nil, tooBig(pg, most, fmt.Sprintf("%s %s creates at most %d gang members", gvk.Kind, ref.Name, most))
}

func (v *Validator) checkReplicas(ctx context.Context, pg *v1alpha1.PodGroup, gvk schema.GroupVersionKind, name string) (admission.Warnings, error) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	if err := v.Owners.Get(ctx, types.NamespacedName{Namespace: pg.Namespace, Name: name}, obj); err != nil {
		return ownerUnreadable(gvk, name, err)
	}
	replicas, found, err := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	if err != nil || !found {
		replicas = 1
	}
	return nil, tooBig(pg, int32(replicas), fmt.Sprintf("%s %s has %d replicas", gvk.Kind, name, replicas))
}

// ownerUnreadable admits with a warning: the owner may not exist yet (created after
// its PodGroup) or its framework may not be installed.
// checkTopologyLevel refuses a spec.networkTopology.level that is not one of the
// KubeNexusConfig's topology levels (the defaults when there is none).
func (v *Validator) checkTopologyLevel(ctx context.Context, pg *v1alpha1.PodGroup) error {
	nt := pg.Spec.NetworkTopology
	if nt == nil {
		return nil
	}
	levels := topology.DefaultLevels
	knc := &v1alpha1.KubeNexusConfig{}
	switch err := v.Owners.Get(ctx, types.NamespacedName{Name: v1alpha1.DefaultConfigName}, knc); {
	case err == nil:
		levels = topology.Levels(knc.Spec.Topology.Levels)
	case !apierrors.IsNotFound(err):
		return apierrors.NewInternalError(fmt.Errorf("reading the KubeNexusConfig: %w", err))
	}
	names := make([]string, 0, len(levels))
	index := map[string]int{}
	for i, l := range levels {
		names = append(names, l.Name)
		index[l.Name] = i
	}
	path := field.NewPath("spec", "networkTopology")
	invalid := func(e *field.Error) error {
		return apierrors.NewInvalid(v1alpha1.GroupVersion.WithKind("PodGroup").GroupKind(), pg.Name, field.ErrorList{e})
	}
	outer, ok := index[string(nt.Level)]
	if !ok {
		return invalid(field.NotSupported(path.Child("level"), nt.Level, names))
	}
	slices := make([]topology.Slice, 0, len(nt.Slices))
	for i, s := range nt.Slices {
		l, ok := index[string(s.Level)]
		if !ok {
			return invalid(field.NotSupported(path.Child("slices").Index(i).Child("level"), s.Level, names))
		}
		slices = append(slices, topology.Slice{Level: l, Size: int(s.Size)})
	}
	if err := topology.ValidateSlices(slices, outer, int(pg.Spec.MinMember), levels); err != nil {
		return invalid(field.Invalid(path.Child("slices"), len(nt.Slices), err.Error()))
	}
	if len(nt.SubGroups) > 0 && len(nt.Slices) > 0 {
		return invalid(field.Invalid(path.Child("subGroups"), len(nt.SubGroups), "set slices or subGroups, not both"))
	}
	for i, g := range nt.SubGroups {
		l, ok := index[string(g.Level)]
		switch {
		case !ok:
			return invalid(field.NotSupported(path.Child("subGroups").Index(i).Child("level"), g.Level, names))
		case l > outer:
			return invalid(field.Invalid(path.Child("subGroups").Index(i).Child("level"), g.Level,
				fmt.Sprintf("above spec.networkTopology.level (%s): a sub-group must fit in the gang's domain", nt.Level)))
		}
	}
	return nil
}

// checkReserveCapacity refuses a spec.reserveCapacity.ttlSeconds above the
// KubeNexusConfig's spec.reservations.maxTTLSeconds: the scheduler creates the
// gang's ResourceReservation with that TTL, and the ResourceReservation webhook
// would refuse it then, out of the user's sight. An update is checked only when it
// changes the TTL.
func (v *Validator) checkReserveCapacity(ctx context.Context, pg, old *v1alpha1.PodGroup) error {
	rc := pg.Spec.ReserveCapacity
	if rc == nil || rc.TTLSeconds == 0 || old != nil && old.Spec.ReserveCapacity != nil && old.Spec.ReserveCapacity.TTLSeconds == rc.TTLSeconds {
		return nil
	}
	var limits v1alpha1.ReservationsSpec
	knc := &v1alpha1.KubeNexusConfig{}
	switch err := v.Owners.Get(ctx, types.NamespacedName{Name: v1alpha1.DefaultConfigName}, knc); {
	case err == nil:
		limits = knc.Spec.Reservations
	case !apierrors.IsNotFound(err):
		return apierrors.NewInternalError(fmt.Errorf("reading the KubeNexusConfig: %w", err))
	}
	if maxTTL, _ := limits.Limits(); rc.TTLSeconds > maxTTL {
		return apierrors.NewInvalid(v1alpha1.GroupVersion.WithKind("PodGroup").GroupKind(), pg.Name, field.ErrorList{
			field.Invalid(field.NewPath("spec", "reserveCapacity", "ttlSeconds"), rc.TTLSeconds,
				fmt.Sprintf("must be at most %d (KubeNexusConfig spec.reservations.maxTTLSeconds)", maxTTL)),
		})
	}
	return nil
}

func ownerUnreadable(gvk schema.GroupVersionKind, name string, err error) (admission.Warnings, error) {
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return admission.Warnings{fmt.Sprintf("minMember not checked: %s %s cannot be read (%v)", gvk.Kind, name, err)}, nil
	}
	return nil, apierrors.NewInternalError(fmt.Errorf("reading %s %s: %w", gvk.Kind, name, err))
}

func tooBig(pg *v1alpha1.PodGroup, most int32, why string) error {
	if pg.Spec.MinMember <= most {
		return nil
	}
	return apierrors.NewInvalid(v1alpha1.GroupVersion.WithKind("PodGroup").GroupKind(), pg.Name, field.ErrorList{
		field.Invalid(field.NewPath("spec", "minMember"), pg.Spec.MinMember,
			fmt.Sprintf("must be at most %d: %s, so the gang could never form", most, why)),
	})
}

// SetupWithManager serves the validator on mgr's webhook server.
func (v *Validator) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &v1alpha1.PodGroup{}).WithValidator(v).Complete()
}
