package perfupstream

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	configv1 "k8s.io/kube-scheduler/config/v1"
	"sigs.k8s.io/yaml"
)

// upstream is scheduler_perf in the module cache (the pinned k8s.io/kubernetes).
func upstream(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes").Output()
	if err != nil {
		t.Fatalf("locating k8s.io/kubernetes: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "test", "integration", "scheduler_perf")
}

// Every default workload exists in the pinned version: a renamed upstream workload
// fails here, not after an hour of make perf-upstream.
func TestDefaultSelectionsExistUpstream(t *testing.T) {
	up := upstream(t)
	for _, sel := range DefaultSelections {
		for _, arm := range []string{ArmStock, ArmKubeNexus} {
			if _, err := Prepare(up, sel, arm, t.TempDir()); err != nil {
				t.Errorf("%s (%s): %v", sel.Name(), arm, err)
			}
		}
	}
}

func TestPrepareKubeNexusArm(t *testing.T) {
	dir := t.TempDir()
	sel := Selection{Topic: "batching", TestCase: "ResourceSaturation", Workload: "20000Nodes_20000Pods_100BatchSize",
		Params: map[string]int{"initNodes": 500}}
	p, err := Prepare(upstream(t), sel, ArmKubeNexus, dir)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p.ConfigFile)
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Name                string
		SchedulerConfigPath string
		Workloads           []struct {
			Name         string
			Labels       []string
			Threshold    any
			FeatureGates map[string]bool
			Params       map[string]any
		}
	}
	if err := yaml.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) != 1 || len(cases[0].Workloads) != 1 {
		t.Fatalf("want one test case with one workload, got %s", data)
	}
	w := cases[0].Workloads[0]
	if w.Name != sel.Workload || len(w.Labels) != 1 || w.Labels[0] != "performance" || w.Threshold != nil {
		t.Errorf("workload not rewritten for one run without threshold: %+v", w)
	}
	if w.Params["initNodes"] != float64(500) || w.Params["measurePods"] != float64(20000) {
		t.Errorf("params: want initNodes replaced and measurePods kept, got %v", w.Params)
	}
	if w.FeatureGates["NominatedNodeNameForExpectation"] != false || w.FeatureGates["OpportunisticBatching"] != true {
		t.Errorf("feature gates: want kubenexus-scheduler's default and the workload's own, got %v", w.FeatureGates)
	}
	if cases[0].SchedulerConfigPath != filepath.Join(dir, "scheduler-config.yaml") {
		t.Fatalf("scheduler config: %q", cases[0].SchedulerConfigPath)
	}
	cfgData, err := os.ReadFile(cases[0].SchedulerConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	var cfg configv1.KubeSchedulerConfiguration
	if err := yaml.Unmarshal(cfgData, &cfg); err != nil {
		t.Fatal(err)
	}
	prof := cfg.Profiles[0]
	if *prof.SchedulerName != "default-scheduler" || prof.Plugins.QueueSort.Enabled[0].Name != "Coscheduling" {
		t.Errorf("profile: want default-scheduler sorted by Coscheduling, got %s", cfgData)
	}
	// Upstream's PodTopologySpread arguments (no default constraints) win over ours.
	if !bytes.Contains(cfgData, []byte("defaultConstraints: []")) {
		t.Errorf("upstream's PodTopologySpread args lost:\n%s", cfgData)
	}
	if !bytes.Contains(cfgData, []byte("name: GangPreemption")) || !bytes.Contains(cfgData, []byte("name: DefaultPreemption")) {
		t.Errorf("GangPreemption in place of DefaultPreemption missing:\n%s", cfgData)
	}
}

func TestPrepareStockArmKeepsUpstreamConfig(t *testing.T) {
	up := upstream(t)
	p, err := Prepare(up, Selection{Topic: "misc", TestCase: "SchedulingBasic", Workload: "5000Nodes_10000Pods"}, ArmStock, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(p.ConfigFile)
	if bytes.Contains(data, []byte("schedulerConfigPath")) || bytes.Contains(data, []byte("NominatedNodeNameForExpectation")) {
		t.Errorf("stock arm must run upstream's defaults:\n%s", data)
	}
	if p.Threshold == nil || p.Threshold.Value != 680 || p.Threshold.Metric != "SchedulingThroughput" || p.Threshold.Bucket != "Average" {
		t.Errorf("threshold: want SchedulingThroughput Average ≥ 680, got %+v", p.Threshold)
	}
	// A per-topic threshold is read for the directory's topic.
	p, err = Prepare(up, Selection{Topic: "dra", TestCase: "SchedulingWithResourceClaimTemplate", Workload: "5000pods_500nodes"}, ArmStock, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if p.Threshold == nil || p.Threshold.Value != 56 {
		t.Errorf("dra threshold: want 56, got %+v", p.Threshold)
	}
}

func TestParseSelections(t *testing.T) {
	got, err := ParseSelections("batching/HostPortConflict/20000Nodes_20000Pods_100BatchSize, podgroup/gangscheduling/GangScheduling/10Nodes_3Gangs")
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Params["initNodes"] != 5000 {
		t.Errorf("a default selection keeps its size: %+v", got[0])
	}
	if got[1].Topic != "podgroup/gangscheduling" || got[1].TestCase != "GangScheduling" || got[1].Workload != "10Nodes_3Gangs" {
		t.Errorf("nested topic: %+v", got[1])
	}
	if _, err := ParseSelections("misc/SchedulingBasic"); err == nil || !strings.Contains(err.Error(), "topic/testcase/workload") {
		t.Errorf("want an error naming the form, got %v", err)
	}
}

func TestRowsAndTable(t *testing.T) {
	thr := &Threshold{Value: 680, Metric: "SchedulingThroughput", Bucket: "Average"}
	stock := []DataItem{{Data: map[string]float64{"Average": 700, "Perc50": 650}, Unit: "pods/s", Labels: map[string]string{"Metric": "SchedulingThroughput"}}}
	kn := []DataItem{{Data: map[string]float64{"Average": 350, "Perc50": 340}, Unit: "pods/s", Labels: map[string]string{"Metric": "SchedulingThroughput"}},
		{Data: map[string]float64{"Perc50": 3}, Unit: "ms", Labels: map[string]string{"Metric": "scheduler_scheduling_attempt_duration_seconds", "result": "unschedulable"}}}
	rows := Rows("misc/x/y", stock, kn, thr)
	if len(rows) != 2 {
		t.Fatalf("want Average and Perc50 rows (unschedulable attempts are not shown), got %+v", rows)
	}
	var b strings.Builder
	WriteTable(&b, rows)
	if !strings.Contains(b.String(), "| misc/x/y | SchedulingThroughput (pods/s) | Average | 700 | 350 | 0.50 | ≥ 680 (stock meets, kubenexus under) |") {
		t.Errorf("table:\n%s", b.String())
	}
}
