// Command benchplacement replays a GPU cluster trace (the Alibaba 2023 trace of Weng
// et al., "Beware of Fragmentation", ATC'23, by default) through real scheduler
// binaries on one local kube-apiserver, one arm after another with identical nodes
// and pods, and reports how well each packs GPUs:
//
//	stock:              kube-scheduler with its default plugins
//	stock-mostallocated: kube-scheduler with NodeResourcesFit MostAllocated
//	kubenexus:          kubenexus-scheduler with the operator's default plugin set
//
// Pods arrive one at a time in creation order, or file order, or shuffled with
// -shuffle-seed (the next once the scheduler has bound
// or refused the last; refused pods are deleted, nothing else is) until the GPUs
// asked for reach the cluster's (the trace is replayed again from its start if it
// runs out first). GPUs are shared through DRA: every GPU node publishes its GPUs as
// ResourceSlice devices that several claims can share (allowMultipleAllocations, a
// "share" capacity of 1000), and every GPU task asks for its GPUs through a
// ResourceClaim — a task of a fraction of a GPU for that share of one device (its
// gpu_milli), a task of whole GPUs for whole devices — so that each arm allocates
// them with kube-scheduler's own DRA allocator (consumable capacity). With
// -whole-gpus, nodes have nvidia.com/gpu instead and a fraction asks for a whole GPU
// (the mode before sharing was modelled). A task's gpu_spec becomes a required node
// affinity on nvidia.com/gpu.product.
//
// Run it with `make bench-placement`.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/controllers"
	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/adminkube"
	"github.com/kube-nexus/kubenexus/test/util/etabench"
	"github.com/kube-nexus/kubenexus/test/util/schedulertest"
	"github.com/kube-nexus/kubenexus/test/util/testenv"
)

const gpu corev1.ResourceName = v1alpha1.ResourceNvidiaGPU

// The DRA driver, DeviceClass and capacity of the GPUs nodes publish when GPUs are
// shared.
const (
	gpuDriver     = "gpu.bench.kubenexus.io"
	shareCapacity = "share"
)

type arm struct {
	name, binary, schedulerName, profile string
}

func arms(binDir string) []arm {
	nexus := schedulertest.KubeNexusProfile(schedulertest.SchedulerName, 5, 300)
	return []arm{
		{name: "stock", binary: filepath.Join(binDir, "k8s", "kube-scheduler"), schedulerName: "default-scheduler",
			profile: "- schedulerName: default-scheduler\n"},
		{name: "stock-mostallocated", binary: filepath.Join(binDir, "k8s", "kube-scheduler"), schedulerName: "default-scheduler",
			profile: `- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources: [{name: cpu, weight: 1}, {name: memory, weight: 1}, {name: nvidia.com/gpu, weight: 1}]
`},
		{name: "kubenexus", binary: filepath.Join(binDir, "kubenexus-scheduler"), schedulerName: schedulertest.SchedulerName,
			profile: nexus},
	}
}

type traceNode struct {
	name          string
	cpuMilli, mib int64
	gpus          int64
	model         string
}

type task struct {
	name          string
	cpuMilli, mib int64
	gpus          int64 // whole GPUs asked for (a fraction counts as one)
	fractional    bool
	milli         int64 // a fractional task's share of one GPU (gpu_milli), 0 when unknown
	models        []string
	created       int64
}

