package tenanthardware

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	testutil "github.com/kube-nexus/kubenexus/test/util"
)

func TestHardwareTierHint(t *testing.T) {
	tierAt := func(gen int64) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGeneration(gen)
		return u
	}
	for name, tc := range map[string]struct {
		oldObj, newObj any
		want           fwk.QueueingHint
	}{
		"added":         {nil, tierAt(1), fwk.Queue},
		"deleted":       {tierAt(3), nil, fwk.Queue},
		"spec changed":  {tierAt(1), tierAt(2), fwk.Queue},
		"status update": {tierAt(2), tierAt(2), fwk.QueueSkip},
	} {
		if got, _ := isSchedulableAfterHardwareTierChange(klog.Background(), nil, tc.oldObj, tc.newObj); got != tc.want {
			t.Errorf("%s: %v, want %v", name, got, tc.want)
		}
	}
}

func TestNodeHint(t *testing.T) {
	pl := &Plugin{}
	pl.tiers.Store(demoTiers(t))
	node := func(hw string) *corev1.Node {
		return testutil.MakeNode("n").Label("hw", hw).Obj()
	}
	bronzePod := testutil.MakePod("p", "ns").Label(v1alpha1.LabelTenantTier, "bronze").Obj()
	spotPod := testutil.MakePod("p", "ns").Label(v1alpha1.LabelTenantTier, "bronze").Label(v1alpha1.LabelPreemptible, "true").Obj()
	unlabelled := testutil.MakePod("p", "ns").Obj()
	for name, tc := range map[string]struct {
		pod  *corev1.Pod
		node *corev1.Node
		want fwk.QueueingHint
	}{
		"tier admits the pod":        {bronzePod, node("economy"), fwk.Queue},
		"tier refuses the pod":       {bronzePod, node("standard"), fwk.QueueSkip},
		"tier lends to the spot pod": {spotPod, node("premium"), fwk.Queue},
		"untiered node":              {bronzePod, node("none"), fwk.Queue},
		"pod without a tier label":   {unlabelled, node("standard"), fwk.Queue},
	} {
		if got, _ := pl.isSchedulableAfterNodeChange(klog.Background(), tc.pod, nil, tc.node); got != tc.want {
			t.Errorf("%s: %v, want %v", name, got, tc.want)
		}
	}
}
