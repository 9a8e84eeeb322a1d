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
	"os"
	"path/filepath"
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
	"github.com/kube-nexus/kubenexus/test/util/etabench"
	"github.com/kube-nexus/kubenexus/test/util/schedulertest"
)

// The fleet and the stream of the eta scenario.
const (
	etaRacks        = 2
	etaNodesPerRack = 4
	etaNodeGPUs     = 8
	// etaLoad is the GPU-seconds that arrive per GPU-second of the fleet while gangs
	// arrive: above 1, so that a queue builds.
	etaLoad = 1.5
)

var etaFleet = etabench.Fleet{Racks: etaRacks, NodesPerRack: etaNodesPerRack, NodeGPUs: etaNodeGPUs}

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
func (k *etaKubelet) startOf(g etabench.Gang) time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return etabench.LastBound(k.bound, g)
}

func runETA(binDir, out, podsFile string, gangs int, seed int64) error {
	ctx := context.Background()
	stream, err := etabench.Stream(podsFile, gangs, seed, etaFleet, etaFleet.GPUs(), etaLoad)
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
	records := make([]*etabench.Record, len(stream))
	began := time.Now()
	for i, g := range stream {
		time.Sleep(time.Until(began.Add(g.Arrive)))
		depth := 0
		for _, r := range records[:i] {
			if kubelet.startOf(r.Gang).IsZero() {
				depth++
			}
		}
		rec, err := submitETA(ctx, c, est, ns.Name, g)
		if err != nil {
			return fmt.Errorf("%s: %w (scheduler log %s)", g.Name, err, logPath)
		}
		rec.Depth = depth
		records[i] = rec
		if (i+1)%20 == 0 {
			fmt.Printf("eta: %d of %d gangs submitted, %d waiting\n", i+1, len(stream), depth)
		}
	}
	// Every gang fits the fleet: wait for the last to start.
	deadline := time.Now().Add(20 * time.Minute)
	for _, r := range records {
		for r.Started = kubelet.startOf(r.Gang); r.Started.IsZero(); r.Started = kubelet.startOf(r.Gang) {
			if time.Now().After(deadline) {
				return fmt.Errorf("%s did not start within 20 minutes of the last arrival (scheduler log %s)", r.Gang.Name, logPath)
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
	_, err = etabench.Write(env.out, fmt.Sprintf("# Estimated start against the real start\n\n%d gangs (trace %s, seed %d) on %d racks of %d nodes × %d GPUs",
		len(records), filepath.Base(podsFile), seed, etaRacks, etaNodesPerRack, etaNodeGPUs), []string{"queue model", "alone"}, records)
	return err
}

// submitETA creates the gang's PodGroup and pods and reads both estimates at once.
func submitETA(ctx context.Context, c client.Client, est *estimatedstart.Estimator, ns string, g etabench.Gang) (*etabench.Record, error) {
	pgw := testutil.MakePodGroup(g.Name, ns).MinMember(int32(g.Size))
	if g.Rack {
		pgw = pgw.NetworkTopology(v1alpha1.NetworkTopologyRequired, v1alpha1.NetworkLevelRack)
	}
	pg := pgw.Obj()
	if err := c.Create(ctx, pg); err != nil {
		return nil, err
	}
	rec := &etabench.Record{Gang: g, Submitted: time.Now(), Estimates: make([]etabench.Estimate, 2)}
	queued, alone := &rec.Estimates[0], &rec.Estimates[1]
	for i := range g.Size {
		req := corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(g.CPUMilli, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(g.MiB<<20, resource.BinarySI), gpu: *resource.NewQuantity(g.GPUs, resource.DecimalSI)}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", g.Name, i), Namespace: ns, Labels: map[string]string{v1alpha1.LabelPodGroup: g.Name}},
			Spec: corev1.PodSpec{SchedulerName: schedulertest.SchedulerName, ActiveDeadlineSeconds: ptr.To(int64(g.Runtime.Seconds())),
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
	key := gang.Key{Namespace: ns, Name: g.Name}
	aloneGang := feasibility.Gang{Key: &key, PodGroup: pg}
	for i := range pods {
		if pods[i].Namespace == ns && pods[i].Labels[v1alpha1.LabelPodGroup] == g.Name {
			aloneGang.Members = append(aloneGang.Members, pods[i])
		}
	}
	for i := range aloneGang.Members {
		if feasibility.Waiting(&aloneGang.Members[i]) {
			aloneGang.Pending = append(aloneGang.Pending, &aloneGang.Members[i])
		}
	}
	if len(aloneGang.Pending) == 0 {
		*alone = etabench.Estimate{OK: true, At: now} // bound already
	} else if f := cl.Forecast(cl.WorkloadOf(&aloneGang, len(aloneGang.Pending), nil, ""), nil, now); f.OK {
		*alone = etabench.Estimate{OK: true, At: f.Start}
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
		*queued = etabench.Estimate{OK: true, At: now} // no longer waiting: bound already
	case estimatedstart.Unknown:
	default:
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", v1alpha1.AnnotationEstimatedStart, err)
		}
		*queued = etabench.Estimate{OK: true, At: t}
	}
	return rec, nil
}
