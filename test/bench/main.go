// Command bench measures kubenexus-scheduler against the stock kube-scheduler of the
// same Kubernetes version, one after the other on the same local kube-apiserver with
// identical nodes and client QPS/burst. For each workload the pods are created
// first, then the scheduler process starts; throughput is measured from the first
// binding to the last, so start-up and informer sync are excluded.
//
//	W1: 5000 plain pods on 1000 nodes
//	W2: 500 gangs of 8 (PodGroup objects; the stock scheduler sees plain pods)
//	W4: one gang of 1000
//
// Run it with `make bench`.
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kube-nexus/kubenexus/controllers"
	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/schedulertest"
)

type arm struct {
	name          string
	binary        string
	schedulerName string
	profile       string
}

type workload struct {
	name     string
	pods     int
	gangSize int // 0: plain pods
}

type result struct {
	workload, arm      string
	pods               int
	podsPerSec         float64
	span               time.Duration
	gangSpanP50, P99   time.Duration
	unreserved         string
	peakRSSMiB         int
	gangsPartial, done int
}

func main() {
	nodes := flag.Int("nodes", 1000, "simulated nodes")
	binDir := flag.String("bin", "bin", "directory holding kubenexus-scheduler and k8s/kube-scheduler")
	only := flag.String("workloads", "W1,W2,W4", "workloads to run")
	armsFlag := flag.String("arms", "stock,kubenexus", "scheduler arms to run")
	flag.StringVar(&cpuProfileDir, "cpuprofile", "", "directory to write an 8s CPU profile of each scheduler run into")
	flag.IntVar(&repeat, "repeat", 2, "runs of each workload per arm, alternating which arm goes first; ratios use the means")
	flag.StringVar(&kubenexusArgs, "kubenexus-args", "", "extra flags for kubenexus-scheduler, space-separated (e.g. --feature-gates=...)")
	flag.Parse()
	if err := run(*nodes, *binDir, strings.Split(*only, ","), strings.Split(*armsFlag, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

var (
	cpuProfileDir, kubenexusArgs string
	repeat                       int
)

func run(nodeCount int, binDir string, only, armNames []string) error {
	ctx := context.Background()
	if err := testutil.RequireAssets(); err != nil {
		return err
	}
	env := &envtest.Environment{CRDDirectoryPaths: []string{testutil.CRDPath()}, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	cfg.QPS, cfg.Burst = 5000, 5000
	admin, err := env.AddUser(envtest.User{Name: "bench", Groups: []string{"system:masters"}}, rest.CopyConfig(cfg))
	if err != nil {
		return err
	}
	kc, err := admin.KubeConfig()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "kubenexus-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	kcPath := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kcPath, kc, 0o600); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: controllers.NewScheme()})
	if err != nil {
		return err
	}
	cs := kubernetes.NewForConfigOrDie(cfg)

	fmt.Printf("creating %d nodes (32 cpu, 256Gi, 110 pods each)\n", nodeCount)
	if err := parallel(nodeCount, func(i int) error {
		n := testutil.MakeNode(fmt.Sprintf("node-%04d", i)).Capacity("cpu", "32", "memory", "256Gi").
			Label("topology.kubernetes.io/zone", fmt.Sprintf("zone-%d", i%3)).Obj()
		if err := c.Create(ctx, n); err != nil {
			return err
		}
		n.Spec.Taints = nil // lifted by the node lifecycle controller in a real cluster
		return c.Update(ctx, n)
	}); err != nil {
		return err
	}

	arms := []arm{
		{name: "stock", binary: filepath.Join(binDir, "k8s", "kube-scheduler"), schedulerName: "default-scheduler", profile: "- schedulerName: default-scheduler\n"},
		{name: "kubenexus", binary: filepath.Join(binDir, "kubenexus-scheduler"), schedulerName: schedulertest.SchedulerName,
			profile: schedulertest.KubeNexusProfile(schedulertest.SchedulerName, 5, 300)},
	}
	all := map[string]workload{
		"W1": {name: "W1", pods: 5000},
		"W2": {name: "W2", pods: 4000, gangSize: 8},
		"W4": {name: "W4", pods: 1000, gangSize: 1000},
	}
	var results []result
	for _, w := range only {
		wl, ok := all[w]
		if !ok {
			return fmt.Errorf("unknown workload %q", w)
		}
		for rep := range repeat {
			order := arms
			if rep%2 == 1 { // alternate which arm runs first
				order = []arm{arms[1], arms[0]}
			}
			for _, a := range order {
				if !contains(armNames, a.name) {
					continue
				}
				r, err := runOne(ctx, c, cs, dir, kcPath, a, wl)
				if err != nil {
					return fmt.Errorf("%s/%s: %w", wl.name, a.name, err)
				}
				results = append(results, r)
				fmt.Printf("  %s %-9s %5d pods  %7.1f pods/s  peak RSS %d MiB\n", r.workload, r.arm, r.pods, r.podsPerSec, r.peakRSSMiB)
			}
		}
	}
	report(results)
	return nil
}

func runOne(ctx context.Context, c client.Client, cs kubernetes.Interface, dir, kcPath string, a arm, w workload) (result, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: strings.ToLower(w.name) + "-" + a.name + "-"}}
	if err := c.Create(ctx, ns); err != nil {
		return result{}, err
	}
	fmt.Printf("%s/%s: creating %d pods\n", w.name, a.name, w.pods)
	if w.gangSize > 0 {
		if err := parallel(w.pods/w.gangSize, func(g int) error {
			return c.Create(ctx, testutil.MakePodGroup(fmt.Sprintf("g%04d", g), ns.Name).MinMember(int32(w.gangSize)).Obj())
		}); err != nil {
			return result{}, err
		}
	}
	if err := parallel(w.pods, func(i int) error {
		p := testutil.MakePod(fmt.Sprintf("p%05d", i), ns.Name).SchedulerName(a.schedulerName).Req("cpu", "100m", "memory", "128Mi")
		if w.gangSize > 0 {
			p.PodGroup(fmt.Sprintf("g%04d", i/w.gangSize))
		}
		return c.Create(ctx, p.Obj())
	}); err != nil {
		return result{}, err
	}

	// Watch bindings.
	var mu sync.Mutex
	bound := map[string]time.Time{}
	allBound := make(chan struct{})
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns.Name))
	inf := factory.Core().V1().Pods().Informer()
	record := func(p *corev1.Pod) {
		if p.Spec.NodeName == "" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if _, seen := bound[p.Name]; !seen {
			bound[p.Name] = time.Now()
			if len(bound) == w.pods {
				close(allBound)
			}
		}
	}
	_, _ = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { record(o.(*corev1.Pod)) },
		UpdateFunc: func(_, o any) { record(o.(*corev1.Pod)) },
	})
	stopInf := make(chan struct{})
	factory.Start(stopInf)
	factory.WaitForCacheSync(stopInf)
	defer close(stopInf)

	port, err := testutil.FreePort()
	if err != nil {
		return result{}, err
	}
	cfgPath := filepath.Join(dir, a.name+"-config.yaml")
	cfg := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
