package demo

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// LWSRepairReport is what the LeaderWorkerSet repair scenario saw: the groups
// before a worker of group 0 was evicted, and after LWS recreated the group.
type LWSRepairReport struct {
	Before, After []LWSGroup
	// Evicted is the worker evicted; Took from its eviction to group 0 bound whole
	// again (0: it was not within the wait).
	Evicted string
	Took    time.Duration
	// Repairing is group 0's PodGroup's Repairing condition at the end (nil: none).
	Repairing *metav1.Condition
	// Events are the namespace's events from the eviction on, oldest first ("time
	// kind/name reason: message"): who deleted, evicted or placed which pod when a
	// check fails.
	Events []string
}

// RunLWSRepairScenario follows RunLWSScenario (two groups running, each alone in a
// rack of three nodes, and a third group's leader pending: no rack has three free
// nodes): it evicts a worker of group 0 through the Eviction API. LWS's default
// restart policy (RecreateGroupOnPodRestart) deletes the group's leader and with it
// the group; the leader's StatefulSet creates it again and LWS its workers. The
// scenario waits until group 0 is bound whole again (or 2 minutes pass), then
// reads every group once more after a few seconds.
func (c *Cluster) RunLWSRepairScenario(ctx context.Context) (*LWSRepairReport, error) {
	groups, err := c.lwsGroups(ctx)
	if err != nil {
		return nil, err
	}
	r := &LWSRepairReport{Before: groups}
	if len(groups) < 1 || groups[0].Bound != lwsSize {
		return r, fmt.Errorf("group 0 is not running whole: %+v", groups)
	}
	var pods corev1.PodList
	if err := c.Client.List(ctx, &pods, client.InNamespace(lwsNamespace), client.MatchingLabels{
		"leaderworkerset.sigs.k8s.io/name": lwsName, "leaderworkerset.sigs.k8s.io/group-index": "0", "leaderworkerset.sigs.k8s.io/worker-index": "1"}); err != nil {
		return r, err
	}
	if len(pods.Items) != 1 {
		return r, fmt.Errorf("group 0 has %d pods of worker index 1", len(pods.Items))
	}
	worker := &pods.Items[0]
	r.Evicted = worker.Name
	c.logf("LeaderWorkerSet: evicting worker %s of group 0 (on %s); LWS recreates the group", worker.Name, worker.Spec.NodeName)
	evicted := time.Now()
	if err := c.Client.SubResource("eviction").Create(ctx, worker, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: worker.Name, Namespace: worker.Namespace}}); err != nil {
		return r, fmt.Errorf("evicting %s: %w", worker.Name, err)
	}
	err = waitFor(ctx, 2*time.Minute, func() error {
		groups, err := c.lwsGroups(ctx)
		r.After = groups
		if err != nil {
			return err
		}
		if len(groups) < 1 || groups[0].Leader == r.Before[0].Leader || groups[0].Bound != lwsSize || groups[0].Pods != lwsSize {
			return fmt.Errorf("group 0 not recreated and bound whole yet: %+v", groups)
		}
		return nil
	})
	if err == nil {
		r.Took = time.Since(evicted)
		time.Sleep(5 * time.Second) // nothing else may bind in the meantime
		if groups, gerr := c.lwsGroups(ctx); gerr == nil {
			r.After = groups
		}
	}
	var evs corev1.EventList
	if lerr := c.Client.List(ctx, &evs, client.InNamespace(lwsNamespace)); lerr == nil {
		sort.SliceStable(evs.Items, func(i, j int) bool { return eventTime(&evs.Items[i]).Before(eventTime(&evs.Items[j])) })
		for i := range evs.Items {
			e := &evs.Items[i]
			if at := eventTime(e); !at.Before(evicted.Add(-time.Second)) {
				r.Events = append(r.Events, fmt.Sprintf("%s %s/%s %s: %s", at.Format("15:04:05.000"), e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message))
			}
		}
	}
	if len(r.After) > 0 && r.After[0].Gang != "" {
		pg := &v1alpha1.PodGroup{}
		if gerr := c.Client.Get(ctx, client.ObjectKey{Namespace: lwsNamespace, Name: r.After[0].Gang}, pg); gerr == nil {
			r.Repairing = meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PodGroupConditionRepairing)
		}
	}
	return r, err
}

// eventTime is when an event last happened, to the best precision it carries.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	}
	return e.CreationTimestamp.Time
}
