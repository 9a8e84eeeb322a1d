package main

// The eta scenario measures how close the start the manager forecasts for a gang
// (kubenexus.io/estimated-start, estimatedstart.Estimator) comes to when the gang
// really starts: gangs whose shapes and runtimes come from the trace arrive at
// random (seeded) on a fleet of 8-GPU nodes, kubenexus-scheduler places them, and
// the harness plays the kubelet: a bound pod starts, and ends when its runtime
// (its activeDeadlineSeconds) is over. Each gang's estimate is read right after it
// is submitted, with the queue model (the annotation) and without it (the earliest
// start the gang alone would have: Cluster.Forecast with nothing ahead), and set
// against the moment its last member is bound.

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/controllers/estimatedstart"
	"github.com/kube-nexus/kubenexus/controllers/feasibility"
	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/schedulertest"
)

// The fleet and the stream of the eta scenario.
const (
	etaRacks        = 2
	etaNodesPerRack = 4
	etaNodeGPUs     = 8
	etaMinRuntime   = 10 * time.Second
	etaMaxRuntime   = 120 * time.Second
	// etaLoad is the GPU-seconds that arrive per GPU-second of the fleet while gangs
	// arrive: above 1, so that a queue builds.
	etaLoad = 1.5
	// etaMinWait is the shortest real wait whose error is counted relative to it:
	// a gang that starts at once has no wait to be wrong about.
	etaMinWait = 5 * time.Second
)

// etaGang is one gang of the stream.
type etaGang struct {
	name          string
	size          int
	cpuMilli, mib int64
	gpus          int64
	rack          bool // a PodGroup that requires one rack
	runtime       time.Duration
	arrive        time.Duration // after the stream's start
}

// etaStream draws n gangs from the trace's whole-GPU tasks with seed: each gang's
// members have one task's shape; the task's runtime (deletion − scheduled) becomes
// 10–120 s by its rank among them; the gang size is 1, 2 or 4 (at most one rack's
// GPUs); a third of the gangs of more than one member require one rack; arrivals are
// a Poisson stream at etaLoad times the fleet's GPUs.
func etaStream(podsFile string, n int, seed int64) ([]etaGang, error) {
	rows, err := readCSV(podsFile)
	if err != nil {
		return nil, err
	}
	type src struct {
		cpu, mib, gpus int64
		dur            int64
	}
	var tasks []src
	for _, row := range rows {
		var t src
		var milli, created, deleted, scheduled int64
		for col, v := range map[string]*int64{"cpu_milli": &t.cpu, "memory_mib": &t.mib, "num_gpu": &t.gpus, "gpu_milli": &milli,
			"creation_time": &created, "deletion_time": &deleted, "scheduled_time": &scheduled} {
			if *v, err = number(podsFile, row, col); err != nil {
				return nil, err
			}
		}
		start := max(scheduled, created)
		if t.gpus < 1 || t.gpus > etaNodeGPUs || milli != 1000 || deleted <= start {
			continue
		}
		t.dur = deleted - start
		tasks = append(tasks, t)
	}
	if len(tasks) < n {
		return nil, fmt.Errorf("%s: %d whole-GPU tasks with a runtime, %d gangs asked for", podsFile, len(tasks), n)
	}
	// Runtimes by rank: the shortest task 10 s, the longest 120 s.
	durs := make([]int64, len(tasks))
	for i, t := range tasks {
		durs[i] = t.dur
	}
	sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
	rankOf := func(d int64) float64 {
		return float64(sort.Search(len(durs), func(i int) bool { return durs[i] >= d })) / float64(len(durs)-1)
	}
	rng := rand.New(rand.NewSource(seed))
	rng.Shuffle(len(tasks), func(i, j int) { tasks[i], tasks[j] = tasks[j], tasks[i] })
	out := make([]etaGang, n)
	var work float64 // GPU-seconds
	for i := range out {
		t := tasks[i]
		size := []int{1, 1, 2, 2, 4}[rng.Intn(5)]
		for int64(size)*t.gpus > etaNodesPerRack*etaNodeGPUs {
			size /= 2
		}
		g := etaGang{name: fmt.Sprintf("eta-%03d", i), size: size, cpuMilli: min(t.cpu, 16000*t.gpus), mib: min(t.mib, 131072*t.gpus), gpus: t.gpus,
			rack:    size > 1 && rng.Intn(3) == 0,
			runtime: etaMinRuntime + time.Duration(rankOf(t.dur)*float64(etaMaxRuntime-etaMinRuntime)).Round(time.Second)}
		work += float64(int64(size)*t.gpus) * g.runtime.Seconds()
		out[i] = g
	}
	fleet := float64(etaRacks * etaNodesPerRack * etaNodeGPUs)
	mean := work / (fleet * etaLoad) / float64(n) // seconds between arrivals
	var at float64
	for i := range out {
		out[i].arrive = time.Duration(at * float64(time.Second))
		at += rng.ExpFloat64() * mean
	}
	return out, nil
}

