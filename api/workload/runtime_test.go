package workload

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

func TestRuntimeBound(t *testing.T) {
	for _, tc := range []struct {
		name     string
		deadline *int64
		label    string
		want     time.Duration
		ok       bool
	}{
		{name: "activeDeadlineSeconds", deadline: ptr.To[int64](600), want: 10 * time.Minute, ok: true},
		{name: "Kueue max exec time", label: "90", want: 90 * time.Second, ok: true},
		{name: "deadline wins over the label", deadline: ptr.To[int64](60), label: "90", want: time.Minute, ok: true},
		{name: "no bound"},
		{name: "malformed label", label: "ten"},
		{name: "negative label", label: "-5"},
		{name: "zero label", label: "0"},
		{name: "beyond a week", label: "700000"},
		{name: "deadline beyond a week", deadline: ptr.To[int64](700000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{}}}
			p.Spec.ActiveDeadlineSeconds = tc.deadline
			if tc.label != "" {
				p.Labels[v1alpha1.LabelKueueMaxExecTime] = tc.label
			}
			got, ok := RuntimeBound(p)
			if got != tc.want || ok != tc.ok {
				t.Errorf("RuntimeBound = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
