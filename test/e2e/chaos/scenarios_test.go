package chaos_test

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// nodeLostTrials: a gang of `members` 8-GPU members required in one rack fills
// rack-a; rack-b is full; `competitors` pods of one GPU wait for room. Each trial
// makes the node of one member report NotReady: kube-controller-manager taints
// it and evicts the member, the ReplicaSet creates a replacement, the manager
// holds the member's room in rack-a. The node comes back: its room is the only
// free room in the cluster, and the replacement — not one of the pending pods —
// gets it. Reported: from the taint to the replacement bound, and from the node's
// return to the replacement bound.
func nodeLostTrials(f *fleet, members, trials, competitors int) {
	t := f.t
	const ns, other = "chaos-train", "chaos-pending"
	f.namespace(ns)
	f.namespace(other)
	rackA := f.nodes("rack-a", members)
	rackB := f.nodes("rack-b", 2)
	f.gang(ns, "train", int32(members), 600)
	f.running(ns, "train", members)
	for p, n := range f.live(ns, "train") {
		if !slices.Contains(rackA, n) {
			t.Fatalf("member %s on %s, outside rack-a", p, n)
		}
	}
	for i, n := range rackB {
		f.pod(other, fmt.Sprintf("filler-%d", i), 8, n)
	}
	f.poll(time.Minute, func() error {
		if n := f.boundIn(other, sets.New(rackB...)); n != len(rackB) {
			return fmt.Errorf("%d/%d fillers bound", n, len(rackB))
		}
		return nil
	})
	for i := range competitors {
		f.pod(other, fmt.Sprintf("small-%03d", i), 1, "")
	}
	f.poll(time.Minute, func() error {
		p := &corev1.Pod{}
		if err := f.c.Client.Get(f.ctx, client.ObjectKey{Namespace: other, Name: fmt.Sprintf("small-%03d", competitors-1)}, p); err != nil {
			return err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				return nil
			}
		}
		return fmt.Errorf("the last pending pod was not tried yet")
	})

	var fromTaint, fromReturn []time.Duration
	taken := 0
	for k := range trials {
		before := f.live(ns, "train")
		names := make([]string, 0, len(before))
		for p := range before {
			names = append(names, p)
		}
		sort.Strings(names)
		victim := names[(k*7)%len(names)]
		node := before[victim]
		if err := f.c.SetNodeReady(f.ctx, node, false); err != nil {
			t.Fatalf("trial %d: %v", k, err)
		}
		tainted := time.Now()
		f.poll(4*time.Minute, func() error {
			if _, err := f.get(ns, victim); !apierrors.IsNotFound(err) {
				return fmt.Errorf("trial %d: member %s on %s not evicted yet", k, victim, node)
			}
			if c := f.repairing(ns, "train"); c == nil || c.Status != metav1.ConditionTrue {
				return fmt.Errorf("trial %d: PodGroup not Repairing", k)
			}
			return nil
		})
		if c := f.repairing(ns, "train"); c.Reason != v1alpha1.RepairCauseNodeLost {
			t.Errorf("trial %d: Repairing reason %q, want %s: %s", k, c.Reason, v1alpha1.RepairCauseNodeLost, c.Message)
		}
		f.poll(time.Minute, func() error {
			_, err := f.reservation(ns, "train-repair")
			return err
		})
		if err := f.c.SetNodeReady(f.ctx, node, true); err != nil {
			t.Fatalf("trial %d: %v", k, err)
		}
		back := time.Now()
		var after map[string]string
		f.poll(4*time.Minute, func() error {
			after = f.live(ns, "train")
			if len(after) < members {
				why := ""
				if time.Since(back) > 3*time.Minute {
					why = "; " + f.why(ns, node)
				}
				return fmt.Errorf("trial %d: %d/%d members live%s", k, len(after), members, why)
			}
			return nil
		})
		bound := time.Now()
		fromTaint = append(fromTaint, bound.Sub(tainted))
		fromReturn = append(fromReturn, bound.Sub(back))
		for p, n := range after {
			if _, old := before[p]; !old && !slices.Contains(rackA, n) {
				t.Errorf("trial %d: replacement %s bound on %s, outside rack-a", k, p, n)
			}
		}
		if n := f.boundIn(other, sets.New(rackA...)); n > 0 {
			taken++
			t.Errorf("trial %d: %d pending pod(s) of no gang bound in rack-a", k, n)
		}
		f.poll(time.Minute, func() error {
			if c := f.repairing(ns, "train"); c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.RepairOutcomeRepaired {
				return fmt.Errorf("trial %d: Repairing %s %s: %s", k, c.Status, c.Reason, c.Message)
			}
			return nil
		})
	}
	t.Logf("node lost under a %d-member gang, %d trials, %d pods pending: node tainted → replacement bound %s; node back → replacement bound %s; trials where a pending pod took the room: %d",
		members, trials, competitors, summary(fromTaint), summary(fromReturn), taken)
	if p95 := percentile(fromTaint, 95); p95 > 30*time.Second {
		t.Errorf("p95 from the taint to the replacement bound is %s, want ≤ 30 s", p95)
	}
	// The competitors go: the next scenarios' spare nodes are not for them.
	if err := f.c.Client.DeleteAllOf(f.ctx, &corev1.Pod{}, client.InNamespace(other), client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
}

