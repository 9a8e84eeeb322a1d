package podgroup

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestForbidsPodsOf(t *testing.T) {
	quota := func(hard corev1.ResourceList, scopes []corev1.ResourceQuotaScope, exprs ...corev1.ScopedResourceSelectorRequirement) *corev1.ResourceQuota {
		q := &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: hard, Scopes: scopes}}
		if len(exprs) > 0 {
			q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: exprs}
		}
		return q
	}
	class := func(op corev1.ScopeSelectorOperator, values ...string) corev1.ScopedResourceSelectorRequirement {
		return corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: op, Values: values}
	}
	noPods := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}
	tests := map[string]struct {
		quota *corev1.ResourceQuota
		want  bool
	}{
		"zero pods of the class":              {quota(noPods, nil, class(corev1.ScopeSelectorOpIn, "batch-high", "critical")), true},
		"zero count/pods of the class":        {quota(corev1.ResourceList{"count/pods": resource.MustParse("0")}, nil, class(corev1.ScopeSelectorOpIn, "critical")), true},
		"zero pods of every other class":      {quota(noPods, nil, class(corev1.ScopeSelectorOpNotIn, "batch-low")), true},
		"zero pods of any class":              {quota(noPods, nil, class(corev1.ScopeSelectorOpExists)), true},
		"another class":                       {quota(noPods, nil, class(corev1.ScopeSelectorOpIn, "batch-low")), false},
		"the class excluded":                  {quota(noPods, nil, class(corev1.ScopeSelectorOpNotIn, "critical")), false},
		"pods without a class only":           {quota(noPods, nil, class(corev1.ScopeSelectorOpDoesNotExist)), false},
		"some pods allowed":                   {quota(corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2")}, nil, class(corev1.ScopeSelectorOpIn, "critical")), false},
		"zero CPU only: pods may still exist": {quota(corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("0")}, nil, class(corev1.ScopeSelectorOpIn, "critical")), false},
		"unscoped quota":                      {quota(noPods, nil), false},
		"also scoped by the pod's own state":  {quota(noPods, []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}, class(corev1.ScopeSelectorOpIn, "critical")), false},
		"also scoped by termination": {quota(noPods, nil, class(corev1.ScopeSelectorOpIn, "critical"),
			corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopeTerminating, Operator: corev1.ScopeSelectorOpExists}), false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := forbidsPodsOf(tc.quota, "critical"); got != tc.want {
				t.Errorf("forbidsPodsOf(critical) = %v, want %v", got, tc.want)
			}
		})
	}
}
