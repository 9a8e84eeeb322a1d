package podgroup

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

func departedMember(name, node string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ml", UID: types.UID(name), Labels: map[string]string{v1alpha1.LabelPodGroup: "train"}},
		Spec:       corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: phase, Conditions: []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: "DeletionByTaintManager"}}},
	}
}

func TestDepartedRemembersMembersDeletedWhileBound(t *testing.T) {
	now := time.Unix(1000, 0)
	key := gang.Key{Namespace: "ml", Name: "train"}
	var d departed
	d.note(departedMember("a", "n1", corev1.PodRunning), now)
	d.note(departedMember("done", "n2", corev1.PodSucceeded), now) // finished: not a loss
	d.note(departedMember("never", "", corev1.PodPending), now)    // never bound: not a loss
	d.note(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ml"}, Spec: corev1.PodSpec{NodeName: "n3"}}, now)

	got := d.of(key, nil, now.Add(time.Second))
	if len(got) != 1 || got[0].Name != "a" {
		t.Fatalf("remembered %v, want only pod a", names(got))
	}
	if got[0].DeletionTimestamp == nil {
		t.Error("a departed member carries no deletionTimestamp: tally would count it live")
	}
	if live, _, lost := tally(got); live != 0 || len(lost) != 1 {
		t.Errorf("tally of the departed member: %d live, %d lost; want 0 and 1", live, len(lost))
	}
	if cause, ok := causeOf([]*corev1.Pod{&got[0]}); cause != v1alpha1.RepairCauseNodeLost || !ok {
		t.Errorf("cause %q (%v), want NodeLost from the member's last DisruptionTarget condition", cause, ok)
	}
	// The cache holding the pod again (same UID): not returned twice.
	if again := d.of(key, []corev1.Pod{*departedMember("a", "n1", corev1.PodRunning)}, now); len(again) != 0 {
		t.Errorf("returned %v although the cache holds it", names(again))
	}
	if late := d.of(key, nil, now.Add(departedTTL)); len(late) != 0 {
		t.Errorf("returned %v after %s", names(late), departedTTL)
	}
	d.note(departedMember("b", "n1", corev1.PodRunning), now)
	d.forget(key)
	if got := d.of(key, nil, now); len(got) != 0 {
		t.Errorf("returned %v after forget", names(got))
	}
}

func names(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestDepartedUnexplainedLossWaitsToSettle(t *testing.T) {
	now := time.Unix(1000, 0)
	key := gang.Key{Namespace: "ml", Name: "train"}
	var d departed
	if wait := d.unexplained(key, now); wait != settleDelay {
		t.Fatalf("first sight: wait %s, want %s", wait, settleDelay)
	}
	if wait := d.unexplained(key, now.Add(time.Second)); wait != settleDelay-time.Second {
		t.Errorf("a second later: wait %s, want %s", wait, settleDelay-time.Second)
	}
	if wait := d.unexplained(key, now.Add(settleDelay)); wait != 0 {
		t.Errorf("after %s: wait %s, want 0", settleDelay, wait)
	}
	// Taken (the record is cleared): the next unexplained loss waits again, as
	// one seen long after an earlier that never settled.
	if wait := d.unexplained(key, now.Add(time.Hour)); wait != settleDelay {
		t.Errorf("a later loss: wait %s, want %s", wait, settleDelay)
	}
	if wait := d.unexplained(key, now.Add(90*time.Minute)); wait != settleDelay {
		t.Errorf("a later loss: wait %s, want %s", wait, settleDelay)
	}
	d.forget(key)
	if wait := d.unexplained(key, now.Add(2*time.Hour)); wait != settleDelay {
		t.Errorf("after forget: wait %s, want %s", wait, settleDelay)
	}
}

// A gang whose PodGroup is gone is never reconciled again: its records are dropped
// by the next sweep, not kept for ever.
func TestDepartedSweepsGangsNoLongerReconciled(t *testing.T) {
	now := time.Unix(1000, 0)
	var d departed
	d.note(departedMember("a", "n1", corev1.PodRunning), now)
	other := departedMember("b", "n2", corev1.PodRunning)
	other.Labels[v1alpha1.LabelPodGroup] = "other"
	d.note(other, now.Add(departedTTL))
	if _, kept := d.pods[gang.Key{Namespace: "ml", Name: "train"}]; kept {
		t.Error("the expired records of gang train are still kept after a sweep")
	}
	if len(d.pods[gang.Key{Namespace: "ml", Name: "other"}]) != 1 {
		t.Error("the new record of gang other is missing")
	}
}