func main() {
	nodesFile := flag.String("nodes", "", "node list CSV (sn,cpu_milli,memory_mib,gpu,model)")
	podsFile := flag.String("pods", "", "pod list CSV (name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,...,creation_time,...])")
	binDir := flag.String("bin", "bin", "directory holding kubenexus-scheduler and k8s/kube-scheduler")
	out := flag.String("out", "", "results directory (default: a new one under .bench-placement/)")
	armsFlag := flag.String("arms", "stock,stock-mostallocated,kubenexus", "arms to run; "+fgdModel+" adds FGD's policy placed in-process (no scheduler) as a reference")
	flag.Int64Var(&shuffleSeed, "shuffle-seed", 0, "replay the tasks in an order shuffled with this seed (the same for every arm) instead of creation (or file) order; 0: no shuffle")
	variantsFlag := flag.String("variants", "", "replay variants of the trace instead of the trace itself: \"name:cpu=0.1,sharing=0.6,model=0.33;...\" "+
		"(cpu: share of CPU-only tasks; sharing, model: shares of GPU tasks that share a GPU or require one GPU model; a key left out keeps the trace's)")
	variantSeed := flag.Int64("variant-seed", 1, "seed of the first variant (the n-th uses seed+n-1)")
	flag.BoolVar(&wholeGPUs, "whole-gpus", false, "give nodes nvidia.com/gpu and round a fraction of a GPU up to a whole one, as before GPU sharing was modelled (default: GPUs shared through DRA)")
	replotFlag := flag.String("replot", "", "draw allocation.png and fragmentation.png into -out from these comma-separated allocation.csv files (several runs' arms in one plot) and exit")
	scenario := flag.String("scenario", "", "replay a built-in scenario instead of a trace: nvl72 (12 NVLink domains of 18 four-GPU nodes, a stream of single-node and CPU-only pods, then domain-sized gangs); "+
		"eta (gangs of the -pods trace's shapes and runtimes arrive on 8 eight-GPU nodes; the estimated start of each, with and without the queue model, against its real start)")
	etaGangs := flag.Int("eta-gangs", 120, "gangs the eta scenario submits")
	scenarioSeed := flag.Int64("scenario-seed", 1, "seed of the scenario's stream order")
	flag.IntVar(&verbosity, "v", 1, "log verbosity of the schedulers (their logs are kept in the control plane's directory)")
	flag.StringVar(&cpuProfileDir, "cpuprofile", "", "directory to write a 30s CPU profile of each arm's scheduler into, taken from its 300th task on")
	flag.Parse()
	if cpuProfileDir != "" {
		if err := os.MkdirAll(cpuProfileDir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "bench-placement:", err)
			os.Exit(1)
		}
	}
	if *replotFlag != "" {
		if err := replot(*out, filepath.Base(*podsFile), strings.Split(*replotFlag, ",")); err != nil {
			fmt.Fprintln(os.Stderr, "bench-placement:", err)
			os.Exit(1)
		}
		return
	}
	if *scenario != "" {
		var err error
		switch *scenario {
		case "nvl72":
			err = runDomains(*binDir, *out, strings.Split(*armsFlag, ","), *scenarioSeed)
		case "eta":
			err = runETA(*binDir, *out, *podsFile, *etaGangs, *scenarioSeed)
		default:
			fmt.Fprintf(os.Stderr, "bench-placement: -scenario %q: the scenarios are nvl72 and eta\n", *scenario)
			os.Exit(2)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench-placement:", err)
			os.Exit(1)
		}
		return
	}
	variants, err := parseVariants(*variantsFlag, *variantSeed)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-placement:", err)
		os.Exit(2)
	}
	if err := run(*nodesFile, *podsFile, *binDir, *out, strings.Split(*armsFlag, ","), variants); err != nil {
		fmt.Fprintln(os.Stderr, "bench-placement:", err)
		os.Exit(1)
	}
}

var (
	shuffleSeed   int64
	verbosity     int
	wholeGPUs     bool
	cpuProfileDir string
)

// benchEnv is what every replay runs in: the chosen arms, the results directory, and
// a local control plane with clients.
type benchEnv struct {
	arms  []arm
	out   string
	plane *adminkube.ControlPlane
	c     client.Client
	cs    kubernetes.Interface
}

