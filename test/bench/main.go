// Command bench measures kubenexus-scheduler against the stock kube-scheduler of the
// same Kubernetes version, scheduler-plugins' kube-scheduler with its Coscheduling
// plugin, and a null binder (no scheduling at all: the throughput limit of the API
// server), one after the other on the same local kube-apiserver with identical nodes
// and client QPS/burst. For each workload the pods are created first, then the
// scheduler process starts.
//
//	W1: 5000 plain pods on 1000 nodes
//	W1b: W1 with kube-scheduler's system default spread constraints off in every
//	    arm (upstream's own batching benchmarks run so): with them on, kube-scheduler's
//	    PodTopologySpread signs no pod and opportunistic batching serves none.
//	    KubeNexus's profile has them off in W1 too (TopologyAware spreads replicas).
//	W2: 500 gangs of 8 (PodGroup objects; the stock scheduler sees plain pods;
//	    twice -repeat runs: stock's own runs spread widest here)
//	W4: one gang of 1000 (four times -repeat runs: its bindings take 1–4 s and
//	    cost kubenexus about half a CPU-second, so one GC more or less shows)
//	W5: 500 gangs of 8 that require one rack
//	W6: 1000 nodes full of priority-10 gangs of 4 (bound before the scheduler
//	    starts), then 50 priority-1000 gangs of 4 that fit only by preemption
//
// Wall-clock throughput on a small shared machine moves by tens of percent between
// runs, so each run also records cost: the CPU time (utime+stime from /proc) of the
// scheduler process and of kube-apiserver+etcd, per scheduled pod, between the first
// and the last binding; and, because a gang's first binding waits for its last
// member to pass Permit, also from the scheduler's start (and its /readyz) to the
// last binding. Every workload runs -repeat times per arm, rotating which arm goes
// first, and the report gives median and min–max per arm.
//
// The measured scheduler runs on its own CPUs (the upper half; kube-apiserver, etcd
// and the bench share the lower half, see pin.go), each run starts once the control
// plane has gone quiet, and etcd does not fsync: what a run costs then depends on the
// scheduler, not on what it took from the API server's cores or the disk's latency.
// What the machine's own speed does is measured, not controlled: before each run a
// fixed piece of work is timed on the scheduler's CPU (speed.go), and the report says
// how far it moved over the invocation.
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
	"math"
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
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/controllers"
	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/adminkube"
	"github.com/kube-nexus/kubenexus/test/util/schedulertest"
	"github.com/kube-nexus/kubenexus/test/util/testenv"
)

// gangKind is which PodGroup objects an arm's gang members point at.
type gangKind int

const (
	kubenexusGangs gangKind = iota // KubeNexus PodGroups (the stock and null-binder arms ignore them)
	sigsGangs                      // scheduler-plugins' scheduling.x-k8s.io PodGroups
	nativeGangs                    // Kubernetes' own scheduling.k8s.io/v1beta1 PodGroups, named by pods' spec.schedulingGroup
)

// nativeGates are the feature gates of Kubernetes' own gang scheduling (PodGroups, and
// their topology constraint for W5), on in the API server and in the stock-gang arm.
const nativeGates = "GenericWorkload=true,TopologyAwareWorkloadScheduling=true"

type arm struct {
	name          string
	binary        string // empty: the null binder (this program re-executed)
	schedulerName string
	profile       string
	gangs         gangKind
	build         string   // how to build binary
	args          []string // more command-line flags
	// gangsOnly: the arm runs only workloads of gangs (plain pods are stock's).
	gangsOnly bool
	// nullBinder: the arm is the null binder (this program re-executed); events:
	// it also writes the Event a scheduler records for each pod it binds.
	nullBinder, events bool
}

type workload struct {
	name, desc string
	pods       int
	gangSize   int // 0: plain pods
	// requiredRack: each gang's KubeNexus PodGroup requires one rack
	// (spec.networkTopology); the other arms see no topology.
	requiredRack bool
	// repeatFactor multiplies -repeat for this workload (0 means 1): a workload whose
	// runs bind for only a second or few (W4), or whose stock runs spread the widest
	// (W2), gets more of them, so that its medians move less between invocations.
	repeatFactor int
	// preempt: every node is first filled with bound lower-priority gangs of
	// gangSize members of 8 CPUs, and the workload's pods (higher priority, 8 CPUs)
	// fit only where those are evicted.
	preempt bool
	// noDefaultSpread: the stock and scheduler-plugins arms run PodTopologySpread
	// without system default constraints, as the kubenexus arm always does.
	noDefaultSpread bool
}

