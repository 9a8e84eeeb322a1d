// Command demo is what `make demo` runs: it brings up the local KubeNexus cluster of
// test/e2e/demo, submits the workload mix, writes the placement report to
// <dir>/placement.txt, runs the Kueue scenario once Kueue (built meanwhile) is
// ready, writes the whole report to <dir>/report.txt, and keeps the cluster up until
// it is sent SIGTERM (`make demo-down`).
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/kube-nexus/kubenexus/test/e2e/demo"
)

func main() {
	root := flag.String("root", ".", "repository root")
	dir := flag.String("dir", ".demo", "where the cluster keeps its files")
	flag.Parse()
	if err := run(*root, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		_ = os.WriteFile(filepath.Join(*dir, "failed"), []byte(err.Error()+"\n"), 0o644)
		os.Exit(1)
	}
}

func run(root, dir string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return err
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	start := time.Now()
	// Kueue's controller-manager takes longest to build (about five minutes cold on
	// two cores) and the demo needs it last, for its Kueue scenario: it builds while
	// the cluster comes up and the mix is placed, at a lower CPU priority than the
	// cluster; then kubectl, for your shell.
	kueueBuilt := make(chan error, 1)
	kubectlBuilt := make(chan error, 1)
	go func() {
		kueueBuilt <- buildTools(ctx, absRoot, "kueue")
		kubectlBuilt <- buildTools(ctx, absRoot, "kubectl")
	}()
	c, err := demo.Up(ctx, demo.Options{Root: absRoot, Bin: filepath.Join(absRoot, "bin"), Dir: absDir, Log: os.Stdout, KueueLater: true})
	if err != nil {
		return err
	}
	defer c.Down()
	if err := c.CreateFleet(ctx); err != nil {
		return err
	}
	if err := c.Submit(ctx); err != nil {
		return err
	}
	settleErr := c.Settle(ctx, 5*time.Minute)
	placements, err := c.Report(ctx)
	if err != nil {
		return err
	}
	var placement bytes.Buffer
	demo.Print(&placement, placements)
	demo.PrintCapacity(&placement, c.Capacity())
	if settleErr != nil {
		fmt.Fprintf(&placement, "\nNOT SETTLED: %v (logs in %s)\n", settleErr, absDir)
	}
	fmt.Fprintln(&placement, "\nWhy it waits, and when it could run (what `kubectl kubenexus` prints; make build puts it in bin/):")
	if err := c.ExplainWaiting(ctx, &placement, placements); err != nil {
		fmt.Fprintf(&placement, "EXPLAIN FAILED: %v\n", err)
	}
	fmt.Fprintln(&placement)
	if _, err := c.RunETAScenario(ctx, &placement); err != nil {
		fmt.Fprintf(&placement, "WHAT-IF SCENARIO INCOMPLETE: %v\n", err)
	}
	// make demo shows the placement now, and the rest once Kueue has run.
	if err := os.WriteFile(filepath.Join(absDir, "placement.txt"), placement.Bytes(), 0o644); err != nil {
		return err
	}

	var rest bytes.Buffer
	switch {
	case settleErr != nil:
		fmt.Fprintln(&rest, "\nKueue scenario skipped: the mix did not settle.")
	default:
		fmt.Println(">> waiting for Kueue's controller-manager to finish building")
		if err := <-kueueBuilt; err != nil {
			fmt.Fprintf(&rest, "\nKUEUE SCENARIO SKIPPED: building Kueue failed: %v (its output is in %s)\n", err, filepath.Join(absDir, "demo.log"))
			break
		}
		kueueReport, kueueErr := startKueueAndRun(ctx, c)
		demo.PrintKueue(&rest, kueueReport)
		if kueueErr != nil {
			fmt.Fprintf(&rest, "\nKUEUE SCENARIO INCOMPLETE: %v (logs in %s)\n", kueueErr, absDir)
		}
	}
	fmt.Fprintln(&rest)
	if _, err := c.RunSharedGPUScenario(ctx, &rest); err != nil {
		fmt.Fprintf(&rest, "SHARED-GPU SCENARIO INCOMPLETE: %v\n", err)
	}
	fmt.Fprintf(&rest, "\nCluster up in %s. Use it with:\n  export KUBECONFIG=%s\nStop it with: make demo-down\n",
		time.Since(start).Round(time.Second), c.Kubeconfig)
	if err := os.WriteFile(filepath.Join(absDir, "kueue.txt"), rest.Bytes(), 0o644); err != nil {
		return err
	}
	// make demo prints its kubectl hints once kubectl is built (it retries a failed
	// build itself, and says so).
	if err := <-kubectlBuilt; err != nil {
		fmt.Printf(">> kubectl did not build (%v); make demo tries once more\n", err)
	}
	// report.txt, the whole report, is written last: make demo waits for it.
	if err := os.WriteFile(filepath.Join(absDir, "report.txt"), append(placement.Bytes(), rest.Bytes()...), 0o644); err != nil {
		return err
	}
	<-ctx.Done()
	fmt.Println(">> stopping the demo cluster")
	return nil
}

func startKueueAndRun(ctx context.Context, c *demo.Cluster) (*demo.KueueReport, error) {
	if err := c.StartKueue(ctx); err != nil {
		return nil, err
	}
	return c.RunKueueScenario(ctx)
}

// buildTools runs hack/build-tools.sh for tools at a lower CPU priority, its
// progress lines going to the demo's log. Cancelling ctx stops the whole build.
func buildTools(ctx context.Context, root string, tools ...string) error {
	cmd := exec.CommandContext(ctx, "nice", append([]string{"-n", "10", filepath.Join(root, "hack", "build-tools.sh")}, tools...)...)
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stdout
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	return cmd.Run()
}