// simultaneousLosses: eight gangs of four, each alone in a rack of five nodes;
// one node of every gang fails at once — four report NotReady, four are deleted
// (the pod garbage collector removes their pods). Every gang is whole again in
// its own rack (the spare node) within its bound, none left partly running.
func simultaneousLosses(f *fleet) {
	t := f.t
	const ns, gangs, size = "chaos-many", 8, 4
	f.namespace(ns)
	for g := range gangs {
		f.nodes(fmt.Sprintf("rack-g%d", g), size+1)
	}
	for g := range gangs {
		f.gang(ns, fmt.Sprintf("g%d", g), size, 120)
	}
	rackOf := map[string]string{}
	victims := map[string]string{}
	for g := range gangs {
		name := fmt.Sprintf("g%d", g)
		f.running(ns, name, size)
		for _, n := range f.live(ns, name) {
			rackOf[name] = f.rackOf(n)
			victims[name] = n
		}
	}
	start := time.Now()
	var wg sync.WaitGroup
	for g := range gangs {
		name, node := fmt.Sprintf("g%d", g), victims[fmt.Sprintf("g%d", g)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			if g%2 == 1 {
				if err := f.c.Client.Delete(f.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}); err != nil {
					t.Errorf("deleting node %s of gang %s: %v", node, name, err)
				}
				return
			}
			if err := f.c.SetNodeReady(f.ctx, node, false); err != nil {
				t.Errorf("node %s of gang %s: %v", node, name, err)
			}
		}()
	}
	wg.Wait()
	whole := map[string]time.Duration{}
	f.poll(4*time.Minute, func() error {
		for g := range gangs {
			name := fmt.Sprintf("g%d", g)
			if _, ok := whole[name]; ok {
				continue
			}
			live := f.live(ns, name)
			onFailed := false
			for _, n := range live {
				onFailed = onFailed || n == victims[name]
			}
			if len(live) < size || onFailed {
				continue // the member on the failed node not gone yet, or not replaced
			}
			for p, n := range live {
				if f.rackOf(n) != rackOf[name] {
					t.Errorf("gang %s: member %s on %s, outside rack %s", name, p, n, rackOf[name])
				}
			}
			whole[name] = time.Since(start)
		}
		if len(whole) < gangs {
			return fmt.Errorf("%d/%d gangs whole again", len(whole), gangs)
		}
		return nil
	})
	var took []time.Duration
	for g := range gangs {
		name := fmt.Sprintf("g%d", g)
		took = append(took, whole[name])
		f.poll(time.Minute, func() error {
			// No condition: the replacement bound before the manager saw the gang short.
			if c := f.repairing(ns, name); c != nil && (c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.RepairOutcomeRepaired) {
				return fmt.Errorf("gang %s: Repairing %v", name, c)
			}
			return nil
		})
	}
	t.Logf("%d gangs losing a node each at once (half NotReady, half deleted): whole again after %s", gangs, summary(took))
}

