package podgroup

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses,verbs=get
// +kubebuilder:rbac:groups="",resources=resourcequotas,verbs=list

// systemClassPrefix starts the names of the PriorityClasses Kubernetes reserves for
// its own components (system-node-critical, system-cluster-critical).
const systemClassPrefix = "system-"

// systemNamespace is the one namespace whose PodGroups may name a system- class.
const systemNamespace = metav1.NamespaceSystem

// checkPriorityClass refuses a spec.priorityClassName that a pod of the PodGroup's
// namespace could not be admitted with: a class that does not exist (the Priority
// admission plugin refuses it for pods), a system- class outside kube-system, or a
// class whose pods a ResourceQuota of the namespace allows none of. The scheduler
// caps a gang's priority at its members' own in any case; this check makes the
// refusal visible at admission, naming the field.
func (v *Validator) checkPriorityClass(ctx context.Context, pg, old *v1alpha1.PodGroup) error {
	class := pg.Spec.PriorityClassName
	if class == "" || old != nil && old.Spec.PriorityClassName == class {
		return nil
	}
	path := field.NewPath("spec", "priorityClassName")
	invalid := func(why string) error {
		return apierrors.NewInvalid(v1alpha1.GroupVersion.WithKind("PodGroup").GroupKind(), pg.Name, field.ErrorList{
			field.Invalid(path, class, why),
		})
	}
	if strings.HasPrefix(class, systemClassPrefix) && pg.Namespace != systemNamespace {
		return invalid(fmt.Sprintf("PriorityClasses named %s* are reserved for Kubernetes' own components and may be named only by PodGroups in %s", systemClassPrefix, systemNamespace))
	}
	pc := &schedulingv1.PriorityClass{}
	switch err := v.Owners.Get(ctx, types.NamespacedName{Name: class}, pc); {
	case apierrors.IsNotFound(err):
		return invalid("no PriorityClass of this name exists; a pod naming it would be refused")
	case err != nil:
		return apierrors.NewInternalError(fmt.Errorf("reading PriorityClass %s: %w", class, err))
	}
	quotas := &corev1.ResourceQuotaList{}
	if err := v.Owners.List(ctx, quotas, client.InNamespace(pg.Namespace)); err != nil {
		return apierrors.NewInternalError(fmt.Errorf("listing the ResourceQuotas of namespace %s: %w", pg.Namespace, err))
	}
	for i := range quotas.Items {
		if q := &quotas.Items[i]; forbidsPodsOf(q, class) {
			return invalid(fmt.Sprintf("ResourceQuota %s of namespace %s allows no pods of PriorityClass %s", q.Name, pg.Namespace, class))
		}
	}
	return nil
}

// forbidsPodsOf reports whether the quota admits no pod of the class at all: it is
// scoped to that class by its scopeSelector, by nothing that depends on the pod
// itself, and its hard limit on pods is zero.
func forbidsPodsOf(q *corev1.ResourceQuota, class string) bool {
	if len(q.Spec.Scopes) > 0 || q.Spec.ScopeSelector == nil || len(q.Spec.ScopeSelector.MatchExpressions) == 0 {
		return false
	}
	for _, e := range q.Spec.ScopeSelector.MatchExpressions {
		if e.ScopeName != corev1.ResourceQuotaScopePriorityClass || !scopeMatches(e, class) {
			return false
		}
	}
	for _, name := range []corev1.ResourceName{corev1.ResourcePods, "count/pods"} {
		if hard, ok := q.Spec.Hard[name]; ok && hard.IsZero() {
			return true
		}
	}
	return false
}

// scopeMatches evaluates one PriorityClass scope expression for a pod of class.
func scopeMatches(e corev1.ScopedResourceSelectorRequirement, class string) bool {
	in := false
	for _, v := range e.Values {
		in = in || v == class
	}
	switch e.Operator {
	case corev1.ScopeSelectorOpIn:
		return in
	case corev1.ScopeSelectorOpNotIn:
		return !in
	case corev1.ScopeSelectorOpExists:
		return true
	default: // DoesNotExist: only pods that name no class
		return false
	}
}
