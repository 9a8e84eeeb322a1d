package e2e_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kube-nexus/kubenexus/test/e2e/demo"
	"github.com/kube-nexus/kubenexus/test/util/testenv"
)

// checkDashboard: every query of the chart's Grafana dashboard parses with
// Prometheus's PromQL parser (bin/k8s/promql-names), and every metric it reads is one
// the running manager or scheduler exports — after the demo's mix, its Kueue
// scenario and its preemption, so that the labelled series exist.
func checkDashboard(t *testing.T, c *demo.Cluster) {
	t.Helper()
	root := testenv.RepoRoot()
	dashboard := filepath.Join(root, "charts", "kubenexus", "dashboards", "kubenexus.json")
	out, err := exec.Command(filepath.Join(root, "bin", "k8s", "promql-names"), dashboard).Output()
	if err != nil {
		msg := err.Error()
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("the dashboard's queries do not parse: %s", msg)
	}
	used := strings.Fields(string(out))
	if err := poll(time.Minute, func() error {
		exported := map[string]bool{}
		for _, url := range []string{c.ManagerMetricsURL, c.SchedulerMetricsURL} {
			code, body, err := demo.Get(url, "")
			if err != nil || code != 200 {
				return fmt.Errorf("%s: %d (%v)", url, code, err)
			}
			for name := range exportedNames(body) {
				exported[name] = true
			}
		}
		return unexported(dashboard, used, exported)
	}); err != nil {
		t.Error(err)
	}
}

// unexported fails naming the metrics the dashboard reads that no binary exports.
func unexported(dashboard string, used []string, exported map[string]bool) error {
	var missing []string
	for _, name := range used {
		if !exported[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	sort.Strings(missing)
	return fmt.Errorf("the dashboard (%s) reads metrics neither kubenexus-manager nor kubenexus-scheduler exports: %s", dashboard, strings.Join(missing, ", "))
}

// exportedNames are the series names of a Prometheus text exposition: each family's
// name, and a histogram's or summary's _bucket, _sum and _count.
func exportedNames(body string) map[string]bool {
	out := map[string]bool{}
	for _, line := range strings.Split(body, "\n") {
		f := strings.Fields(line)
		if len(f) != 4 || f[0] != "#" || f[1] != "TYPE" {
			continue
		}
		out[f[2]] = true
		switch f[3] {
		case "histogram":
			out[f[2]+"_bucket"], out[f[2]+"_sum"], out[f[2]+"_count"] = true, true, true
		case "summary":
			out[f[2]+"_sum"], out[f[2]+"_count"] = true, true
		}
	}
	return out
}