// startBench checks the chosen arms' binaries, makes the results directory (a new
// one under .bench-placement/ ending in name when out is empty) and starts the
// control plane; the caller stops env.plane.
func startBench(binDir, out, name string, armNames []string) (*benchEnv, error) {
	env := &benchEnv{out: out}
	for _, a := range arms(binDir) {
		if slicesContains(armNames, a.name) {
			if _, err := os.Stat(a.binary); err != nil {
				return nil, fmt.Errorf("arm %s needs %s: %w", a.name, a.binary, err)
			}
			env.arms = append(env.arms, a)
		}
	}
	var err error
	if env.out, err = resultsDir(out, name); err != nil {
		return nil, err
	}
	if err := testenv.RequireAssets(); err != nil {
		return nil, err
	}
	plane, err := adminkube.Start([]string{testenv.CRDPath()}, "kubenexus-bench-placement-", "bench-placement")
	if err != nil {
		return nil, err
	}
	cfg := plane.Config
	cfg.QPS, cfg.Burst = 5000, 5000
	c, err := client.New(cfg, client.Options{Scheme: controllers.NewScheme()})
	if err != nil {
		plane.Stop()
		return nil, err
	}
	env.plane, env.c, env.cs = plane, c, kubernetes.NewForConfigOrDie(cfg)
	return env, nil
}

// resultsDir makes the results directory: out, or a new one under .bench-placement/
// ending in name when out is empty.
func resultsDir(out, name string) (string, error) {
	if out == "" {
		out = filepath.Join(".bench-placement", time.Now().Format("20060102-150405")+"-"+name)
	}
	return out, os.MkdirAll(out, 0o755)
}

func run(nodesFile, podsFile, binDir, out string, armNames []string, variants []variant) error {
	ctx := context.Background()
	nodes, err := readNodes(nodesFile)
	if err != nil {
		return err
	}
	tasks, err := readTasks(podsFile)
	if err != nil {
		return err
	}
	var totalGPUs int64
	for _, n := range nodes {
		totalGPUs += n.gpus
	}
	name := strings.TrimSuffix(filepath.Base(podsFile), ".csv")
	model := slicesContains(armNames, fgdModel)
	if model && len(variants) == 0 && len(slices.DeleteFunc(slices.Clone(armNames), func(a string) bool { return a == fgdModel })) == 0 {
		// The model alone needs no control plane.
		if out, err = resultsDir(out, name); err != nil {
			return err
		}
		fmt.Printf("trace %s: %d nodes, %d GPUs; %d tasks in %s\n", nodesFile, len(nodes), totalGPUs, len(tasks), podsFile)
		return write(out, nodesFile, podsFile, totalGPUs, []result{replayModel(nodes, tasks, totalGPUs)})
	}
	env, err := startBench(binDir, out, name, armNames)
	if err != nil {
		return err
	}
	defer env.plane.Stop()
	chosen, out, c, cs := env.arms, env.out, env.c, env.cs
	dir, kcPath := env.plane.Dir, env.plane.Kubeconfig

	fmt.Printf("trace %s: %d nodes, %d GPUs; %d tasks in %s\n", nodesFile, len(nodes), totalGPUs, len(tasks), podsFile)
	if err := testutil.Parallel(len(nodes), func(i int) error {
		n := nodes[i]
		w := testutil.MakeNode(n.name).Capacity("cpu", fmt.Sprintf("%dm", n.cpuMilli), "memory", fmt.Sprintf("%dMi", n.mib), "pods", "512")
		if n.gpus > 0 {
			w = w.Label(v1alpha1.LabelGPUProduct, n.model)
			if wholeGPUs {
				w = w.Capacity("cpu", fmt.Sprintf("%dm", n.cpuMilli), "memory", fmt.Sprintf("%dMi", n.mib), "pods", "512", string(gpu), strconv.FormatInt(n.gpus, 10))
			}
		}
		obj := w.Obj()
		if err := c.Create(ctx, obj); err != nil {
			return err
		}
		obj.Spec.Taints = nil
		if err := c.Update(ctx, obj); err != nil {
			return err
		}
		if n.gpus > 0 && !wholeGPUs {
			return c.Create(ctx, gpuSlice(n))
		}
		return nil
	}); err != nil {
		return err
	}
	if !wholeGPUs {
		// The class backs nvidia.com/gpu (extended resources backed by DRA, GA in
		// 1.37): kubenexus's plugins that tell GPU nodes by their GPU resources
		// (WorkloadAware keeps CPU-only pods off them) see these nodes as GPU nodes,
		// and ResourceFragmentation takes the class's devices as GPUs.
		if err := c.Create(ctx, &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: gpuDriver}, Spec: resourceapi.DeviceClassSpec{
			ExtendedResourceName: ptr.To(string(gpu)),
			Selectors:            []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", gpuDriver)}}}}}); err != nil {
			return err
		}
	}

	if len(variants) == 0 {
		results, err := replayArms(ctx, c, cs, dir, kcPath, chosen, nodes, tasks, totalGPUs)
		if err != nil {
			return err
		}
		if model {
			results = append(results, replayModel(nodes, tasks, totalGPUs))
		}
		return write(out, nodesFile, podsFile, totalGPUs, results)
	}
	all := map[string][]result{}
	for _, v := range variants {
		fmt.Printf("variant %s\n", v)
		vtasks := v.apply(tasks, nodes)
		results, err := replayArms(ctx, c, cs, dir, kcPath, chosen, nodes, vtasks, totalGPUs)
		if err != nil {
			return fmt.Errorf("variant %s: %w", v.name, err)
		}
		if model {
			results = append(results, replayModel(nodes, vtasks, totalGPUs))
		}
		vout := filepath.Join(out, v.name)
		if err := os.MkdirAll(vout, 0o755); err != nil {
			return err
		}
		if err := write(vout, nodesFile, podsFile+" as "+v.String(), totalGPUs, results); err != nil {
			return err
		}
		all[v.name] = results
	}
	return writeVariants(out, variants, all)
}

