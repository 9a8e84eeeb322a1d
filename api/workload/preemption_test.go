package workload

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// MayMove: consolidation moves only lone pods that say they may move, never above
// the preemptor's priority or tier, never a service for batch by default.
func TestMayMove(t *testing.T) {
	own := &gang.Membership{Key: gang.Key{Namespace: "ns", Name: "g"}}
	training := Profile{Class: v1alpha1.WorkloadClassTraining, Tier: v1alpha1.TenantTierSilver, Gang: own}
	movable := Profile{Class: v1alpha1.WorkloadClassBatch, Tier: v1alpha1.TenantTierSilver, Preemptible: true}
	ckpt := Checkpointing{Interval: time.Hour}
	with := func(f func(*Profile)) Profile { p := movable; f(&p); return p }
	for _, tc := range []struct {
		name         string
		victim       Profile
		prio         int32
		ckpt         Checkpointing
		checkpointed bool
		services     bool
		want         bool
	}{
		{name: "preemptible, same priority and tier", victim: movable, prio: 10, want: true},
		{name: "lower priority", victim: movable, prio: 5, want: true},
		{name: "higher priority", victim: movable, prio: 11},
		{name: "higher tier", victim: with(func(p *Profile) { p.Tier = v1alpha1.TenantTierGold }), prio: 10},
		{name: "lower tier", victim: with(func(p *Profile) { p.Tier = v1alpha1.TenantTierBronze }), prio: 10, want: true},
		{name: "a gang member", victim: with(func(p *Profile) { p.Gang = &gang.Membership{Key: gang.Key{Namespace: "ns", Name: "other"}} }), prio: 10},
		{name: "not preemptible", victim: with(func(p *Profile) { p.Preemptible = false }), prio: 10},
		{name: "not preemptible, checkpoints, checkpointed pods off", victim: with(func(p *Profile) { p.Preemptible = false }), ckpt: ckpt, prio: 10},
		{name: "not preemptible, checkpoints, checkpointed pods on", victim: with(func(p *Profile) { p.Preemptible = false }), ckpt: ckpt, checkpointed: true, prio: 10, want: true},
		{name: "not preemptible, no checkpoints, checkpointed pods on", victim: with(func(p *Profile) { p.Preemptible = false }), checkpointed: true, prio: 10},
		{name: "a service for training", victim: with(func(p *Profile) { p.Class = v1alpha1.WorkloadClassService }), prio: 10},
		{name: "a service for training, allowed", victim: with(func(p *Profile) { p.Class = v1alpha1.WorkloadClassService }), services: true, prio: 10, want: true},
	} {
		if got := MayMove(training, 10, tc.victim, tc.prio, tc.ckpt, tc.checkpointed, tc.services); got != tc.want {
			t.Errorf("%s: MayMove = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRecreatedElsewhere(t *testing.T) {
	owned := func(kind string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{Kind: kind, Name: "x", Controller: ptr.To(true)}}}}
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"a ReplicaSet's", owned("ReplicaSet"), true},
		{"a Job's", owned("Job"), true},
		{"a DaemonSet's", owned("DaemonSet"), false},
		{"a bare pod", &corev1.Pod{}, false},
		{"owned but not controlled", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "x"}}}}, false},
	} {
		if got := RecreatedElsewhere(tc.pod); got != tc.want {
			t.Errorf("%s: RecreatedElsewhere = %v, want %v", tc.name, got, tc.want)
		}
	}
}
