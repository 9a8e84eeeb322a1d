package demo

// The Kueue ETA scenario measures the estimated start of Kueue Workloads waiting for
// quota (kubenexus.io/estimated-start on the Workload, estimatedstart.Estimator)
// against when their pods really start: gangs drawn from the trace
// (etabench.Stream) are submitted as Kueue Workloads to one ClusterQueue whose GPU
// quota is three quarters of the fleet's, the real Kueue admits them, the harness
// plays their job controller (it creates the gang's pods once Kueue admits the
// Workload, and marks the Workload Finished once they end), kubenexus-scheduler
// places the pods and kwok runs them for their activeDeadlineSeconds.

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/controllers/estimatedstart"
	"github.com/kube-nexus/kubenexus/controllers/feasibility"
	"github.com/kube-nexus/kubenexus/test/util/etabench"
)

// The Kueue ETA scenario's fleet, quota and names.
const (
	etaNamespace = "eta"
	etaQueue     = "eta"
	etaQuotaGPUs = 48
	// etaLoad is the GPU-seconds that arrive per GPU-second of the quota.
	etaLoad = 1.5
)

var etaFleet = etabench.Fleet{Racks: 2, NodesPerRack: 4, NodeGPUs: 8}

// RunKueueETA starts a cluster with Kueue, submits gangs Workloads drawn from
// podsFile with seed, waits until each has started, and writes the accuracy report
// (etabench.Write) under out: the estimate with Kueue's queues played, and without
// (the Workload forecast as if admitted now, behind KubeNexus's queue only). It
// returns the records.
func RunKueueETA(ctx context.Context, opts Options, podsFile string, gangs int, seed int64, out string) ([]*etabench.Record, error) {
	stream, err := etabench.Stream(podsFile, gangs, seed, etaFleet, etaQuotaGPUs, etaLoad)
	if err != nil {
		return nil, err
	}
	o := opts
	// The manager's own refresh is off: the harness refreshes at each submission.
	o.WithoutFrameworks, o.ManagerArgs = true, []string{"--estimated-start-interval=-1s"}
	c, err := Up(ctx, o)
	if err != nil {
		return nil, err
	}
	defer c.Down()
	if err := c.etaSetUp(ctx); err != nil {
		return nil, err
	}
	h := &etaHarness{c: c, launched: map[string]bool{}, finished: map[string]bool{}, bound: map[string]time.Time{}}
	loopCtx, stop := context.WithCancel(ctx)
	defer stop()
	loopDone := make(chan error, 1)
	go func() { loopDone <- h.loop(loopCtx) }()

	est := &estimatedstart.Estimator{Client: c.Client}
	records := make([]*etabench.Record, len(stream))
	c.logf("Kueue ETA: %d gangs on %d racks of %d nodes × %d GPUs, ClusterQueue quota %d GPUs, seed %d",
		len(stream), etaFleet.Racks, etaFleet.NodesPerRack, etaFleet.NodeGPUs, etaQuotaGPUs, seed)
	began := time.Now()
	for i, g := range stream {
		time.Sleep(time.Until(began.Add(g.Arrive)))
		depth := 0
		for _, r := range records[:i] {
			if h.startOf(r.Gang).IsZero() {
				depth++
			}
		}
		rec, err := h.submit(ctx, est, g)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", g.Name, err)
		}
		rec.Depth = depth
		records[i] = rec
		if (i+1)%20 == 0 {
			c.logf("Kueue ETA: %d of %d gangs submitted, %d waiting", i+1, len(stream), depth)
		}
	}
	err = waitFor(ctx, 20*time.Minute, func() error {
		select {
		case err := <-loopDone:
			return fmt.Errorf("the harness's job controller stopped: %w", err)
		default:
		}
		for _, r := range records {
			if r.Started = h.startOf(r.Gang); r.Started.IsZero() {
				return fmt.Errorf("%s has not started", r.Gang.Name)
			}
		}
		return nil
	})
	if err != nil {
		return records, err
	}
	_, err = etabench.Write(out, fmt.Sprintf("# Estimated start of Kueue Workloads against the real start\n\n%d gangs (trace %s, seed %d) submitted as Kueue Workloads to a ClusterQueue of %d GPUs, on %d racks of %d nodes × %d GPUs",
		len(records), filepath.Base(podsFile), seed, etaQuotaGPUs, etaFleet.Racks, etaFleet.NodesPerRack, etaFleet.NodeGPUs),
		[]string{"Kueue's queues played", "without them"}, records)
	return records, err
}

