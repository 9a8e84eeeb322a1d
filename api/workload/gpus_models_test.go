package workload

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

func TestRequiredGPUModels(t *testing.T) {
	term := func(exprs ...corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: exprs}
	}
	in := func(key string, values ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
	}
	pod := func(selector map[string]string, terms ...corev1.NodeSelectorTerm) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: selector}}
		if len(terms) > 0 {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
		}
		return p
	}
	product := v1alpha1.LabelGPUProduct
	tests := map[string]struct {
		pod  *corev1.Pod
		want []string
	}{
		"no constraint":                             {pod(nil), nil},
		"node selector":                             {pod(map[string]string{product: "A100"}), []string{"A100"}},
		"affinity In, sorted and unique":            {pod(nil, term(in(product, "V100", "T4", "V100"))), []string{"T4", "V100"}},
		"terms are ORed":                            {pod(nil, term(in(product, "T4")), term(in(product, "A10"))), []string{"A10", "T4"}},
		"a term without the label allows any":       {pod(nil, term(in(product, "T4")), term(in("zone", "a"))), nil},
		"expressions of a term are ANDed":           {pod(nil, term(in(product, "T4", "A10"), in(product, "A10"))), []string{"A10"}},
		"selector and affinity intersect":           {pod(map[string]string{product: "T4"}, term(in(product, "T4", "A10"))), []string{"T4"}},
		"disjoint selector and affinity allow none": {pod(map[string]string{product: "T4"}, term(in(product, "A10"))), []string{}},
		"NotIn names no model":                      {pod(nil, term(corev1.NodeSelectorRequirement{Key: product, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"T4"}})), nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := RequiredGPUModels(tc.pod)
			if diff := cmp.Diff(tc.want, got); diff != "" || (tc.want == nil) != (got == nil) {
				t.Errorf("RequiredGPUModels (-want +got):\n%s (want nil: %v, got nil: %v)", diff, tc.want == nil, got == nil)
			}
		})
	}
}
