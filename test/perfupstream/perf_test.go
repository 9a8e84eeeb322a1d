//go:build perfupstream

package perfupstream

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	perf "k8s.io/kubernetes/test/integration/scheduler_perf"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	_ "k8s.io/component-base/logs/json/register"

	"github.com/kube-nexus/kubenexus/scheduler/plugins"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/names"
	"github.com/kube-nexus/kubenexus/test/util/testenv"
)

var (
	upstreamDir = flag.String("upstream-dir", "", "test/integration/scheduler_perf of the pinned k8s.io/kubernetes module (make perf-upstream sets it)")
	workloads   = flag.String("workloads", "", "comma-separated topic/testcase/workload names (default: DefaultSelections)")
	armsFlag    = flag.String("arms", ArmStock+","+ArmKubeNexus, "arms, in the order each workload runs them")
	outDir      = flag.String("out", ".perf-upstream", "where each run's results, the table (table.md) and per-run logs go")
)

func TestMain(m *testing.M) {
	// KubeNexus's object cache (controller-runtime) logs through klog, as in
	// kubenexus-scheduler.
	ctrllog.SetLogger(klog.NewKlogr())
	if err := perf.InitTests(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// BenchmarkPerfSchedulingUpstream runs each selected workload with stock's profile,
// then KubeNexus's, and writes the comparison to -out/table.md after each workload.
func BenchmarkPerfSchedulingUpstream(b *testing.B) {
	if *upstreamDir == "" {
		b.Fatal("-upstream-dir is required: the scheduler_perf directory of k8s.io/kubernetes in the module cache")
	}
	sels := DefaultSelections
	if *workloads != "" {
		var err error
		if sels, err = ParseSelections(*workloads); err != nil {
			b.Fatal(err)
		}
	}
	arms := strings.Split(*armsFlag, ",")
	out, err := filepath.Abs(*outDir)
	if err != nil {
		b.Fatal(err)
	}
	// Per-plugin latencies of KubeNexus's plugins are collected beside the in-tree ones.
	perf.PluginNames = append(perf.PluginNames, names.Implemented...)
	kubenexus := &registry{crds: testenv.CRDPath()} // resolved before the runs change directory

	var rows []Row
	failed := map[string]string{}
	for _, sel := range sels {
		items := map[string][]DataItem{}
		var threshold *Threshold
		for _, arm := range arms {
			dir := filepath.Join(out, "runs", strings.ReplaceAll(sel.Name(), "/", "_"), arm)
			if err := os.RemoveAll(dir); err != nil {
				b.Fatal(err)
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				b.Fatal(err)
			}
			prep, err := Prepare(*upstreamDir, sel, arm, dir)
			if err != nil {
				b.Fatal(err)
			}
			threshold = prep.Threshold
			ok := b.Run(arm+"/"+sel.Name(), func(b *testing.B) {
				b.Chdir(filepath.Join(*upstreamDir, sel.Topic)) // upstream's templates are relative to it
				b.Setenv("ARTIFACTS", dir)                      // per-run log, kept only when the run fails
				if err := flag.Set("data-items-dir", dir); err != nil {
					b.Fatal(err)
				}
				if strings.HasPrefix(sel.Topic, "dra") {
					// The allocator upstream's DRA benchmark uses.
					structured.EnableAllocators("incubating")
					defer structured.EnableAllocators()
				}
				var reg frameworkruntime.Registry
				if arm == ArmKubeNexus {
					reg = kubenexus.registry()
				}
				perf.RunBenchmarkPerfScheduling(b, prep.ConfigFile, filepath.Base(sel.Topic), reg)
			})
			if !ok {
				failed[sel.Name()+" ("+arm+")"] = "failed; its log is under " + dir
			}
			if items[arm], err = ReadDataItems(dir); err != nil {
				b.Fatal(err)
			}
		}
		rows = append(rows, Rows(sel.Name(), items[ArmStock], items[ArmKubeNexus], threshold)...)
		if err := writeReport(filepath.Join(out, "table.md"), rows, failed); err != nil {
			b.Fatal(err)
		}
	}
}

func writeReport(path string, rows []Row, failed map[string]string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	WriteTable(f, rows)
	if len(failed) > 0 {
		fmt.Fprintln(f, "\nRuns that failed:")
		WriteFailures(f, failed)
	}
	return f.Close()
}

// registry hands scheduler_perf KubeNexus's plugins. scheduler_perf starts a new API
// server and scheduler per workload with one out-of-tree registry for all of them,
// while KubeNexus's plugins share one object cache per scheduler: the first plugin
// built for a new API server installs KubeNexus's CRDs there (what the Helm chart
// does) and builds a fresh set of factories (plugins.RegistryOptions, the
// scheduler's own) living as long as that scheduler.
type registry struct {
	crds  string
	mu    sync.Mutex
	host  string
	inner frameworkruntime.Registry
}

func (r *registry) registry() frameworkruntime.Registry {
	out := frameworkruntime.Registry{}
	for _, name := range names.Implemented {
		out[name] = func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
			inner, err := r.forScheduler(ctx, h)
			if err != nil {
				return nil, err
			}
			return inner[name](ctx, obj, h)
		}
	}
	return out
}

func (r *registry) forScheduler(ctx context.Context, h fwk.Handle) (frameworkruntime.Registry, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cfg := h.KubeConfig()
	if cfg.Host == r.host && r.inner != nil {
		return r.inner, nil
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{r.crds}, ErrorIfPathMissing: true}); err != nil {
		return nil, fmt.Errorf("installing KubeNexus's CRDs: %w", err)
	}
	inner := frameworkruntime.Registry{}
	for _, opt := range plugins.RegistryOptions(ctx) {
		if err := opt(inner); err != nil {
			return nil, err
		}
	}
	r.host, r.inner = cfg.Host, inner
	return inner, nil
}