// etaSetUp creates the fleet, starts Kueue and creates the namespace, the flavor,
// the ClusterQueue and its LocalQueue.
func (c *Cluster) etaSetUp(ctx context.Context) error {
	var labels []map[string]string
	for r := range etaFleet.Racks {
		for range etaFleet.NodesPerRack {
			labels = append(labels, map[string]string{kueuePoolKey: etaNamespace, v1alpha1.LabelRack: fmt.Sprintf("eta-rack-%d", r)})
		}
	}
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("256"), corev1.ResourceMemory: resource.MustParse("2048Gi"),
		corev1.ResourcePods: resource.MustParse("110"), v1alpha1.ResourceNvidiaGPU: *resource.NewQuantity(etaFleet.NodeGPUs, resource.DecimalSI)}
	if err := c.pool(ctx, "eta", labels, kueueTaintKey, res); err != nil {
		return err
	}
	if err := c.StartKueue(ctx); err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: etaNamespace, Labels: map[string]string{v1alpha1.LabelNamespaceEnabled: "true"}}}
	if err := c.Client.Create(ctx, ns); err != nil {
		return err
	}
	flavor := &kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: etaNamespace}, Spec: kueue.ResourceFlavorSpec{
		NodeLabels:  map[string]string{kueuePoolKey: etaNamespace},
		Tolerations: []corev1.Toleration{{Key: kueueTaintKey, Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}},
	}}
	if err := c.Client.Create(ctx, flavor); err != nil {
		return err
	}
	cq := &kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: etaQueue}, Spec: kueue.ClusterQueueSpec{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: etaNamespace}},
		ResourceGroups: []kueue.ResourceGroup{{
			CoveredResources: []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, v1alpha1.ResourceNvidiaGPU},
			Flavors: []kueue.FlavorQuotas{{Name: etaNamespace, Resources: []kueue.ResourceQuota{
				{Name: corev1.ResourceCPU, NominalQuota: resource.MustParse("100000")}, {Name: corev1.ResourceMemory, NominalQuota: resource.MustParse("100Ti")},
				{Name: v1alpha1.ResourceNvidiaGPU, NominalQuota: *resource.NewQuantity(etaQuotaGPUs, resource.DecimalSI)},
			}}},
		}},
	}}
	if err := c.Client.Create(ctx, cq); err != nil {
		return err
	}
	if err := c.Client.Create(ctx, &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Name: etaQueue, Namespace: etaNamespace}, Spec: kueue.LocalQueueSpec{ClusterQueue: etaQueue}}); err != nil {
		return err
	}
	return c.queuesActive(ctx, etaQueue)
}

// etaHarness plays the job controller of the scenario's Workloads and records when
// each pod was first seen bound.
type etaHarness struct {
	c        *Cluster
	mu       sync.Mutex
	launched map[string]bool
	finished map[string]bool
	bound    map[string]time.Time
}

// etaTemplate is the pods of gang g: a KubeNexus gang (one rack when g.Rack) of the
// trace task's shape, running g.Runtime.
func etaTemplate(g etabench.Gang) corev1.PodTemplateSpec {
	req := corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(g.CPUMilli, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(g.MiB<<20, resource.BinarySI), v1alpha1.ResourceNvidiaGPU: *resource.NewQuantity(g.GPUs, resource.DecimalSI)}
	t := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.LabelKubeNexusGangName: g.Name, v1alpha1.LabelKubeNexusGangMinAvailable: fmt.Sprint(g.Size)}},
		Spec: corev1.PodSpec{
			SchedulerName: "kubenexus-scheduler", RestartPolicy: corev1.RestartPolicyNever,
			ActiveDeadlineSeconds: ptr.To(int64(g.Runtime.Seconds())),
			Tolerations:           []corev1.Toleration{{Key: kueueTaintKey, Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "task", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: req, Limits: corev1.ResourceList{v1alpha1.ResourceNvidiaGPU: req[v1alpha1.ResourceNvidiaGPU]}}}},
		},
	}
	if g.Rack {
		t.Annotations = map[string]string{v1alpha1.AnnotationKAIRequiredPlacement: v1alpha1.LabelRack}
	}
	return t
}

