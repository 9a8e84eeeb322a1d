package e2e_test

import "testing"

// The dashboard check fails, naming it, when a query reads a metric no binary
// exports: here a histogram's _bucket series is exported, a misspelt name is not.
func TestDashboardCheckNamesUnexportedMetrics(t *testing.T) {
	exported := exportedNames("# HELP kubenexus_gang_wait_seconds Gang wait.\n# TYPE kubenexus_gang_wait_seconds histogram\n" +
		"kubenexus_gang_wait_seconds_bucket{le=\"1\"} 0\n# TYPE kubenexus_gangs_waiting gauge\nkubenexus_gangs_waiting{reason=\"x\"} 1\n")
	if err := unexported("d.json", []string{"kubenexus_gang_wait_seconds_bucket", "kubenexus_gangs_waiting"}, exported); err != nil {
		t.Errorf("exported names reported: %v", err)
	}
	err := unexported("d.json", []string{"kubenexus_gangs_waiting", "kubenexus_gang_waits_total"}, exported)
	if want := "the dashboard (d.json) reads metrics neither kubenexus-manager nor kubenexus-scheduler exports: kubenexus_gang_waits_total"; err == nil || err.Error() != want {
		t.Errorf("a name no binary exports: %v, want %q", err, want)
	}
}
