// Package chaos_test fails nodes under running gangs on a local control plane
// (etcd, kube-apiserver, kube-controller-manager with its node lifecycle and taint
// managers, kwok nodes, KubeNexus from its chart) and checks what a user would see:
// the gang repaired in its rack with the room it lost held against pending pods,
// or restarted whole. `make test-chaos` runs it; the sizes come from the
// environment (CHAOS_MEMBERS, CHAOS_TRIALS, CHAOS_COMPETITORS).
package chaos_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/kube-nexus/kubenexus/test/e2e/demo"
	"github.com/kube-nexus/kubenexus/test/util/testenv"
)

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

func TestGangChaos(t *testing.T) {
	root := testenv.RepoRoot()
	bin := filepath.Join(root, "bin")
	testenv.RequireBinaries(t, bin, "`make test-chaos`",
		"kubenexus-manager", "kubenexus-scheduler", "k8s/etcd", "k8s/kube-apiserver", "k8s/kube-controller-manager", "k8s/kwok", "k8s/kwok-stages", "k8s/helm")
	members := envInt(t, "CHAOS_MEMBERS", 64)
	trials := envInt(t, "CHAOS_TRIALS", 20)
	competitors := envInt(t, "CHAOS_COMPETITORS", 200)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	dir := testenv.LogDir(t)
	c, err := demo.Up(ctx, demo.Options{Root: root, Bin: bin, Dir: dir, Log: testenv.LogWriter{T: t}, NodeLifecycle: true, WithoutFrameworks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Down()
	defer func() {
		if t.Failed() {
			t.Log(demo.LogTails(dir, 4000, "kubenexus-manager", "kubenexus-scheduler", "kube-controller-manager", "kwok"))
		}
	}()
	f := &fleet{t: t, c: c, ctx: ctx}
	t.Run("node lost under a running gang, pending pods competing", func(t *testing.T) {
		f.t = t
		nodeLostTrials(f, members, trials, competitors)
	})
	t.Run("gangs losing nodes at once are all whole again", func(t *testing.T) {
		f.t = t
		simultaneousLosses(f)
	})
	t.Run("no room in the rack: the gang is restarted whole in another", func(t *testing.T) {
		f.t = t
		restartElsewhere(f)
	})
	t.Run("a member's GPU tainted NoExecute: replaced on a healthy GPU", func(t *testing.T) {
		f.t = t
		deviceTainted(f)
	})
}

// percentile is the p-th percentile (0–100) of ds, nearest rank.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(float64(len(s))*p/100+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func summary(ds []time.Duration) string {
	return fmt.Sprintf("p50 %s, p95 %s, max %s (n=%d)", percentile(ds, 50).Round(100*time.Millisecond),
		percentile(ds, 95).Round(100*time.Millisecond), percentile(ds, 100).Round(100*time.Millisecond), len(ds))
}
