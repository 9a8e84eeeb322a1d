package podgroup

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

var waitingDesc = prometheus.NewDesc("kubenexus_gangs_waiting",
	"PodGroups whose gang is not placed, by the reason of their Scheduled condition (WaitingForMembers, InsufficientCapacity, TopologyUnsatisfiable, Timeout, MembersFailed, Scheduling).",
	[]string{"reason"}, nil)

// waitingCollector counts the waiting gangs from the manager's cache when /metrics
// is scraped: O(PodGroups) per scrape, no API call.
type waitingCollector struct{ reader client.Reader }

var registerWaiting sync.Once

// serveWaiting registers the collector and the repair metrics with the manager's
// metrics registry (once).
func serveWaiting(reader client.Reader) {
	registerWaiting.Do(func() {
		ctrlmetrics.Registry.MustRegister(&waitingCollector{reader: reader}, repairsTotal, repairSeconds)
		// Every outcome is served from the start, at zero, so that dashboards and
		// alerts see the series before the first repair.
		for _, o := range []string{v1alpha1.RepairOutcomeRepaired, v1alpha1.RepairOutcomeRestarted, v1alpha1.RepairOutcomeGaveUp} {
			repairsTotal.WithLabelValues(metricOutcome(o))
			repairSeconds.WithLabelValues(metricOutcome(o))
		}
	})
}

var (
	repairsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kubenexus_gang_repairs_total",
		Help: "Repairs of running gangs that lost members, by outcome: repaired (whole again in place), restarted (whole again after every member was deleted), gave_up.",
	}, []string{"outcome"})
	repairSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "kubenexus_gang_repair_duration_seconds",
		Help:    "Time from a running gang's loss of members to its being whole again (repaired, restarted) or given up, by outcome.",
		Buckets: []float64{1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600},
	}, []string{"outcome"})
)

// metricOutcome is a repair outcome as the metrics' label names it.
func metricOutcome(outcome string) string {
	switch outcome {
	case v1alpha1.RepairOutcomeRepaired:
		return "repaired"
	case v1alpha1.RepairOutcomeRestarted:
		return "restarted"
	default:
		return "gave_up"
	}
}

func (c *waitingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- waitingDesc }

func (c *waitingCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var list v1alpha1.PodGroupList
	if err := c.reader.List(ctx, &list); err != nil {
		ch <- prometheus.NewInvalidMetric(waitingDesc, err)
		return
	}
	counts := map[string]int{}
	for i := range list.Items {
		pg := &list.Items[i]
		if pg.Status.Phase == v1alpha1.PodGroupSucceeded || pg.DeletionTimestamp != nil {
			continue
		}
		if cond := apimeta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PodGroupConditionScheduled); cond != nil && cond.Status == metav1.ConditionFalse {
			counts[cond.Reason]++
		}
	}
	for reason, n := range counts {
		ch <- prometheus.MustNewConstMetric(waitingDesc, prometheus.GaugeValue, float64(n), reason)
	}
}
