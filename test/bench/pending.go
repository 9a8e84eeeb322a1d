package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/testenv"
)

// pendingSelector keeps the -pending measurement's pods off every node: a node
// selector no node matches is refused by NodeAffinity as unresolvable, so no arm
// runs preemption for them (which, with nothing to evict on 5000 nodes, would only
// add time) and each pod is attempted once and parked in the unschedulable pool.
const pendingSelector = "bench.kubenexus.io/pending"

// pendingResult is what n pending pods cost one scheduler's memory: its Go heap
// after a forced GC (live objects, not the GC's headroom) and its resident set,
// before the pods are created and once every one has been attempted.
type pendingResult struct {
	arm                       string
	pods                      int
	heapBefore, heapAfter     float64 // MiB
	rssBefore, rssAfter, peak int     // MiB
	attemptsFor               time.Duration
	heapPer10k, rssPer10kMiB  float64
}

func (r pendingResult) line() string {
	return fmt.Sprintf("  pending %-17s %6d pods  live heap %.1f → %.1f MiB (%.1f per 10k)  RSS %d → %d MiB (%.1f per 10k)  peak RSS %d MiB  all attempted in %.1fs",
		r.arm, r.pods, r.heapBefore, r.heapAfter, r.heapPer10k, r.rssBefore, r.rssAfter, r.rssPer10kMiB, r.peak, r.attemptsFor.Seconds())
}

// runPending starts the arm's scheduler on the nodes alone, measures it once ready,
// creates n pods it cannot place, waits until its attempts counter covers all of
// them, and measures it again.
func runPending(ctx context.Context, c client.Client, dir, kcPath string, a arm, n int) (pendingResult, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "pending-" + a.name + "-"}}
	if err := c.Create(ctx, ns); err != nil {
		return pendingResult{}, err
	}
	defer func() {
		if err := c.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns.Name), client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
			fmt.Fprintf(os.Stderr, "bench: cleaning up %s: %v\n", ns.Name, err)
		}
	}()
	port, err := testenv.FreePort()
	if err != nil {
		return pendingResult{}, err
	}
	args, err := schedulerArgs(a, workload{name: "pending"}, dir, kcPath, port)
	if err != nil {
		return pendingResult{}, err
	}
	logFile, err := os.Create(filepath.Join(dir, "pending-"+a.name+".log"))
	if err != nil {
		return pendingResult{}, err
	}
	defer logFile.Close()
	cmd := exec.Command(a.binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := pinning.start(cmd); err != nil {
		return pendingResult{}, fmt.Errorf("starting %s: %w", a.binary, err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }() //nolint:errcheck // killed: its exit error says nothing
	pid := cmd.Process.Pid

	ready := make(chan struct{})
	stop := make(chan struct{})
	defer close(stop)
	go pollReady(port, stop, func() { close(ready) })
	select {
	case <-ready:
	case <-time.After(2 * time.Minute):
		return pendingResult{}, fmt.Errorf("%s not ready in two minutes (log: %s)", a.name, logFile.Name())
	}
	time.Sleep(2 * time.Second) // start-up's garbage collected, its informers idle
	r := pendingResult{arm: a.name, pods: n}
	if r.heapBefore, err = liveHeapMiB(port); err != nil {
		return pendingResult{}, err
	}
	r.rssBefore = statusMiB(pid, "VmRSS:")

	fmt.Printf("pending/%s: creating %d pods no node takes\n", a.name, n)
	created := time.Now()
	if err := testutil.Parallel(n, func(i int) error {
		p := testutil.MakePod(fmt.Sprintf("p%05d", i), ns.Name).SchedulerName(a.schedulerName).
			Req("cpu", "100m", "memory", "128Mi").NodeSelector(pendingSelector, "none")
		return c.Create(ctx, p.Obj())
	}); err != nil {
		return pendingResult{}, err
	}
	deadline := time.Now().Add(15 * time.Minute)
	for scrapeSum(port, "scheduler_schedule_attempts_total") < float64(n) {
		if time.Now().After(deadline) {
			return pendingResult{}, fmt.Errorf("%s attempted %.0f of %d pending pods in 15 minutes", a.name, scrapeSum(port, "scheduler_schedule_attempts_total"), n)
		}
		time.Sleep(500 * time.Millisecond)
	}
	r.attemptsFor = time.Since(created)
	time.Sleep(2 * time.Second)
	if r.heapAfter, err = liveHeapMiB(port); err != nil {
		return pendingResult{}, err
	}
	r.rssAfter, r.peak = statusMiB(pid, "VmRSS:"), peakRSS(pid)
	if cpuProfileDir != "" {
		fetchHeap(port, filepath.Join(cpuProfileDir, fmt.Sprintf("pending-%s.heap.pprof", a.name)))
	}
	per10k := 10000 / float64(n)
	r.heapPer10k, r.rssPer10kMiB = (r.heapAfter-r.heapBefore)*per10k, float64(r.rssAfter-r.rssBefore)*per10k
	return r, nil
}

// liveHeapMiB is the scheduler's Go heap in use right after a garbage collection:
// its heap profile endpoint with gc=1 collects first, and its debug=1 text ends
// with the runtime's memory statistics.
func liveHeapMiB(port int) (float64, error) {
	hc := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // local self-signed scheduler endpoint
	resp, err := hc.Get(fmt.Sprintf("https://127.0.0.1:%d/debug/pprof/heap?gc=1&debug=1", port))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("heap profile: %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "# HeapAlloc = "); ok {
			b, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return b / (1 << 20), err
		}
	}
	return 0, fmt.Errorf("heap profile without HeapAlloc")
}

// reportPending prints each arm's median per 10k pending pods.
func reportPending(rs []pendingResult, arms []arm) {
	fmt.Printf("\npending pods: median [min–max] over %d run(s) per arm\n", repeat)
	fmt.Printf("%-36s", "")
	for _, a := range arms {
		fmt.Printf("%-24s", a.name)
	}
	fmt.Println()
	rows := []struct {
		name string
		get  func(pendingResult) float64
	}{
		{"live heap before, MiB", func(r pendingResult) float64 { return r.heapBefore }},
		{"live heap with the pods, MiB", func(r pendingResult) float64 { return r.heapAfter }},
		{"live heap per 10k pending pods, MiB", func(r pendingResult) float64 { return r.heapPer10k }},
		{"RSS before, MiB", func(r pendingResult) float64 { return float64(r.rssBefore) }},
		{"RSS with the pods, MiB", func(r pendingResult) float64 { return float64(r.rssAfter) }},
		{"RSS per 10k pending pods, MiB", func(r pendingResult) float64 { return r.rssPer10kMiB }},
		{"peak RSS, MiB", func(r pendingResult) float64 { return float64(r.peak) }},
		{"all attempted after, s", func(r pendingResult) float64 { return r.attemptsFor.Seconds() }},
	}
	for _, row := range rows {
		fmt.Printf("%-36s", row.name)
		for _, a := range arms {
			var vs []float64
			for _, r := range rs {
				if r.arm == a.name {
					vs = append(vs, row.get(r))
				}
			}
			fmt.Printf("%-24s", summarize(vs).cell(1))
		}
		fmt.Println()
	}
}
