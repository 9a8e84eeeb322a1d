package tenanthardware

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/tenant"
	testutil "github.com/kube-nexus/kubenexus/test/util"
)

func TestNodeHint(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for name, tier := range map[string]string{"bronze-team": "bronze", "untiered": ""} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if tier != "" {
			ns.Labels = map[string]string{v1alpha1.LabelTenantTier: tier}
		}
		if err := idx.Add(ns); err != nil {
			t.Fatal(err)
		}
	}
	resolver := tenant.NewResolver(corelisters.NewNamespaceLister(idx), nil)
	// The demo's tiers: premium for gold (lent to preemptible pods), standard for
	// gold and silver, economy for everyone.
	selector := func(hw string) metav1.LabelSelector {
		return metav1.LabelSelector{MatchLabels: map[string]string{"hw": hw}}
	}
	tiers, errs := tenant.StaticTiers([]v1alpha1.HardwareTier{
		*testutil.MakeHardwareTier("standard", 50).Selector(selector("standard")).Tenants(v1alpha1.TenantTierGold, v1alpha1.TenantTierSilver).Obj(),
		*testutil.MakeHardwareTier("premium", 100).Selector(selector("premium")).Tenants(v1alpha1.TenantTierGold).Borrowing(v1alpha1.BorrowingPreemptible).Obj(),
		*testutil.MakeHardwareTier("economy", 10).Selector(selector("economy")).Tenants(v1alpha1.TenantTierGold, v1alpha1.TenantTierSilver, v1alpha1.TenantTierBronze).Obj(),
	}, resolver)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	pl := &Plugin{tenants: resolver, tiers: tiers}
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