// replayArms replays the tasks through each arm in turn.
func replayArms(ctx context.Context, c client.Client, cs kubernetes.Interface, dir, kcPath string, arms []arm, nodes []traceNode, tasks []task, totalGPUs int64) ([]result, error) {
	var results []result
	for _, a := range arms {
		r, err := replay(ctx, c, cs, dir, kcPath, a, nodes, tasks, totalGPUs)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a.name, err)
		}
		results = append(results, r)
	}
	return results, nil
}

// point is the allocation after one GPU task arrived: arrived demand and allocated
// GPUs in percent of the cluster's GPUs, and the cluster's fragmented GPUs (FGD's
// measure against the trace's task mix; -1 where not measured: once per percent of
// demand).
type point struct{ arrived, allocated, fragmented float64 }

type result struct {
	arm                  string
	tasks, failed        int
	gpuFailed            int
	firstFailUnalloc     int64 // thousandths of a GPU; -1: no GPU task failed
	firstFail            string
	at80, at90, at100    float64
	frag90               float64    // fragmented GPUs at 90% demand, -1: not reached
	frag90Nodes          [][]string // per GPU node at 90% demand (usage.nodeRows)
	packedShares90       float64    // the shares arrived by 90% demand packed with hindsight (packedShares)
	largest8             int64
	podsPerSec           float64
	curve                []point
	fractionalTasks      int
	allocatedMilliAtStop int64
	failures             []failure
}

// failure is a refused task and the scheduler's reason.
type failure struct {
	task             task
	unallocatedMilli int64 // thousandths of a GPU unallocated in the cluster when it was refused
	message          string
}