// restartElsewhere: a gang of three fills a rack of three; one of its nodes stays
// NotReady; no room is left in the rack. Past its 10 s bound the manager deletes
// every member, the ReplicaSet creates a new generation, and it is placed whole in
// the other rack.
func restartElsewhere(f *fleet) {
	t := f.t
	const ns = "chaos-restart"
	f.namespace(ns)
	f.nodes("rack-r1", 3)
	f.nodes("rack-r2", 3)
	f.gang(ns, "train", 3, 10)
	f.running(ns, "train", 3)
	var node string
	for _, n := range f.live(ns, "train") {
		node = n
	}
	rack := f.rackOf(node)
	if err := f.c.SetNodeReady(f.ctx, node, false); err != nil {
		t.Fatal(err)
	}
	tainted := time.Now()
	f.poll(2*time.Minute, func() error {
		live := f.live(ns, "train")
		if len(live) < 3 {
			return fmt.Errorf("%d/3 live", len(live))
		}
		for p, n := range live {
			if f.rackOf(n) == rack {
				return fmt.Errorf("member %s still in %s", p, rack)
			}
		}
		return nil
	})
	took := time.Since(tainted)
	f.poll(time.Minute, func() error {
		if c := f.repairing(ns, "train"); c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.RepairOutcomeRestarted {
			return fmt.Errorf("Repairing %v", c)
		}
		return nil
	})
	t.Logf("no room in rack %s: restarted whole in another rack %s after the node was tainted (bound 10 s)", rack, took.Round(100*time.Millisecond))
	if took > 10*time.Second+60*time.Second {
		t.Errorf("restarted whole %s after the taint, want within 60 s of the 10 s bound", took)
	}
}

func (f *fleet) get(ns, name string) (*corev1.Pod, error) {
	p := &corev1.Pod{}
	return p, f.c.Client.Get(f.ctx, client.ObjectKey{Namespace: ns, Name: name}, p)
}

func (f *fleet) reservation(ns, name string) (*v1alpha1.ResourceReservation, error) {
	rr := &v1alpha1.ResourceReservation{}
	return rr, f.c.Client.Get(f.ctx, client.ObjectKey{Namespace: ns, Name: name}, rr)
}

// boundIn counts the namespace's pods bound on the nodes.
func (f *fleet) boundIn(ns string, nodes sets.Set[string]) int {
	f.t.Helper()
	var pods corev1.PodList
	if err := f.c.Client.List(f.ctx, &pods, client.InNamespace(ns)); err != nil {
		f.t.Fatal(err)
	}
	n := 0
	for _, p := range pods.Items {
		if nodes.Has(p.Spec.NodeName) {
			n++
		}
	}
	return n
}

// why says what a repair that does not end shows: the namespace's pending pods
// with the scheduler's last word on each, and the pods bound on the lost node.
func (f *fleet) why(ns, node string) string {
	var pods corev1.PodList
	if err := f.c.Client.List(f.ctx, &pods); err != nil {
		return err.Error()
	}
	var pending, on []string
	for _, p := range pods.Items {
		switch {
		case p.Namespace == ns && p.Spec.NodeName == "":
			msg := ""
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled {
					msg = c.Reason + ": " + c.Message
				}
			}
			pending = append(pending, fmt.Sprintf("%s (%s)", p.Name, msg))
		case p.Spec.NodeName == node:
			on = append(on, fmt.Sprintf("%s/%s (%s, deleting %v)", p.Namespace, p.Name, p.Status.Phase, p.DeletionTimestamp != nil))
		}
	}
	n := &corev1.Node{}
	_ = f.c.Client.Get(f.ctx, client.ObjectKey{Name: node}, n)
	return fmt.Sprintf("pending %v; on %s (taints %v, unschedulable %v): %v", pending, node, n.Spec.Taints, n.Spec.Unschedulable, on)
}