// etaRecord is what the harness saw of one gang.
type etaRecord struct {
	g         etaGang
	submitted time.Time
	depth     int // gangs waiting when it was submitted
	queued    estimate
	alone     estimate
	started   time.Time // its last member bound (zero: never)
}

type estimate struct {
	ok bool
	at time.Time
}

// etaKubelet plays the kubelet for the namespace's pods: a pod bound starts then
// (status.startTime, phase Running) and is deleted when its activeDeadlineSeconds
// after that are over; the bind times are kept per pod.
type etaKubelet struct {
	c     client.Client
	ns    string
	mu    sync.Mutex
	bound map[string]time.Time
	errs  []error
}

func (k *etaKubelet) notify(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok || p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
		return
	}
	k.mu.Lock()
	if _, seen := k.bound[p.Name]; seen {
		k.mu.Unlock()
		return
	}
	now := time.Now()
	k.bound[p.Name] = now
	k.mu.Unlock()
	go func() {
		start := metav1.NewTime(now.Truncate(time.Second))
		patched := p.DeepCopy()
		patched.Status.StartTime = &start
		patched.Status.Phase = corev1.PodRunning
		ctx := context.Background()
		if err := k.c.Status().Patch(ctx, patched, client.MergeFrom(p)); err != nil {
			k.fail(fmt.Errorf("starting %s: %w", p.Name, err))
			return
		}
		runtime := time.Duration(ptr.Deref(p.Spec.ActiveDeadlineSeconds, 0)) * time.Second
		time.Sleep(time.Until(start.Add(runtime)))
		if err := k.c.Delete(ctx, p, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
			k.fail(fmt.Errorf("ending %s: %w", p.Name, err))
		}
	}()
}

func (k *etaKubelet) fail(err error) {
	k.mu.Lock()
	k.errs = append(k.errs, err)
	k.mu.Unlock()
}

// startOf is when the gang's last member was bound (zero: not all are).
func (k *etaKubelet) startOf(g etaGang) time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	var last time.Time
	for i := range g.size {
		t, ok := k.bound[fmt.Sprintf("%s-%d", g.name, i)]
		if !ok {
			return time.Time{}
		}
		if t.After(last) {
			last = t
		}
	}
	return last
}