func replay(ctx context.Context, c client.Client, cs kubernetes.Interface, dir, kcPath string, a arm, nodes []traceNode, tasks []task, totalGPUs int64) (result, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "replay-" + a.name + "-"}}
	if err := c.Create(ctx, ns); err != nil {
		return result{}, err
	}
	defer func() {
		_ = c.DeleteAllOf(context.Background(), &corev1.Pod{}, client.InNamespace(ns.Name), client.GracePeriodSeconds(0))
	}()

	outcomes, stop, err := watchOutcomes(cs, ns.Name)
	if err != nil {
		return result{}, err
	}
	defer close(stop)
	logPath, port, kill, err := startArm(dir, kcPath, a)
	if err != nil {
		return result{}, err
	}
	defer kill()

	defer func() {
		if err := releaseClaims(context.Background(), c, ns.Name); err != nil {
			fmt.Fprintf(os.Stderr, "%s: releasing claims: %v\n", a.name, err)
		}
	}()
	y := newTally(a.name, nodes, tasks, totalGPUs)
	fmt.Printf("%s: replaying until %d GPUs are asked for\n", a.name, totalGPUs)
	err = y.each(tasks, func(t task) error {
		if port != 0 && y.r.tasks == 300 {
			go func() {
				if err := testenv.FetchCPUProfile(port, 30, filepath.Join(cpuProfileDir, a.name+".pprof")); err != nil {
					fmt.Fprintln(os.Stderr, "bench-placement: CPU profile:", err)
				}
			}()
		}
		ch := outcomes.expect(t.name)
		pod := podOf(t, ns.Name, a.schedulerName)
		if claim := claimOf(t, ns.Name); claim != nil {
			if err := c.Create(ctx, claim); err != nil {
				return fmt.Errorf("creating the claim of %s: %w", t.name, err)
			}
		}
		if err := c.Create(ctx, pod); err != nil {
			return fmt.Errorf("creating %s: %w", t.name, err)
		}
		var o outcome
		select {
		case o = <-ch:
		case <-time.After(2 * time.Minute):
			return fmt.Errorf("%s: neither bound nor refused in 2 minutes (log %s)", t.name, logPath)
		}
		if o.failed {
			y.refused(t, o.message)
			if err := c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: t.name}}, client.GracePeriodSeconds(0)); err != nil {
				return err
			}
			if err := client.IgnoreNotFound(c.Delete(ctx, &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: t.name}})); err != nil {
				return err
			}
		} else {
			if err := y.usage.bind(ctx, c, ns.Name, o.node, t); err != nil {
				return err
			}
			y.placed(t)
		}
		y.arrive(t)
		return nil
	})
	if err != nil {
		return result{}, err
	}
	return y.finish(), nil
}

// outcome is where a pod went: bound to node, or refused with the scheduler's
// message.
type outcome struct {
	node, message string
	failed        bool
}

// outcomes follows the pods of one namespace and hands each expected pod's first
// outcome to its channel.
type outcomes struct {
	mu      sync.Mutex
	waiting map[string]chan outcome
}

// watchOutcomes starts an informer on the namespace's pods; close the returned
// channel to stop it.
func watchOutcomes(cs kubernetes.Interface, ns string) (*outcomes, chan struct{}, error) {
	o := &outcomes{waiting: map[string]chan outcome{}}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: o.notify, UpdateFunc: func(_, p any) { o.notify(p) }}); err != nil {
		return nil, nil, err
	}
	stop := make(chan struct{})
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	return o, stop, nil
}

// expect returns the channel the pod's outcome will arrive on.
func (o *outcomes) expect(name string) chan outcome {
	ch := make(chan outcome, 1)
	o.mu.Lock()
	o.waiting[name] = ch
	o.mu.Unlock()
	return ch
}

func (o *outcomes) notify(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	var out outcome
	switch {
	case p.Spec.NodeName != "":
		out.node = p.Spec.NodeName
	default:
		refused := false
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
				refused, out.message = true, cond.Message
			}
		}
		if !refused {
			return
		}
		out.failed = true
	}
	o.mu.Lock()
	ch := o.waiting[p.Name]
	delete(o.waiting, p.Name)
	o.mu.Unlock()
	if ch != nil {
		ch <- out
	}
}