// sigsPermitWaitingTimeSeconds matches the KubeNexus arm's default gang timeout
// (300 s) so that neither arm can time out a gang the other would have waited for.
const sigsPermitWaitingTimeSeconds = 300

// noDefaultSpread is the pluginConfig entry, appended to a profile (whose last key,
// if it has one, is pluginConfig), that turns kube-scheduler's system default spread
// constraints off (the kubenexus arm's profile has it already).
const noDefaultSpread = `  - name: PodTopologySpread
    args: {defaultingType: List}
`

func allArms(binDir string) []arm {
	return []arm{
		{name: "stock", binary: filepath.Join(binDir, "k8s", "kube-scheduler"), schedulerName: "default-scheduler",
			profile: "- schedulerName: default-scheduler\n", build: "hack/build-tools.sh kube-scheduler"},
		// Kubernetes 1.37's own gang scheduling: the same kube-scheduler with the
		// Workload API's gates on, whose default profile then adds GangScheduling and
		// schedules each PodGroup in one cycle; gangs are scheduling.k8s.io/v1beta1
		// PodGroups (W5's with a rack topology constraint).
		{name: "stock-gang", binary: filepath.Join(binDir, "k8s", "kube-scheduler"), schedulerName: "stock-gang",
			profile: "- schedulerName: stock-gang\n", gangs: nativeGangs, gangsOnly: true, build: "hack/build-tools.sh kube-scheduler",
			args: []string{"--feature-gates=" + nativeGates}},
		{name: "kubenexus", binary: filepath.Join(binDir, "kubenexus-scheduler"), schedulerName: schedulertest.SchedulerName,
			profile: schedulertest.KubeNexusProfile(schedulertest.SchedulerName, 5, 300), build: "make build"},
		// scheduler-plugins' documented Coscheduling profile (doc/install.md, pkg/coscheduling/README.md):
		// Coscheduling as the queue sort and at every extension point it implements.
		{name: "scheduler-plugins", binary: filepath.Join(binDir, "k8s", "scheduler-plugins"), schedulerName: "scheduler-plugins",
			gangs: sigsGangs, build: "hack/build-tools.sh scheduler-plugins", profile: fmt.Sprintf(`- schedulerName: scheduler-plugins
  plugins:
    queueSort:
      enabled: [{name: Coscheduling}]
      disabled: [{name: "*"}]
    preFilter:
      enabled: [{name: Coscheduling}]
    postFilter:
      enabled: [{name: Coscheduling}]
    permit:
      enabled: [{name: Coscheduling}]
    reserve:
      enabled: [{name: Coscheduling}]
  pluginConfig:
  - name: Coscheduling
    args:
      permitWaitingTimeSeconds: %d
`, sigsPermitWaitingTimeSeconds)},
		{name: "null-binder", schedulerName: "null-binder", nullBinder: true},
		// The null binder writing kube-scheduler's Scheduled Event for each pod: the
		// limit for a scheduler that records what it decided.
		{name: "null-binder-events", schedulerName: "null-binder-events", nullBinder: true, events: true},
	}
}

func workloads(scale float64) map[string]workload {
	n := func(full, min int) int { return max(min, int(math.Round(float64(full)*scale))) }
	w1, w2, w4, w5, w6 := n(5000, 2), n(500, 1), n(1000, 2), n(500, 1), n(50, 1)
	return map[string]workload{
		"W1": {name: "W1", pods: w1, desc: fmt.Sprintf("%d plain pods", w1)},
		"W1b": {name: "W1b", pods: w1, noDefaultSpread: true,
			desc: fmt.Sprintf("%d plain pods, every arm without default spread constraints (opportunistic batching on)", w1)},
		"W2": {name: "W2", pods: w2 * 8, gangSize: 8, repeatFactor: 2, desc: fmt.Sprintf("%d gangs of 8", w2)},
		"W4": {name: "W4", pods: w4, gangSize: w4, repeatFactor: 4, desc: fmt.Sprintf("one gang of %d", w4)},
		"W5": {name: "W5", pods: w5 * 8, gangSize: 8, requiredRack: true, desc: fmt.Sprintf("%d gangs of 8, required: rack (20 racks × 2 zones)", w5)},
		"W6": {name: "W6", pods: w6 * 4, gangSize: 4, preempt: true, desc: fmt.Sprintf("%d priority-1000 gangs of 4 × 8 CPUs on nodes full of priority-10 gangs of 4 (one member per node)", w6)},
	}
}