func runETA(binDir, out, podsFile string, gangs int, seed int64) error {
	ctx := context.Background()
	stream, err := etaStream(podsFile, gangs, seed)
	if err != nil {
		return err
	}
	env, err := startBench(binDir, out, "eta", []string{"kubenexus"})
	if err != nil {
		return err
	}
	defer env.plane.Stop()
	c := env.c
	fmt.Printf("eta: %d gangs on %d racks of %d nodes × %d GPUs, seed %d\n", len(stream), etaRacks, etaNodesPerRack, etaNodeGPUs, seed)
	if err := createNodes(ctx, c, etaRacks*etaNodesPerRack, func(i int) *corev1.Node {
		r, k := i/etaNodesPerRack, i%etaNodesPerRack
		return testutil.MakeNode(fmt.Sprintf("eta-r%d-n%d", r, k)).
			Capacity("cpu", "256", "memory", "2048Gi", "pods", "110", string(gpu), fmt.Sprint(etaNodeGPUs)).
			Label(v1alpha1.LabelRack, fmt.Sprintf("rack-%d", r)).Obj()
	}); err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "eta"}}
	if err := c.Create(ctx, ns); err != nil {
		return err
	}
	kubelet := &etaKubelet{c: c, ns: ns.Name, bound: map[string]time.Time{}}
	factory := informers.NewSharedInformerFactoryWithOptions(env.cs, 0, informers.WithNamespace(ns.Name))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: kubelet.notify, UpdateFunc: func(_, p any) { kubelet.notify(p) }}); err != nil {
		return err
	}
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	a := arm{name: "kubenexus", binary: filepath.Join(binDir, "kubenexus-scheduler"), schedulerName: schedulertest.SchedulerName,
		// The operator's defaults: a rejected gang backs off 10 s; members wait 60 s at Permit.
		profile: schedulertest.KubeNexusProfile(schedulertest.SchedulerName, 10, 60)}
	logPath, _, kill, err := startArm(env.plane.Dir, env.plane.Kubeconfig, a)
	if err != nil {
		return err
	}
	defer kill()

	est := &estimatedstart.Estimator{Client: c}
	records := make([]*etaRecord, len(stream))
	began := time.Now()
	for i, g := range stream {
		time.Sleep(time.Until(began.Add(g.arrive)))
		depth := 0
		for _, r := range records[:i] {
			if kubelet.startOf(r.g).IsZero() {
				depth++
			}
		}
		rec, err := submitETA(ctx, c, est, ns.Name, g)
		if err != nil {
			return fmt.Errorf("%s: %w (scheduler log %s)", g.name, err, logPath)
		}
		rec.depth = depth
		records[i] = rec
		if (i+1)%20 == 0 {
			fmt.Printf("eta: %d of %d gangs submitted, %d waiting\n", i+1, len(stream), depth)
		}
	}
	// Every gang fits the fleet: wait for the last to start.
	deadline := time.Now().Add(20 * time.Minute)
	for _, r := range records {
		for r.started = kubelet.startOf(r.g); r.started.IsZero(); r.started = kubelet.startOf(r.g) {
			if time.Now().After(deadline) {
				return fmt.Errorf("%s did not start within 20 minutes of the last arrival (scheduler log %s)", r.g.name, logPath)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	kubelet.mu.Lock()
	errs := kubelet.errs
	kubelet.mu.Unlock()
	if len(errs) > 0 {
		return fmt.Errorf("the harness's kubelet: %v", errs[0])
	}
	// The scheduler's log goes with the results (the control plane's directory is
	// removed).
	if raw, err := os.ReadFile(logPath); err == nil {
		_ = os.WriteFile(filepath.Join(env.out, "kubenexus-scheduler.log"), raw, 0o644)
	}
	return writeETA(env.out, podsFile, seed, records)
}

// submitETA creates the gang's PodGroup and pods and reads both estimates at once.
func submitETA(ctx context.Context, c client.Client, est *estimatedstart.Estimator, ns string, g etaGang) (*etaRecord, error) {
	pgw := testutil.MakePodGroup(g.name, ns).MinMember(int32(g.size))
	if g.rack {
		pgw = pgw.NetworkTopology(v1alpha1.NetworkTopologyRequired, v1alpha1.NetworkLevelRack)
	}
	pg := pgw.Obj()
	if err := c.Create(ctx, pg); err != nil {
		return nil, err
	}
	rec := &etaRecord{g: g, submitted: time.Now()}
	for i := range g.size {
		req := corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(g.cpuMilli, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(g.mib<<20, resource.BinarySI), gpu: *resource.NewQuantity(g.gpus, resource.DecimalSI)}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", g.name, i), Namespace: ns, Labels: map[string]string{v1alpha1.LabelPodGroup: g.name}},
			Spec: corev1.PodSpec{SchedulerName: schedulertest.SchedulerName, ActiveDeadlineSeconds: ptr.To(int64(g.runtime.Seconds())),
				Containers: []corev1.Container{{Name: "task", Image: "registry.k8s.io/pause:3.10",
					Resources: corev1.ResourceRequirements{Requests: req, Limits: corev1.ResourceList{gpu: req[gpu]}}}}}}
		if err := c.Create(ctx, pod); err != nil {
			return nil, err
		}
	}
	now := time.Now()
	// Without the queue model: the earliest start of the gang alone.
	cl, pods, err := feasibility.Read(ctx, c)
	if err != nil {
		return nil, err
	}
	key := gang.Key{Namespace: ns, Name: g.name}
	alone := feasibility.Gang{Key: &key, PodGroup: pg}
	for i := range pods {
		if pods[i].Namespace == ns && pods[i].Labels[v1alpha1.LabelPodGroup] == g.name {
			alone.Members = append(alone.Members, pods[i])
		}
	}
	for i := range alone.Members {
		if feasibility.Waiting(&alone.Members[i]) {
			alone.Pending = append(alone.Pending, &alone.Members[i])
		}
	}
	if len(alone.Pending) == 0 {
		rec.alone = estimate{true, now} // bound already
	} else if f := cl.Forecast(cl.WorkloadOf(&alone, len(alone.Pending), nil, ""), nil, now); f.OK {
		rec.alone = estimate{true, f.Start}
	}
	// With it: the annotation the manager keeps.
	if err := est.Refresh(ctx); err != nil {
		return nil, err
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pg), pg); err != nil {
		return nil, err
	}
	switch v := pg.Annotations[v1alpha1.AnnotationEstimatedStart]; v {
	case "":
		rec.queued = estimate{true, now} // no longer waiting: bound already
	case estimatedstart.Unknown:
	default:
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", v1alpha1.AnnotationEstimatedStart, err)
		}
		rec.queued = estimate{true, t}
	}
	return rec, nil
}

