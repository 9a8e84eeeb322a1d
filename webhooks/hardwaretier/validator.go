// Package hardwaretier refuses a HardwareTier whose selectors (node labels, DRA
// devices) overlap another tier's: a node in two tiers would make tenant matching ambiguous. Overlap needs the
// other tiers and the nodes, which CEL cannot see.
package hardwaretier

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kube-nexus/kubenexus/api/hardware"
	"github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// +kubebuilder:webhook:path=/validate-scheduling-kubenexus-io-v1alpha1-hardwaretier,mutating=false,failurePolicy=fail,sideEffects=None,groups=scheduling.kubenexus.io,resources=hardwaretiers,verbs=create;update,versions=v1alpha1,name=vhardwaretier.scheduling.kubenexus.io,admissionReviewVersions=v1,timeoutSeconds=5

// Validator checks a HardwareTier against the other tiers and the nodes.
type Validator struct {
	// Client reads nodes and devices (from the manager's cache).
	Client client.Reader
	// Tiers reads the other tiers from the API server: a tier created a moment
	// before (kubectl apply of a file with two) is not in the cache yet.
	Tiers client.Reader
}

var _ admission.Validator[*v1alpha1.HardwareTier] = &Validator{}

func (v *Validator) ValidateCreate(ctx context.Context, t *v1alpha1.HardwareTier) (admission.Warnings, error) {
	return nil, v.validate(ctx, t)
}

// ValidateUpdate checks only a changed selector, so that a tier that came to
// overlap through node relabelling can still be edited (its status says so).
func (v *Validator) ValidateUpdate(ctx context.Context, old, t *v1alpha1.HardwareTier) (admission.Warnings, error) {
	if reflect.DeepEqual(old.Spec.NodeSelector, t.Spec.NodeSelector) && reflect.DeepEqual(old.Spec.DeviceSelectors, t.Spec.DeviceSelectors) {
		return nil, nil
	}
	return nil, v.validate(ctx, t)
}

func (v *Validator) ValidateDelete(context.Context, *v1alpha1.HardwareTier) (admission.Warnings, error) {
	return nil, nil
}

func (v *Validator) validate(ctx context.Context, t *v1alpha1.HardwareTier) error {
	path := field.NewPath("spec", "nodeSelector")
	sel, err := hardware.NewSelector(&t.Spec)
	if err != nil {
		return invalid(t, field.Invalid(path, t.Spec.NodeSelector, err.Error()))
	}
	var tiers v1alpha1.HardwareTierList
	if err := v.Tiers.List(ctx, &tiers); err != nil {
		return apierrors.NewInternalError(err)
	}
	var nodes corev1.NodeList
	if err := v.Client.List(ctx, &nodes); err != nil {
		return apierrors.NewInternalError(err)
	}
	var devicesOf func(string) []hardware.Device
	slices.SortFunc(tiers.Items, func(a, b v1alpha1.HardwareTier) int { return strings.Compare(a.Name, b.Name) })
	for i := range tiers.Items {
		other := &tiers.Items[i]
		if other.Name == t.Name {
			continue
		}
		if reflect.DeepEqual(other.Spec.NodeSelector, t.Spec.NodeSelector) && reflect.DeepEqual(other.Spec.DeviceSelectors, t.Spec.DeviceSelectors) {
			return invalid(t, field.Invalid(path, t.Spec.NodeSelector, fmt.Sprintf("is the same as HardwareTier %s's; a node may belong to one tier only", other.Name)))
		}
		otherSel, err := hardware.NewSelector(&other.Spec)
		if err != nil {
			continue
		}
		if devicesOf == nil && (sel.UsesDevices() || otherSel.UsesDevices()) {
			if devicesOf, err = hardware.ListDevices(ctx, v.Client); err != nil {
				return apierrors.NewInternalError(err)
			}
		}
		for j := range nodes.Items {
			n := &nodes.Items[j]
			var devs []hardware.Device
			if devicesOf != nil {
				devs = devicesOf(n.Name)
			}
			if sel.Matches(n.Labels, devs) && otherSel.Matches(n.Labels, devs) {
				return invalid(t, field.Invalid(path, sel.String(), fmt.Sprintf("selects node %s, which HardwareTier %s (%s) selects too; a node may belong to one tier only",
					n.Name, other.Name, otherSel.String())))
			}
		}
	}
	return nil
}

func invalid(t *v1alpha1.HardwareTier, e *field.Error) error {
	return apierrors.NewInvalid(v1alpha1.GroupVersion.WithKind("HardwareTier").GroupKind(), t.Name, field.ErrorList{e})
}

// SetupWithManager serves the validator on mgr's webhook server.
func (v *Validator) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &v1alpha1.HardwareTier{}).WithValidator(v).Complete()
}
