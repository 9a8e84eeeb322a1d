// Package kubenexusconfig refuses KubeNexusConfigs that kubenexus-scheduler would
// reject, at admission, with the field that is wrong.
//
// +kubebuilder:webhookconfiguration:mutating=false,name=kubenexus-validating
package kubenexusconfig

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/controllers/kubenexusconfig/render"
)

// +kubebuilder:webhook:path=/validate-scheduling-kubenexus-io-v1alpha1-kubenexusconfig,mutating=false,failurePolicy=fail,sideEffects=None,groups=scheduling.kubenexus.io,resources=kubenexusconfigs,verbs=create;update,versions=v1alpha1,name=vkubenexusconfig.scheduling.kubenexus.io,admissionReviewVersions=v1,timeoutSeconds=10

// Validator renders a KubeNexusConfig and runs it through the scheduler's own
// configuration decoding and validation and each plugin's args validation (see
// render.Validate). The CRD schema has already checked each field on its own; this
// catches what only the scheduler knows, such as leader election timings its
// elector refuses.
type Validator struct {
	// Namespace is the scheduler's namespace (rendered into its lease).
	Namespace string
}

var _ admission.Validator[*v1alpha1.KubeNexusConfig] = &Validator{}

func (v *Validator) ValidateCreate(_ context.Context, obj *v1alpha1.KubeNexusConfig) (admission.Warnings, error) {
	return nil, v.validate(obj)
}

func (v *Validator) ValidateUpdate(_ context.Context, _, obj *v1alpha1.KubeNexusConfig) (admission.Warnings, error) {
	return nil, v.validate(obj)
}

func (v *Validator) ValidateDelete(context.Context, *v1alpha1.KubeNexusConfig) (admission.Warnings, error) {
	return nil, nil
}

func (v *Validator) validate(obj *v1alpha1.KubeNexusConfig) error {
	errs := append(render.Validate(&obj.Spec, v.Namespace), render.ValidateWebhook(&obj.Spec.Webhook)...)
	if len(errs) > 0 {
		return apierrors.NewInvalid(v1alpha1.GroupVersion.WithKind("KubeNexusConfig").GroupKind(), obj.Name, errs)
	}
	return nil
}

// SetupWithManager serves the validator on mgr's webhook server.
func (v *Validator) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &v1alpha1.KubeNexusConfig{}).WithValidator(v).Complete()
}
