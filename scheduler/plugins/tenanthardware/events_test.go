package tenanthardware

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	testutil "github.com/kube-nexus/kubenexus/test/util"
)

func TestNodeHint(t *testing.T) {
	var namespaces []runtime.Object
	for name, tier := range map[string]string{"bronze-team": "bronze", "untiered": ""} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if tier != "" {
			ns.Labels = map[string]string{v1alpha1.LabelTenantTier: tier}
		}
		namespaces = append(namespaces, ns)
	}
	// The demo's tiers: premium for gold (lent to preemptible pods), standard for
	// gold and silver, economy for everyone.
	selector := func(hw string) metav1.LabelSelector {
		return metav1.LabelSelector{MatchLabels: map[string]string{"hw": hw}}
	}
	pl, _ := newPlugin(t, namespaces,
		testutil.MakeHardwareTier("standard", 50).Selector(selector("standard")).Tenants(v1alpha1.TenantTierGold, v1alpha1.TenantTierSilver).Obj(),
		testutil.MakeHardwareTier("premium", 100).Selector(selector("premium")).Tenants(v1alpha1.TenantTierGold).Borrowing(v1alpha1.BorrowingPreemptible).Obj(),
		testutil.MakeHardwareTier("economy", 10).Selector(selector("economy")).Tenants(v1alpha1.TenantTierGold, v1alpha1.TenantTierSilver, v1alpha1.TenantTierBronze).Obj(),
	)
	for _, hw := range []string{"standard", "premium", "economy"} {
		if pl.tiers.Current().Of(map[string]string{"hw": hw}, nil) == nil {
			t.Fatalf("HardwareTier %s is not in the tier snapshot", hw)
		}
	}
	node := func(hw string) *corev1.Node {
		return testutil.MakeNode("n").Label("hw", hw).Obj()
	}
	bronzePod := testutil.MakePod("p", "bronze-team").Obj()
	spotPod := testutil.MakePod("p", "bronze-team").Label(v1alpha1.LabelPreemptible, "true").Obj()
	// The pod's own tier label is not trusted: a bronze pod claiming gold is still bronze.
	forger := testutil.MakePod("p", "bronze-team").Label(v1alpha1.LabelTenantTier, "gold").Obj()
	for name, tc := range map[string]struct {
		pod  *corev1.Pod
		node *corev1.Node
		want fwk.QueueingHint
	}{
		"tier admits the pod":            {bronzePod, node("economy"), fwk.Queue},
		"tier refuses the pod":           {bronzePod, node("standard"), fwk.QueueSkip},
		"tier refuses a forged gold pod": {forger, node("standard"), fwk.QueueSkip},
		"tier lends to the spot pod":     {spotPod, node("premium"), fwk.Queue},
		"untiered node":                  {bronzePod, node("none"), fwk.Queue},
		"namespace without a tier":       {testutil.MakePod("p", "untiered").Obj(), node("standard"), fwk.Queue},
		"namespace not in the cache":     {testutil.MakePod("p", "unknown").Obj(), node("standard"), fwk.Queue},
	} {
		if got, _ := pl.isSchedulableAfterNodeChange(klog.Background(), tc.pod, nil, tc.node); got != tc.want {
			t.Errorf("%s: %v, want %v", name, got, tc.want)
		}
	}
}
