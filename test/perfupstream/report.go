package perfupstream

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// DataItem is one metric of one run as scheduler_perf writes it (perf-dash's format).
type DataItem struct {
	Data   map[string]float64 `json:"data"`
	Unit   string             `json:"unit"`
	Labels map[string]string  `json:"labels"`
}

// ReadDataItems reads every result file scheduler_perf wrote into dir.
func ReadDataItems(dir string) ([]DataItem, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*_benchmark_*.json"))
	if err != nil {
		return nil, err
	}
	var items []DataItem
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var doc struct {
			DataItems []DataItem `json:"dataItems"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		items = append(items, doc.DataItems...)
	}
	return items, nil
}

// Row is one line of the table: one statistic of one metric of one workload.
type Row struct {
	Workload, Metric, Stat, Unit string
	Stock, KubeNexus             float64
	HasStock, HasKubeNexus       bool
	// Threshold is upstream's pass mark when this row is the metric it is set on.
	Threshold *Threshold
	// Failed: an arm did not finish the workload (its error instead of figures).
	Failed map[string]string
}

// reported are the metrics and statistics the table shows (the JSON files hold
// every one upstream collects, per plugin and extension point too).
var reported = []struct {
	metric string
	labels map[string]string
	stats  []string
}{
	{"SchedulingThroughput", nil, []string{"Average", "Perc50", "Perc90", "Perc99"}},
	{"scheduler_scheduling_attempt_duration_seconds", map[string]string{"result": "scheduled"}, []string{"Perc50", "Perc90", "Perc99"}},
	{"scheduler_podgroup_scheduling_attempt_duration_seconds", nil, []string{"Average", "Perc50", "Perc90", "Perc99"}},
	{"scheduler_pod_scheduling_sli_duration_seconds", nil, []string{"Perc50", "Perc99"}},
}

// Rows builds the table of one workload from each arm's items.
func Rows(workload string, stock, kubenexus []DataItem, t *Threshold) []Row {
	var rows []Row
	for _, r := range reported {
		for _, stat := range r.stats {
			row := Row{Workload: workload, Metric: r.metric, Stat: stat}
			for _, it := range stock {
				if matches(it, r.metric, r.labels) {
					row.Stock, row.HasStock = it.Data[stat], hasKey(it.Data, stat)
					row.Unit = it.Unit
				}
			}
			for _, it := range kubenexus {
				if matches(it, r.metric, r.labels) {
					row.KubeNexus, row.HasKubeNexus = it.Data[stat], hasKey(it.Data, stat)
					row.Unit = it.Unit
				}
			}
			if !row.HasStock && !row.HasKubeNexus {
				continue
			}
			if t != nil && t.Metric == r.metric && t.Bucket == stat && labelsMatch(t.Labels, r.labels) {
				row.Threshold = t
			}
			rows = append(rows, row)
		}
	}
	return rows
}

func hasKey(m map[string]float64, k string) bool { _, ok := m[k]; return ok }

func matches(it DataItem, metric string, labels map[string]string) bool {
	if it.Labels["Metric"] != metric {
		return false
	}
	for k, v := range labels {
		if it.Labels[k] != v {
			return false
		}
	}
	return true
}

func labelsMatch(a, b map[string]string) bool {
	return maps.Equal(a, b) || (len(a) == 0 && len(b) == 0)
}

// WriteTable prints rows as a Markdown table: both arms, their ratio and the
// threshold, with a verdict where a threshold applies.
func WriteTable(w io.Writer, rows []Row) {
	fmt.Fprintln(w, "| workload | metric | stat | stock | kubenexus | kubenexus/stock | upstream threshold |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, r := range rows {
		ratio := "—"
		if r.HasStock && r.HasKubeNexus && r.Stock != 0 {
			ratio = fmt.Sprintf("%.2f", r.KubeNexus/r.Stock)
		}
		thr := ""
		if r.Threshold != nil {
			op := "≥"
			if r.Threshold.Lower {
				op = "≤"
			}
			thr = fmt.Sprintf("%s %g (stock %s, kubenexus %s)", op, r.Threshold.Value,
				verdict(r.Threshold, r.Stock, r.HasStock), verdict(r.Threshold, r.KubeNexus, r.HasKubeNexus))
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", r.Workload, shortMetric(r.Metric, r.Unit), r.Stat,
			value(r.Stock, r.HasStock), value(r.KubeNexus, r.HasKubeNexus), ratio, thr)
	}
}

// WriteFailures lists the runs that did not produce figures.
func WriteFailures(w io.Writer, failed map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(failed)) {
		fmt.Fprintf(w, "- %s: %s\n", k, failed[k])
	}
}

func verdict(t *Threshold, v float64, ok bool) string {
	if !ok {
		return "no figure"
	}
	if (t.Lower && v <= t.Value) || (!t.Lower && v >= t.Value) {
		return "meets"
	}
	return "under"
}

func value(v float64, ok bool) string {
	if !ok {
		return "—"
	}
	return fmt.Sprintf("%.4g", v)
}

func shortMetric(m, unit string) string {
	m = strings.TrimPrefix(m, "scheduler_")
	m = strings.TrimSuffix(m, "_seconds")
	if unit != "" {
		m += " (" + unit + ")"
	}
	return m
}
