package config

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// ProfileClassifierArgs are the arguments of the ProfileClassifier plugin.
type ProfileClassifierArgs struct {
	metav1.TypeMeta `json:",inline"`

	// DefaultTier is the tenant tier of namespaces without a valid
	// tenant.kubenexus.io/tier label (gold, silver or bronze). Default bronze.
	DefaultTier v1alpha1.TenantTier `json:"defaultTier,omitempty"`

	// TenantTierFrom is Namespace (default) or ClusterQueue: for pods Kueue admitted,
	// the tenant.kubenexus.io/tier label of the admitting ClusterQueue, else the
	// namespace's (the KubeNexusConfig's spec.kueue.tenantTierFrom).
	TenantTierFrom v1alpha1.TenantTierSource `json:"tenantTierFrom,omitempty"`
}

// SetDefaultsProfileClassifierArgs fills unset fields.
func SetDefaultsProfileClassifierArgs(a *ProfileClassifierArgs) {
	if a.DefaultTier == "" {
		a.DefaultTier = v1alpha1.TenantTierBronze
	}
	if a.TenantTierFrom == "" {
		a.TenantTierFrom = v1alpha1.TenantTierFromNamespace
	}
}

// ValidateProfileClassifierArgs checks defaulted args.
func ValidateProfileClassifierArgs(path *field.Path, a *ProfileClassifierArgs) field.ErrorList {
	var errs field.ErrorList
	switch a.DefaultTier {
	case v1alpha1.TenantTierGold, v1alpha1.TenantTierSilver, v1alpha1.TenantTierBronze:
	default:
		errs = append(errs, field.NotSupported(path.Child("defaultTier"), a.DefaultTier, []string{"gold", "silver", "bronze"}))
	}
	switch a.TenantTierFrom {
	case v1alpha1.TenantTierFromNamespace, v1alpha1.TenantTierFromClusterQueue:
	default:
		errs = append(errs, field.NotSupported(path.Child("tenantTierFrom"), a.TenantTierFrom, []string{"Namespace", "ClusterQueue"}))
	}
	return errs
}

// DecodeProfileClassifierArgs decodes, defaults and validates ProfileClassifier's args.
func DecodeProfileClassifierArgs(obj runtime.Object) (*ProfileClassifierArgs, error) {
	return decode(obj, "ProfileClassifierArgs", SetDefaultsProfileClassifierArgs, ValidateProfileClassifierArgs)
}