// startArm runs the arm's scheduler binary against the control plane, logging to
// <dir>/<arm>.log; kill stops it.
// startArm starts the arm's scheduler; port is its secure port (0: none, unless
// -cpuprofile asks for profiles).
func startArm(dir, kcPath string, a arm) (logPath string, port int, kill func(), err error) {
	cfgPath := filepath.Join(dir, a.name+"-config.yaml")
	if err := os.WriteFile(cfgPath, []byte(fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
clientConnection: {kubeconfig: %s, qps: 5000, burst: 5000}
profiles:
%s`, kcPath, a.profile)), 0o600); err != nil {
		return "", 0, nil, err
	}
	logPath = filepath.Join(dir, a.name+".log")
	args := []string{"--config=" + cfgPath, "--v=" + strconv.Itoa(verbosity), "--secure-port=0"}
	if cpuProfileDir != "" {
		if port, err = testenv.FreePort(); err != nil {
			return "", 0, nil, err
		}
		args[2] = "--secure-port=" + strconv.Itoa(port)
		args = append(args, "--authorization-always-allow-paths=/healthz,/readyz,/debug/pprof/profile")
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return "", 0, nil, err
	}
	cmd := exec.Command(a.binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return "", 0, nil, err
	}
	return logPath, port, func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); logFile.Close() }, nil
}

func podOf(t task, ns, schedulerName string) *corev1.Pod {
	req := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(t.cpuMilli, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(t.mib<<20, resource.BinarySI),
	}
	lim := corev1.ResourceList{}
	if t.gpus > 0 && wholeGPUs {
		req[gpu] = *resource.NewQuantity(t.gpus, resource.DecimalSI)
		lim[gpu] = req[gpu]
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: t.name, Namespace: ns},
		Spec: corev1.PodSpec{SchedulerName: schedulerName, Containers: []corev1.Container{{
			Name: "task", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}}},
	}
	if t.gpus > 0 && !wholeGPUs {
		p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To(t.name)}}
		p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	}
	if len(t.models) > 0 {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: v1alpha1.LabelGPUProduct, Operator: corev1.NodeSelectorOpIn, Values: t.models}}}}}}}
	}
	return p
}

func pct(n, total int64) float64 { return 100 * float64(n) / float64(total) }

func readNodes(path string) ([]traceNode, error) {
	rows, err := etabench.ReadCSV(path)
	if err != nil {
		return nil, err
	}
	var out []traceNode
	for _, row := range rows {
		n := traceNode{name: strings.ToLower(row["sn"]), model: row["model"]}
		var err error
		if n.cpuMilli, err = etabench.Number(path, row, "cpu_milli"); err != nil {
			return nil, err
		}
		if n.mib, err = etabench.Number(path, row, "memory_mib"); err != nil {
			return nil, err
		}
		if n.gpus, err = etabench.Number(path, row, "gpu"); err != nil {
			return nil, err
		}
		if n.name == "" {
			return nil, fmt.Errorf("%s:%s: column sn is empty", path, row["#line"])
		}
		out = append(out, n)
	}
	return out, nil
}

func readTasks(path string) ([]task, error) {
	rows, err := etabench.ReadCSV(path)
	if err != nil {
		return nil, err
	}
	var out []task
	for _, row := range rows {
		t := task{name: strings.ToLower(row["name"])}
		var err error
		if t.cpuMilli, err = etabench.Number(path, row, "cpu_milli"); err != nil {
			return nil, err
		}
		if t.mib, err = etabench.Number(path, row, "memory_mib"); err != nil {
			return nil, err
		}
		if t.gpus, err = etabench.Number(path, row, "num_gpu"); err != nil {
			return nil, err
		}
		milli, err := etabench.Number(path, row, "gpu_milli")
		if err != nil {
			return nil, err
		}
		if t.gpus > 0 && milli > 0 && milli < 1000 {
			t.fractional, t.milli = true, milli
		}
		if t.created, err = etabench.Number(path, row, "creation_time"); err != nil {
			return nil, err
		}
		if spec := row["gpu_spec"]; spec != "" {
			t.models = strings.Split(spec, "|")
		}
		out = append(out, t)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].created < out[j].created })
	if shuffleSeed != 0 {
		rand.New(rand.NewSource(shuffleSeed)).Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	}
	return out, nil
}

func slicesContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
