package coscheduling

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/ptr"
)

// A member refused for a shared claim is tried again when a claim it uses is
// allocated or deleted, not for other claims or other changes.
func TestIsSchedulableAfterClaimChange(t *testing.T) {
	member := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "ml"}, Spec: corev1.PodSpec{
		ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("pair")}, {Name: "made", ResourceClaimTemplateName: ptr.To("t")}}},
		Status: corev1.PodStatus{ResourceClaimStatuses: []corev1.PodResourceClaimStatus{{Name: "made", ResourceClaimName: ptr.To("m-made-x")}}}}
	claim := func(ns, name string, allocated bool) *resourceapi.ResourceClaim {
		c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
		if allocated {
			c.Status.Allocation = &resourceapi.AllocationResult{}
		}
		return c
	}
	tests := map[string]struct {
		pod      *corev1.Pod
		old, new any
		want     fwk.QueueingHint
	}{
		"its named claim allocated":        {member, claim("ml", "pair", false), claim("ml", "pair", true), fwk.Queue},
		"the claim made for it allocated":  {member, claim("ml", "m-made-x", false), claim("ml", "m-made-x", true), fwk.Queue},
		"its claim deleted":                {member, claim("ml", "pair", false), nil, fwk.Queue},
		"its claim changed, not allocated": {member, claim("ml", "pair", false), claim("ml", "pair", false), fwk.QueueSkip},
		"another claim allocated":          {member, claim("ml", "other", false), claim("ml", "other", true), fwk.QueueSkip},
		"same name, another namespace":     {member, claim("ai", "pair", false), claim("ai", "pair", true), fwk.QueueSkip},
		"a pod without claims":             {&corev1.Pod{}, claim("ml", "pair", false), claim("ml", "pair", true), fwk.QueueSkip},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var newObj any
			if tc.new != nil {
				newObj = tc.new
			}
			got, err := isSchedulableAfterClaimChange(klog.Background(), tc.pod, tc.old, newObj)
			if err != nil || got != tc.want {
				t.Errorf("hint = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