func main() {
	nodes := flag.Int("nodes", 1000, "simulated nodes")
	binDir := flag.String("bin", "bin", "directory holding kubenexus-scheduler, k8s/kube-scheduler and k8s/scheduler-plugins")
	only := flag.String("workloads", "W1,W1b,W2,W4,W5", "workloads to run")
	armsFlag := flag.String("arms", "stock,kubenexus,scheduler-plugins,null-binder", "arms to run")
	scale := flag.Float64("scale", 1, "multiply every workload's pod count (W2: its number of gangs; W4: its gang size) by this, for quick runs")
	flag.StringVar(&cpuProfileDir, "cpuprofile", "", "directory to write an 8s CPU profile of each scheduler run, heap profiles and goroutine dumps at its first and last bindings (with -pending: once every pod was attempted) and its log, into")
	flag.StringVar(&traceDir, "trace", "", "directory to write, per run, a CSV of every binding: bound count, seconds since the scheduler's start, scheduler/apiserver/etcd CPU-ms")
	flag.IntVar(&repeat, "repeat", 5, "runs of each workload per arm (W2: twice as many, stock's W2 runs spread widest; W4: four times, its runs are short); run r starts with arm r mod (number of arms)")
	flag.StringVar(&kubenexusArgs, "kubenexus-args", "", "extra flags for kubenexus-scheduler, space-separated (e.g. --feature-gates=...)")
	pin := flag.Bool("pin", true, "run the measured scheduler on the upper half of the CPUs and kube-apiserver, etcd and the bench on the lower half (see pin.go)")
	flag.IntVar(&pendingPods, "pending", 0, "instead of the workloads: start each arm's scheduler on the nodes alone, then create this many pods no node takes, and report its live heap and resident set per 10k pending pods")
	nb := flag.Bool("null-binder", false, "internal: run as the null-binder arm's process")
	nbKubeconfig := flag.String("null-binder-kubeconfig", "", "internal: the null binder's kubeconfig")
	nbWorkers := flag.Int("null-binder-workers", 64, "concurrent bindings of the null binder")
	nbName := flag.String("null-binder-name", "null-binder", "internal: the scheduler name whose pods the null binder binds")
	nbEvents := flag.Bool("null-binder-events", false, "internal: the null binder also writes a Scheduled Event per pod")
	flag.Parse()
	if *nb {
		if err := nullBinder(*nbKubeconfig, *nbName, *nbWorkers, *nbEvents); err != nil {
			fmt.Fprintln(os.Stderr, "null-binder:", err)
			os.Exit(1)
		}
		return
	}
	nullBinderWorkers = *nbWorkers
	for _, dir := range []string{cpuProfileDir, traceDir} {
		if dir == "" {
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
	}
	var err error
	if pinning, err = newCPUSplit(*pin); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	if err := run(*nodes, *binDir, *scale, strings.Split(*only, ","), strings.Split(*armsFlag, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

var (
	cpuProfileDir, kubenexusArgs, traceDir string
	pinning                                cpuSplit
	gauge                                  *speedGauge
	repeat, nullBinderWorkers, pendingPods int
)

// controlPlane is what every run samples besides the scheduler.
type controlPlane struct{ apiserver, etcd int }

func run(nodeCount int, binDir string, scale float64, only, armNames []string) error {
	ctx := context.Background()
	if repeat < 1 {
		return fmt.Errorf("-repeat must be at least 1")
	}
	var arms []arm
	for _, a := range allArms(binDir) {
		if contains(armNames, a.name) {
			arms = append(arms, a)
		}
	}
	for _, n := range armNames {
		if !contains(armNamesOf(allArms(binDir)), n) {
			return fmt.Errorf("unknown arm %q (known: %s)", n, strings.Join(armNamesOf(allArms(binDir)), ","))
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	for i, a := range arms {
		if a.binary == "" {
			arms[i].binary = self
			continue
		}
		if _, err := os.Stat(a.binary); err != nil {
			return fmt.Errorf("arm %s needs %s (build it with %s, or run `make bench`): %w", a.name, a.binary, a.build, err)
		}
	}
	uncache(arms)
	all := workloads(scale)
	var wls []workload
	for _, w := range only {
		wl, ok := all[w]
		if !ok {
			return fmt.Errorf("unknown workload %q", w)
		}
		wls = append(wls, wl)
	}

	if err := testenv.RequireAssets(); err != nil {
		return err
	}
	crds := []string{testenv.CRDPath()}
	sigs := contains(armNamesOf(arms), "scheduler-plugins")
	if sigs {
		p, err := testenv.SchedulerPluginsCRD()
		if err != nil {
			return err
		}
		crds = append(crds, p)
	}
	var configure []func(*envtest.Environment) error
	if contains(armNamesOf(arms), "stock-gang") {
		configure = append(configure, func(env *envtest.Environment) error {
			on, err := testenv.EnableNativeWorkloads(env)
			if err == nil && !on {
				err = fmt.Errorf("arm stock-gang needs Kubernetes 1.37's Workload API; the kube-apiserver in bin/k8s is older")
			}
			env.ControlPlane.GetAPIServer().Configure().Append("feature-gates", "TopologyAwareWorkloadScheduling=true")
			return err
		})
	}
	plane, err := adminkube.Start(crds, "kubenexus-bench-", "bench", configure...)
	if err != nil {
		return err
	}
	defer plane.Stop()
	cfg, dir, kcPath := plane.Config, plane.Dir, plane.Kubeconfig
	var cp controlPlane
	if cp.apiserver, cp.etcd, err = envtestPIDs(); err != nil {
		return err
	}
	if err := pinning.pinRest(cp.apiserver, cp.etcd); err != nil {
		return err
	}
	fmt.Println(pinning)
	gauge = newSpeedGauge()
	cfg.QPS, cfg.Burst = 5000, 5000
	c, err := client.New(cfg, client.Options{Scheme: controllers.NewScheme()})
	if err != nil {
		return err
	}
	cs := kubernetes.NewForConfigOrDie(cfg)

	fmt.Printf("CPU time from /proc/PID/stat at %d ticks/s; kube-apiserver pid %d, etcd pid %d\n", clockTicks, cp.apiserver, cp.etcd)
	fmt.Printf("creating %d nodes (32 cpu, 256Gi, 110 pods each) in 20 racks × 2 zones\n", nodeCount)
	if err := testutil.Parallel(nodeCount, func(i int) error {
		rack := i % 20
		n := testutil.MakeNode(fmt.Sprintf("node-%04d", i)).Capacity("cpu", "32", "memory", "256Gi").
			Label("topology.kubernetes.io/zone", fmt.Sprintf("zone-%d", rack/10)).
			Label(v1alpha1.LabelRack, fmt.Sprintf("rack-%02d", rack)).Obj()
		if err := c.Create(ctx, n); err != nil {
			return err
		}
		n.Spec.Taints = nil // lifted by the node lifecycle controller in a real cluster
		return c.Update(ctx, n)
	}); err != nil {
		return err
	}

	if pendingPods > 0 {
		var rs []pendingResult
		var measured []arm
		for _, a := range arms {
			if !a.nullBinder { // binding is not keeping pods pending
				measured = append(measured, a)
			}
		}
		for rep := range repeat {
			for k := range measured {
				a := measured[(rep+k)%len(measured)]
				r, err := runPending(ctx, c, dir, kcPath, a, pendingPods)
				if err != nil {
					return fmt.Errorf("pending/%s: %w", a.name, err)
				}
				rs = append(rs, r)
				fmt.Println(r.line())
			}
		}
		reportPending(rs, measured)
		return nil
	}

	var results []result
	for _, wl := range wls {
		for rep := range repeat * max(1, wl.repeatFactor) {
			for k := range arms {
				a := arms[(rep+k)%len(arms)] // run rep starts with arm rep mod N
				if wl.preempt && a.nullBinder {
					continue // binding is not preempting
				}
				if a.gangsOnly && (wl.gangSize == 0 || wl.preempt) {
					continue // plain pods are stock's; W6's fill is not expressed as native gangs
				}
				r, err := runOne(ctx, c, cs, cp, dir, kcPath, a, wl, sigs)
				if err != nil {
					return fmt.Errorf("%s/%s: %w", wl.name, a.name, err)
				}
				r.rep = rep
				results = append(results, r)
				fmt.Println(r.line())
			}
		}
	}
	report(results, wls, arms)
	return nil
}

// sample is the CPU time of the scheduler and of the control plane at one moment.
type sample struct {
	at               time.Time
	sched, api, etcd time.Duration
}

func (cp controlPlane) sample(schedPID int) sample {
	s := sample{at: time.Now(), api: cpuOf(cp.apiserver), etcd: cpuOf(cp.etcd)}
	if schedPID > 0 {
		s.sched = cpuOf(schedPID)
	}
	return s
}

// waitQuiet waits until kube-apiserver and etcd together have used less than 10% of
// one CPU in each of four consecutive 250 ms intervals (at least one second, at most
// 30); it reports whether they did and how long it took.
func (cp controlPlane) waitQuiet() (bool, time.Duration) {
	const interval, need, limit = 250 * time.Millisecond, 4, 30 * time.Second
	began := time.Now()
	prev := cp.sample(0)
	for calm := 0; time.Since(began) < limit; {
		time.Sleep(interval)
		s := cp.sample(0)
		if s.api < 0 || s.etcd < 0 {
			return false, time.Since(began)
		}
		used, elapsed := (s.api-prev.api)+(s.etcd-prev.etcd), s.at.Sub(prev.at)
		prev = s
		if used*10 < elapsed {
			calm++
		} else {
			calm = 0
		}
		if calm == need {
			return true, time.Since(began)
		}
	}
	return false, time.Since(began)
}

// perPod is the CPU time between two samples in milliseconds per pod.
func perPod(from, to time.Duration, pods int) float64 {
	if from < 0 || to < 0 || pods <= 0 {
		return math.NaN()
	}
	return float64(to-from) / float64(time.Millisecond) / float64(pods)
}

func runOne(ctx context.Context, c client.Client, cs kubernetes.Interface, cp controlPlane, dir, kcPath string, a arm, w workload, sigsCRD bool) (result, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: strings.ToLower(w.name) + "-" + a.name + "-"}}
	if err := c.Create(ctx, ns); err != nil {
		return result{}, err
	}
	var fill *filled
	if w.preempt {
		f, err := fillNodes(ctx, c, a, w, strings.ToLower(w.name)+"-fill-"+a.name+"-")
		if err != nil {
			return result{}, err
		}
		defer f.cleanup(ctx, c, sigsCRD)
		fill = f
	}
	fmt.Printf("%s/%s: creating %d pods\n", w.name, a.name, w.pods)
	if w.gangSize > 0 {
		if err := testutil.Parallel(w.pods/w.gangSize, func(g int) error {
			name := fmt.Sprintf("g%04d", g)
			switch a.gangs {
			case sigsGangs:
				return c.Create(ctx, testutil.ForeignPodGroup(v1alpha1.NewSigsPodGroup(), ns.Name, name, map[string]any{"minMember": int64(w.gangSize)}))
			case nativeGangs:
				pg := testutil.NativeGangPodGroup(ns.Name, name, int32(w.gangSize))
				if w.requiredRack {
					pg.Spec.SchedulingConstraints = &schedulingv1beta1.PodGroupSchedulingConstraints{
						Topology: []schedulingv1beta1.TopologyConstraint{{Key: v1alpha1.LabelRack}}}
				}
				return c.Create(ctx, pg)
			}
			pg := testutil.MakePodGroup(name, ns.Name).MinMember(int32(w.gangSize))
			if w.requiredRack {
				pg = pg.NetworkTopology(v1alpha1.NetworkTopologyRequired, v1alpha1.NetworkLevelRack)
			}
			return c.Create(ctx, pg.Obj())
		}); err != nil {
			return result{}, err
		}
	}
	if err := testutil.Parallel(w.pods, func(i int) error {
		p := testutil.MakePod(fmt.Sprintf("p%05d", i), ns.Name).SchedulerName(a.schedulerName).Req("cpu", "100m", "memory", "128Mi")
		if w.preempt {
			p = p.Req("cpu", "8", "memory", "1Gi").PriorityClass(benchHighPriority)
			p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
		}
		switch {
		case w.gangSize > 0 && a.gangs == nativeGangs:
			p.SchedulingGroup(fmt.Sprintf("g%04d", i/w.gangSize))
		case w.gangSize > 0:
			p.PodGroup(fmt.Sprintf("g%04d", i/w.gangSize)) // label scheduling.x-k8s.io/pod-group, which both PodGroup APIs use
		}
		return c.Create(ctx, p.Obj())
	}); err != nil {
		return result{}, err
	}
	defer func() {
		// Leave nothing behind for the next run's informers to list.
		objs := []client.Object{&corev1.Pod{}, &v1alpha1.PodGroup{}}
		if sigsCRD {
			objs = append(objs, v1alpha1.NewSigsPodGroup())
		}
		if a.gangs == nativeGangs {
			objs = append(objs, &schedulingv1beta1.PodGroup{})
		}
		for _, o := range objs {
			if err := c.DeleteAllOf(ctx, o, client.InNamespace(ns.Name), client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
				fmt.Fprintf(os.Stderr, "bench: cleaning up %s: %v\n", ns.Name, err)
			}
		}
	}()

	// Watch bindings; sample CPU at the first and at the last.
	var (
		mu          sync.Mutex
		schedPID    int
		first, last sample
		heapPort    int
		samples     []sample // one per binding, in the order seen
	)
	bound := map[string]time.Time{}
	nodeOf := map[string]string{} // pod → node, for the racks a gang spans
	allBound := make(chan struct{})
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns.Name))
	inf := factory.Core().V1().Pods().Informer()
	record := func(p *corev1.Pod) {
		if p.Spec.NodeName == "" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if _, seen := bound[p.Name]; seen {
			return
		}
		s := cp.sample(schedPID)
		bound[p.Name] = s.at
		samples = append(samples, s)
		nodeOf[p.Name] = p.Spec.NodeName
		if len(bound) == 1 {
			first = s
			if cpuProfileDir != "" && heapPort != 0 {
				// A gang's members all wait at Permit until its first binding: the
				// heap is near its peak here.
				go fetchHeap(heapPort, filepath.Join(cpuProfileDir, fmt.Sprintf("%s-%s.first.heap.pprof", w.name, a.name)))
			}
		}
		if len(bound) == w.pods {
			last = s
			close(allBound)
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
	// Start the scheduler on a quiet control plane: the creations just made and the
	// previous run's deletions are fanned out, and nothing of them is counted here.
	quiet, quietAfter := cp.waitQuiet()
	speed, err := gauge.measure(pinning)
	if err != nil {
		return result{}, err
	}

	// The process's log is kept beside the profiles when they are asked for (the
	// scratch directory goes with the control plane).
	logDir := dir
	if cpuProfileDir != "" {
		logDir = cpuProfileDir
	}
	logFile, err := os.Create(filepath.Join(logDir, fmt.Sprintf("%s-%s.log", w.name, a.name)))
	if err != nil {
		return result{}, err
	}
	defer logFile.Close()
	var port int
	var args []string
	if a.nullBinder {
		args = []string{"-null-binder", "-null-binder-kubeconfig=" + kcPath, "-null-binder-workers=" + strconv.Itoa(nullBinderWorkers),
			"-null-binder-name=" + a.schedulerName, "-null-binder-events=" + strconv.FormatBool(a.events)}
	} else {
		if port, err = testenv.FreePort(); err != nil {
			return result{}, err
		}
		mu.Lock()
		heapPort = port // read by the binding handler, once the scheduler runs
		mu.Unlock()
		if args, err = schedulerArgs(a, w, dir, kcPath, port); err != nil {
			return result{}, err
		}
	}
	cmd := exec.Command(a.binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	var stdout io.Reader
	if a.nullBinder {
		cmd.Stdout = nil
		if stdout, err = cmd.StdoutPipe(); err != nil {
			return result{}, err
		}
	}
	apiBefore, apiErr := scrapeAPICalls(ctx, cs)
	start := cp.sample(0)
	if err := pinning.start(cmd); err != nil {
		return result{}, fmt.Errorf("starting %s: %w", a.binary, err)
	}
	mu.Lock()
	schedPID = cmd.Process.Pid
	mu.Unlock()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() { _ = cmd.Process.Kill(); <-exited }() //nolint:errcheck // killed: its exit error says nothing

	// Readiness: /readyz for a scheduler (informers and event handlers synced, the
	// moment before it starts scheduling), the ready line for the null binder.
	readyCh := make(chan sample, 1)
	stopReady := make(chan struct{})
	defer close(stopReady)
	if a.nullBinder {
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if sc.Text() == nullBinderReady {
					readyCh <- cp.sample(cmd.Process.Pid)
				}
				fmt.Fprintln(logFile, sc.Text())
			}
		}()
	} else {
		go pollReady(port, stopReady, func() { readyCh <- cp.sample(cmd.Process.Pid) })
	}
	if cpuProfileDir != "" && port != 0 {
		go func() {
			if err := testenv.FetchCPUProfile(port, 8, filepath.Join(cpuProfileDir, fmt.Sprintf("%s-%s.pprof", w.name, a.name))); err != nil {
				fmt.Fprintln(os.Stderr, "bench: CPU profile:", err)
			}
		}()
	}

	// Give up when no pod has been bound for two minutes, or after an hour.
	deadline := time.After(time.Hour)
	stall := time.NewTicker(2 * time.Minute)
	defer stall.Stop()
	for seen := -1; ; {
		select {
		case <-allBound:
		case err := <-exited:
			exited <- err // for the deferred kill
			return result{}, stalled(&mu, bound, w.pods, fmt.Sprintf("before %s exited (%v)", a.binary, err), logFile.Name())
		case <-deadline:
			return result{}, stalled(&mu, bound, w.pods, "in an hour", logFile.Name())
		case <-stall.C:
			mu.Lock()
			n := len(bound)
			mu.Unlock()
			if n != seen {
				seen = n
				continue
			}
			return result{}, stalled(&mu, bound, w.pods, "and none for two minutes", logFile.Name())
		}
		break
	}
	var api apiCalls
	if apiAfter, err := scrapeAPICalls(ctx, cs); err == nil && apiErr == nil {
		api = apiAfter.since(apiBefore, w.pods)
	}
	if cpuProfileDir != "" && port != 0 {
		fetchHeap(port, filepath.Join(cpuProfileDir, fmt.Sprintf("%s-%s.heap.pprof", w.name, a.name)))
	}
	unreserved := "n/a"
	if a.name == "kubenexus" {
		unreserved = scrape(port, "kubenexus_coscheduling_unreserved_members_total")
	}
	rss := peakRSS(cmd.Process.Pid)
	rssAnon, rssFile := statusMiB(cmd.Process.Pid, "RssAnon:"), statusMiB(cmd.Process.Pid, "RssFile:")
	attempts, batched := math.NaN(), math.NaN()
	if port != 0 {
		// A scheduler counts a successful attempt when its binding goroutine returns,
		// which can be after the bench has seen the binding: wait until the counter
		// covers every pod and stops moving (at most 3 s).
		prev := math.NaN()
		for range 30 {
			n := scrapeSum(port, "scheduler_schedule_attempts_total")
			if n >= float64(w.pods) && n == prev {
				break
			}
			prev = n
			time.Sleep(100 * time.Millisecond)
		}
		attempts = prev / float64(w.pods)
		batched = scrapeLabeled(port, "scheduler_batch_attempts_total", `result="hint_used"`)
	}
	var ready sample
	select {
	case ready = <-readyCh:
	default:
	}

	mu.Lock()
	defer mu.Unlock()
	r := result{workload: w.name, arm: a.name, pods: w.pods, unreserved: unreserved, quiet: quiet, quietAfter: quietAfter, api: api, peakRSSMiB: rss, rssAnonMiB: rssAnon, rssFileMiB: rssFile, attemptsPerPod: attempts, batched: batched, speed: speed,
		span: last.at.Sub(first.at), startToLast: last.at.Sub(start.at),
		schedFL: perPod(first.sched, last.sched, w.pods-1), schedSL: perPod(0, last.sched, w.pods),
		schedRL: math.NaN(), evictedPerPod: math.NaN(), partialGangs: math.NaN(),
		ctlFL: perPod(first.api+first.etcd, last.api+last.etcd, w.pods-1),
		ctlSL: perPod(start.api+start.etcd, last.api+last.etcd, w.pods),
		apiFL: perPod(first.api, last.api, w.pods-1), etcdFL: perPod(first.etcd, last.etcd, w.pods-1)}
	if !ready.at.IsZero() {
		r.startReady = ready.at.Sub(start.at)
		r.schedRL = perPod(ready.sched, last.sched, w.pods)
	}
	if traceDir != "" {
		writeTrace(filepath.Join(traceDir, ns.Name+".csv"), start, samples)
	}
	if r.span > 0 {
		r.podsPerSec = float64(w.pods-1) / r.span.Seconds()
	}
	if r.startToLast > 0 {
		r.podsPerSecStart = float64(w.pods) / r.startToLast.Seconds()
	}
	if fill != nil {
		r.evictedPerPod, r.partialGangs = fill.count(ctx, c, w.pods)
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
		r.gangSpanP50, r.gangSpanP99 = spans[len(spans)/2], spans[(len(spans)*99)/100]
		r.multiRackGangs = multiRackGangs(ctx, c, w, nodeOf)
	}
	return r, nil
}

// schedulerArgs writes the arm's scheduler configuration for the workload into dir
// and returns the scheduler's command line, serving on port.
func schedulerArgs(a arm, w workload, dir, kcPath string, port int) ([]string, error) {
	cfgPath := filepath.Join(dir, a.name+"-config.yaml")
	cfg := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
clientConnection: {kubeconfig: %s, qps: 5000, burst: 5000}
profiles:
%s`, kcPath, a.profile)
	if w.noDefaultSpread && a.name != "kubenexus" {
		if !strings.Contains(a.profile, "  pluginConfig:\n") {
			cfg += "  pluginConfig:\n"
		}
		cfg += noDefaultSpread
	}
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	args := []string{"--config=" + cfgPath, "--secure-port=" + strconv.Itoa(port),
		"--authorization-always-allow-paths=/metrics,/healthz,/readyz,/debug/pprof/profile,/debug/pprof/heap,/debug/pprof/goroutine", "--v=1"}
	args = append(args, a.args...)
	if a.name == "kubenexus" && kubenexusArgs != "" {
		args = append(args, strings.Fields(kubenexusArgs)...)
	}
	return args, nil
}

// writeTrace saves the CPU samples taken at each binding of one run.
func writeTrace(path string, start sample, samples []sample) {
	var b strings.Builder
	b.WriteString("bound,seconds,sched_ms,apiserver_ms,etcd_ms\n")
	for i, s := range samples {
		fmt.Fprintf(&b, "%d,%.4f,%d,%d,%d\n", i+1, s.at.Sub(start.at).Seconds(), s.sched.Milliseconds(), (s.api - start.api).Milliseconds(), (s.etcd - start.etcd).Milliseconds())
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "bench: writing trace:", err)
	}
}

// stalled describes a run that did not bind every pod, with the end of the arm's log
// (the log directory is removed when the bench exits).
func stalled(mu *sync.Mutex, bound map[string]time.Time, pods int, how, log string) error {
	mu.Lock()
	n := len(bound)
	mu.Unlock()
	tail := ""
	if b, err := os.ReadFile(log); err == nil {
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		tail = strings.Join(lines[max(0, len(lines)-40):], "\n")
	}
	return fmt.Errorf("only %d/%d pods bound %s; end of the arm's log:\n%s", n, pods, how, tail)
}

// pollReady calls ready once the scheduler's /readyz answers 200, polling every 20 ms
// over one kept-alive connection until then (and not after, so that the polling
// costs the scheduler nothing once it schedules).
func pollReady(port int, stop <-chan struct{}, ready func()) {
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // local self-signed scheduler endpoint
	defer hc.CloseIdleConnections()
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		resp, err := hc.Get(fmt.Sprintf("https://127.0.0.1:%d/readyz", port))
		if err != nil {
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			ready()
			return
		}
	}
}

func armNamesOf(arms []arm) []string {
	var names []string
	for _, a := range arms {
		names = append(names, a.name)
	}
	return names
}

// scrape returns the value of a metric from the scheduler's /metrics endpoint.
func scrape(port int, metric string) string {
	body, err := metricsText(port)
	if err != nil {
		return "error: " + err.Error()
	}
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, metric+" ") {
			return strings.TrimPrefix(line, metric+" ")
		}
	}
	return "0 (not yet incremented)"
}

// scrapeSum is the sum of a metric over all its label sets; NaN if unavailable.
func scrapeSum(port int, metric string) float64 {
	body, err := metricsText(port)
	if err != nil {
		return math.NaN()
	}
	sum, found := 0.0, false
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, metric+"{") && !strings.HasPrefix(line, metric+" ") {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum, found = sum+v, true
		}
	}
	if !found {
		return math.NaN()
	}
	return sum
}

// scrapeLabeled is the sum of a metric over its label sets that include label
// (name="value"); 0 when the scheduler serves metrics but has none, NaN if unavailable.
func scrapeLabeled(port int, metric, label string) float64 {
	body, err := metricsText(port)
	if err != nil {
		return math.NaN()
	}
	var sum float64
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, metric+"{") || !strings.Contains(line, label) {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum += v
		}
	}
	return sum
}

func metricsText(port int) (string, error) {
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // local self-signed scheduler endpoint
	resp, err := hc.Get(fmt.Sprintf("https://127.0.0.1:%d/metrics", port))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// fetchHeap saves the scheduler's heap profile (in-use and allocated bytes) at path
// and its goroutines, grouped by stack, beside it (path.goroutines.txt).
func fetchHeap(port int, path string) {
	fetchProfile(port, "heap", path)
	fetchProfile(port, "goroutine?debug=1", path+".goroutines.txt")
}

func fetchProfile(port int, name, path string) {
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // local self-signed scheduler endpoint
	resp, err := hc.Get(fmt.Sprintf("https://127.0.0.1:%d/debug/pprof/%s", port, name))
	if err != nil {
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "bench: profile:", err)
	}
}

// multiRackGangs counts the gangs whose members ended on more than one rack.
func multiRackGangs(ctx context.Context, c client.Client, w workload, nodeOf map[string]string) float64 {
	racks := map[string]string{}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return math.NaN()
	}
	for _, n := range nodes.Items {
		racks[n.Name] = n.Labels[v1alpha1.LabelRack]
	}
	spanning := 0
	for g := 0; g < w.pods/w.gangSize; g++ {
		seen := map[string]bool{}
		for i := g * w.gangSize; i < (g+1)*w.gangSize; i++ {
			seen[racks[nodeOf[fmt.Sprintf("p%05d", i)]]] = true
		}
		if len(seen) > 1 {
			spanning++
		}
	}
	return float64(spanning)
}