clientConnection: {kubeconfig: %s, qps: 5000, burst: 5000}
profiles:
%s`, kcPath, a.profile)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return result{}, err
	}
	logFile, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%s.log", w.name, a.name)))
	if err != nil {
		return result{}, err
	}
	defer logFile.Close()
	args := []string{"--config=" + cfgPath, "--secure-port=" + strconv.Itoa(port),
		"--authorization-always-allow-paths=/metrics,/healthz,/debug/pprof/profile", "--v=1"}
	if a.name == "kubenexus" && kubenexusArgs != "" {
		args = append(args, strings.Fields(kubenexusArgs)...)
	}
	cmd := exec.Command(a.binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return result{}, fmt.Errorf("starting %s: %w", a.binary, err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if cpuProfileDir != "" {
		go fetchProfile(port, filepath.Join(cpuProfileDir, fmt.Sprintf("%s-%s.pprof", w.name, a.name)))
	}

	select {
	case <-allBound:
	case <-time.After(10 * time.Minute):
		mu.Lock()
		n := len(bound)
		mu.Unlock()
		return result{}, fmt.Errorf("only %d/%d pods bound after 10 minutes (log: %s)", n, w.pods, logFile.Name())
	}
	unreserved := "n/a"
	if a.name == "kubenexus" {
		unreserved = scrape(port, "kubenexus_coscheduling_unreserved_members_total")
	}
	rss := peakRSS(cmd.Process.Pid)

	mu.Lock()
	times := make([]time.Time, 0, len(bound))
	for _, t := range bound {
		times = append(times, t)
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	span := times[len(times)-1].Sub(times[0])
	r := result{workload: w.name, arm: a.name, pods: w.pods, span: span, unreserved: unreserved, peakRSSMiB: rss}
	if span > 0 {
		r.podsPerSec = float64(w.pods-1) / span.Seconds()
	}
	if w.gangSize > 0 {
		var spans []time.Duration
		for g := 0; g < w.pods/w.gangSize; g++ {
			var first, last time.Time
			for i := g * w.gangSize; i < (g+1)*w.gangSize; i++ {
				t := bound[fmt.Sprintf("p%05d", i)]
				if first.IsZero() || t.Before(first) {
					first = t
				}
				if t.After(last) {
					last = t
				}
			}
			spans = append(spans, last.Sub(first))
		}
		sort.Slice(spans, func(i, j int) bool { return spans[i] < spans[j] })
		r.gangSpanP50, r.P99 = spans[len(spans)/2], spans[(len(spans)*99)/100]
	}
	mu.Unlock()

	if err := c.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns.Name), client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
		return r, err
	}
	return r, nil
}

func report(rs []result) {
	fmt.Println()
	fmt.Println("workload  arm        pods   pods/s   first→last  gang span p50 / p99   unreserved  peak RSS")
	sum, n := map[string]float64{}, map[string]int{}
	for _, r := range rs {
		k := r.workload + "/" + r.arm
		sum[k] += r.podsPerSec
		n[k]++
		gang := "-"
		if r.gangSpanP50 > 0 || r.P99 > 0 {
			gang = fmt.Sprintf("%s / %s", r.gangSpanP50.Round(time.Millisecond), r.P99.Round(time.Millisecond))
		}
		fmt.Printf("%-9s %-9s %5d  %7.1f   %9s  %-20s  %-10s  %d MiB\n", r.workload, r.arm, r.pods, r.podsPerSec,
			r.span.Round(time.Millisecond), gang, r.unreserved, r.peakRSSMiB)
	}
	mean := func(k string) float64 {
		if n[k] == 0 {
			return 0
		}
		return sum[k] / float64(n[k])
	}
	fmt.Println()
	for _, w := range []string{"W1", "W2", "W4"} {
		k, s := mean(w+"/kubenexus"), mean(w+"/stock")
		if k > 0 && s > 0 {
			fmt.Printf("%s mean pods/s: stock %.1f, kubenexus %.1f; ratio kubenexus/stock %.2f\n", w, s, k, k/s)
		}
	}
	if k, s := mean("W2/kubenexus"), mean("W1/stock"); k > 0 && s > 0 {
		fmt.Printf("W2 kubenexus gang throughput vs stock W1 plain-pod throughput: %.2f\n", k/s)
	}
}

// parallel runs f(0..n-1) on 32 workers and returns the first error.
func parallel(n int, f func(int) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	return <-errs
}

// scrape returns the value of a metric from the scheduler's /metrics endpoint.
func scrape(port int, metric string) string {
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // local self-signed scheduler endpoint
	resp, err := hc.Get(fmt.Sprintf("https://127.0.0.1:%d/metrics", port))
	if err != nil {
		return "error: " + err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, metric+" ") {
			return strings.TrimPrefix(line, metric+" ")
		}
	}
	return "0 (not yet incremented)"
}

// peakRSS reads the process's high-water resident set size in MiB.
func peakRSS(pid int) int {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if fields := strings.Fields(s.Text()); len(fields) >= 2 && fields[0] == "VmHWM:" {
			kb, _ := strconv.Atoi(fields[1])
			return kb / 1024
		}
	}
	return -1
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// fetchProfile saves an 8-second CPU profile of the scheduler once it serves.
func fetchProfile(port int, path string) {
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // local self-signed scheduler endpoint
	for range 50 {
		resp, err := hc.Get(fmt.Sprintf("https://127.0.0.1:%d/debug/pprof/profile?seconds=8", port))
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		_ = os.WriteFile(path, b, 0o644)
		return
	}
}