// submit creates the gang's Workload and reads both estimates at once.
func (h *etaHarness) submit(ctx context.Context, est *estimatedstart.Estimator, g etabench.Gang) (*etabench.Record, error) {
	wl := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Name: g.Name, Namespace: etaNamespace}, Spec: kueue.WorkloadSpec{
		QueueName: etaQueue, MaximumExecutionTimeSeconds: ptr.To(int32(g.Runtime.Seconds())),
		PodSets: []kueue.PodSet{{Name: "main", Count: int32(g.Size), Template: etaTemplate(g)}},
	}}
	if err := h.c.Client.Create(ctx, wl); err != nil {
		return nil, err
	}
	rec := &etabench.Record{Gang: g, Submitted: time.Now(), Estimates: make([]etabench.Estimate, 2)}
	// Without Kueue's queues: the forecast with the Workload in KubeNexus's queue now.
	cl, pods, err := feasibility.Read(ctx, h.c.Client)
	if err != nil {
		return nil, err
	}
	w, err := feasibility.ReadWaiters(ctx, h.c.Client, cl, pods)
	if err != nil {
		return nil, err
	}
	if i := slices.IndexFunc(w.Held, func(q *feasibility.QuotaWorkload) bool { return q.Name.Name == g.Name }); i >= 0 {
		if s := cl.ForecastQueue(w.Ahead, nil, rec.Submitted)[len(w.Queue)+i]; s.OK {
			rec.Estimates[1] = etabench.Estimate{OK: true, At: s.At}
		}
	} else {
		rec.Estimates[1] = etabench.Estimate{OK: true, At: rec.Submitted} // admitted already
	}
	// With them: the annotation the manager keeps.
	if err := est.Refresh(ctx); err != nil {
		return nil, err
	}
	if err := h.c.Client.Get(ctx, client.ObjectKeyFromObject(wl), wl); err != nil {
		return nil, err
	}
	switch v := wl.Annotations[v1alpha1.AnnotationEstimatedStart]; v {
	case "":
		rec.Estimates[0] = etabench.Estimate{OK: true, At: rec.Submitted} // started already
	case estimatedstart.Unknown:
	default:
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", v1alpha1.AnnotationEstimatedStart, err)
		}
		rec.Estimates[0] = etabench.Estimate{OK: true, At: t}
	}
	return rec, nil
}

// loop, every 200 ms until ctx ends: creates the pods of each Workload Kueue has
// admitted (carrying kueue.x-k8s.io/workload, as Kueue's job integrations do),
// notes the pods bound, and marks Finished each Workload whose pods all ended.
func (h *etaHarness) loop(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(200 * time.Millisecond):
		}
		if err := h.step(ctx); err != nil && ctx.Err() == nil {
			return err
		}
	}
}

func (h *etaHarness) step(ctx context.Context) error {
	var pods corev1.PodList
	if err := h.c.Client.List(ctx, &pods, client.InNamespace(etaNamespace)); err != nil {
		return err
	}
	now := time.Now()
	ended := map[string]int{}
	h.mu.Lock()
	for _, p := range pods.Items {
		if _, seen := h.bound[p.Name]; !seen && p.Spec.NodeName != "" {
			h.bound[p.Name] = now
		}
		if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			ended[p.Annotations[v1alpha1.AnnotationKueueWorkload]]++
		}
	}
	h.mu.Unlock()
	var wls kueue.WorkloadList
	if err := h.c.Client.List(ctx, &wls, client.InNamespace(etaNamespace)); err != nil {
		return err
	}
	for i := range wls.Items {
		wl := &wls.Items[i]
		size := int(wl.Spec.PodSets[0].Count)
		switch {
		case wl.Status.Admission != nil && apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadAdmitted) && !h.launched[wl.Name]:
			for k := range size {
				t := wl.Spec.PodSets[0].Template.DeepCopy()
				pod := &corev1.Pod{ObjectMeta: t.ObjectMeta, Spec: t.Spec}
				pod.Name, pod.Namespace = fmt.Sprintf("%s-%d", wl.Name, k), etaNamespace
				pod.Annotations = maps.Clone(pod.Annotations)
				if pod.Annotations == nil {
					pod.Annotations = map[string]string{}
				}
				pod.Annotations[v1alpha1.AnnotationKueueWorkload] = wl.Name
				if err := h.c.Client.Create(ctx, pod); err != nil {
					return fmt.Errorf("creating %s: %w", pod.Name, err)
				}
			}
			h.launched[wl.Name] = true
		case h.launched[wl.Name] && !h.finished[wl.Name] && ended[wl.Name] == size:
			apimeta.SetStatusCondition(&wl.Status.Conditions, metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "its pods ended"})
			if err := h.c.Client.Status().Update(ctx, wl); err != nil {
				continue // changed meanwhile: the next step retries
			}
			h.finished[wl.Name] = true
			for k := range size {
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", wl.Name, k), Namespace: etaNamespace}}
				if err := h.c.Client.Delete(ctx, pod, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
					return err
				}
			}
		}
	}
	return nil
}

// startOf is when the gang's last member was first seen bound (zero: not all are).
func (h *etaHarness) startOf(g etabench.Gang) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return etabench.LastBound(h.bound, g)
}
