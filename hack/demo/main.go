// Command demo is what `make demo` runs: it brings up the local KubeNexus cluster of
// test/e2e/demo, submits the workload mix, writes the placement report to
// <dir>/report.txt, and keeps the cluster up until it is sent SIGTERM (`make
// demo-down`).
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
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
	c, err := demo.Up(ctx, demo.Options{Root: absRoot, Bin: filepath.Join(absRoot, "bin"), Dir: absDir, Log: os.Stdout})
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
	var kueueReport *demo.KueueReport
	var kueueErr error
	if settleErr == nil {
		kueueReport, kueueErr = c.RunKueueScenario(ctx)
	}
	var report bytes.Buffer
	demo.Print(&report, placements)
	demo.PrintCapacity(&report, c.Capacity())
	demo.PrintKueue(&report, kueueReport)
	if kueueErr != nil {
		fmt.Fprintf(&report, "\nKUEUE SCENARIO INCOMPLETE: %v (logs in %s)\n", kueueErr, absDir)
	}
	fmt.Fprintf(&report, "\nCluster up in %s. Use it with:\n  export KUBECONFIG=%s\nStop it with: make demo-down\n",
		time.Since(start).Round(time.Second), c.Kubeconfig)
	if settleErr != nil {
		fmt.Fprintf(&report, "\nNOT SETTLED: %v (logs in %s)\n", settleErr, absDir)
	}
	if err := os.WriteFile(filepath.Join(absDir, "report.txt"), report.Bytes(), 0o644); err != nil {
		return err
	}
	os.Stdout.Write(report.Bytes())
	<-ctx.Done()
	fmt.Println(">> stopping the demo cluster")
	return nil
}
