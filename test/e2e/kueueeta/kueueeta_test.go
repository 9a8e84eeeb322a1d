package kueueeta_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/kube-nexus/kubenexus/test/e2e/demo"
	"github.com/kube-nexus/kubenexus/test/util/testenv"
)

// TestKueueETA: gangs of the trace's shapes and runtimes are submitted as Kueue
// Workloads to one ClusterQueue with three quarters of the fleet's GPUs as quota,
// beside the real Kueue v0.17 controller and KubeNexus (one cluster: etcd,
// kube-apiserver, kube-controller-manager, kwok). Each Workload's
// kubenexus.io/estimated-start is read when it is submitted and set against when its
// pods start; the report (ETA_KUEUE_OUT, default the test's log directory) gives the
// error by queue depth, with and without Kueue's queues played. Every gang must
// start, and every Workload must get an estimate while it waits for quota.
func TestKueueETA(t *testing.T) {
	root := testenv.RepoRoot()
	bin := filepath.Join(root, "bin")
	testenv.RequireBinaries(t, bin, "`make bench-eta-kueue` (make build; hack/build-tools.sh etcd kube-apiserver kube-controller-manager kwok kwok-stages helm kueue)",
		"kubenexus-manager", "kubenexus-scheduler", "k8s/etcd", "k8s/kube-apiserver", "k8s/kube-controller-manager", "k8s/kwok", "k8s/helm", "k8s/kueue")
	gangs, seed := 120, int64(1)
	if v, err := strconv.Atoi(os.Getenv("ETA_KUEUE_GANGS")); err == nil && v > 0 {
		gangs = v
	}
	if v, err := strconv.ParseInt(os.Getenv("ETA_KUEUE_SEED"), 10, 64); err == nil {
		seed = v
	}
	out := os.Getenv("ETA_KUEUE_OUT")
	if out == "" {
		out = testenv.LogDir(t)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	dir := filepath.Join(testenv.LogDir(t), "cluster")
	pods := os.Getenv("ETA_KUEUE_PODS")
	if pods == "" {
		pods = filepath.Join(root, "..", "shared", "data", "alibaba-gpu-2023", "openb_pod_list_default.csv")
	}
	records, err := demo.RunKueueETA(ctx, demo.Options{Root: root, Bin: bin, Dir: dir, Log: testenv.LogWriter{T: t}}, pods, gangs, seed, out)
	if err != nil {
		t.Log(demo.LogTails(dir, 2000, "kubenexus-manager", "kubenexus-scheduler", "kueue"))
		t.Fatal(err)
	}
	for _, r := range records {
		if e := r.Estimates[0]; !e.OK {
			t.Errorf("%s (queue depth %d) got no estimated start at submission", r.Gang.Name, r.Depth)
		}
	}
}