// etaBuckets are the queue depths the report groups gangs by.
var etaBuckets = []struct {
	name     string
	min, max int
}{{"0", 0, 0}, {"1–4", 1, 4}, {"5–14", 5, 14}, {"15+", 15, math.MaxInt}}

// relErr is |estimate − start| / wait; +Inf when there is no estimate.
func relErr(e estimate, start, submitted time.Time) float64 {
	if !e.ok {
		return math.Inf(1)
	}
	return math.Abs(e.at.Sub(start).Seconds()) / start.Sub(submitted).Seconds()
}

func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[int(math.Ceil(q*float64(len(s))))-1]
}

func writeETA(out, podsFile string, seed int64, records []*etaRecord) error {
	var rows [][]string
	type errs struct{ queued, alone []float64 }
	byBucket := make([]errs, len(etaBuckets))
	var all errs
	atOnce := 0
	for _, r := range records {
		wait := r.started.Sub(r.submitted)
		rows = append(rows, []string{r.g.name, fmt.Sprint(r.g.size), fmt.Sprint(r.g.gpus), fmt.Sprint(r.g.rack), fmt.Sprint(r.g.runtime.Seconds()),
			fmt.Sprint(r.depth), fmt.Sprintf("%.1f", wait.Seconds()), offset(r.queued, r.submitted), offset(r.alone, r.submitted)})
		if wait < etaMinWait {
			atOnce++
			continue
		}
		q, a := relErr(r.queued, r.started, r.submitted), relErr(r.alone, r.started, r.submitted)
		all.queued, all.alone = append(all.queued, q), append(all.alone, a)
		for b, bk := range etaBuckets {
			if r.depth >= bk.min && r.depth <= bk.max {
				byBucket[b].queued = append(byBucket[b].queued, q)
				byBucket[b].alone = append(byBucket[b].alone, a)
			}
		}
	}
	if err := writeCSV(filepath.Join(out, "eta.csv"), []string{"gang", "members", "gpus_each", "rack", "runtime_s", "depth", "wait_s", "estimate_queue_s", "estimate_alone_s"}, rows); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Estimated start against the real start\n\n%d gangs (trace %s, seed %d) on %d racks of %d nodes × %d GPUs; %d started within %v of submission (not counted).\n"+
		"Error: |estimate − real start| / real wait, read when the gang was submitted; a gang with no estimate counts as an infinite error.\n\n",
		len(records), filepath.Base(podsFile), seed, etaRacks, etaNodesPerRack, etaNodeGPUs, atOnce, etaMinWait)
	b.WriteString("| queue depth at submission | gangs | median, queue model | p90, queue model | median, alone | p90, alone |\n|---|---|---|---|---|---|\n")
	line := func(name string, e errs) {
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s |\n", name, len(e.queued), pctErr(quantile(e.queued, 0.5)), pctErr(quantile(e.queued, 0.9)),
			pctErr(quantile(e.alone, 0.5)), pctErr(quantile(e.alone, 0.9)))
	}
	for i, bk := range etaBuckets {
		line(bk.name, byBucket[i])
	}
	line("all", all)
	fmt.Print(b.String())
	return os.WriteFile(filepath.Join(out, "eta.md"), []byte(b.String()), 0o644)
}

// offset is the estimate in seconds after submission ("unknown" without one).
func offset(e estimate, submitted time.Time) string {
	if !e.ok {
		return estimatedstart.Unknown
	}
	return fmt.Sprintf("%.1f", e.at.Sub(submitted).Seconds())
}

func pctErr(v float64) string {
	switch {
	case math.IsNaN(v):
		return "—"
	case math.IsInf(v, 1):
		return "no estimate"
	}
	return fmt.Sprintf("%.0f%%", 100*v)
}
