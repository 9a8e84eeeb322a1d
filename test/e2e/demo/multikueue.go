package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/controllers"
	"github.com/kube-nexus/kubenexus/controllers/multikueue"
)

// The MultiKueue scenario: one manager cluster and two worker clusters, each a local
// cluster (Up: etcd, kube-apiserver, kube-controller-manager, kwok, KubeNexus) with
// Kueue v0.17's controller-manager; Kueue's MultiKueue on the manager cluster sends
// each Job to a worker, whose Kueue admits it and whose KubeNexus places its pods.
const (
	mkNamespace = "mk-team"
	mkQueue     = "gpu"
	mkCheck     = "multikueue"
	mkConfig    = "workers"
	// mkSmall and mkBig are the gangs' sizes: pods of mkSmallGPUs and 8 GPUs, all
	// of a gang in one rack (KAI's required-placement annotation, which KubeNexus
	// honours and Kueue does not read).
	mkSmall, mkSmallGPUs = 2, 1
	mkBig                = 3
)

// mkWorker is a worker cluster's fleet: racks of 8-GPU nodes.
type mkWorker struct {
	name  string
	racks []int // nodes per rack
}

// mkWorkers: north has four racks of two nodes (16 GPUs each), south two racks of
// four (32 GPUs each). A big gang (3 × 8 GPUs in one rack) fits only on south.
var mkWorkers = []mkWorker{{"north", []int{2, 2, 2, 2}}, {"south", []int{4, 4}}}

// MultiKueueArm is one dispatch arm's outcome.
type MultiKueueArm struct {
	// Dispatcher is Kueue's multiKueue.dispatcherName.
	Dispatcher string
	Gangs      int
	// WholeIn: gangs admitted on a worker where all their pods were bound in one
	// rack; Stuck: admitted where some pod never bound; Unadmitted: on no worker
	// when the scenario ended. The keys of PerCluster are worker names.
	WholeIn    int
	Stuck      []string
	Unadmitted []string
	PerCluster map[string]int
	// Withdrawn counts admissions (quota reserved on a worker) whose Workload copy
	// MultiKueue then removed, the Workload running elsewhere; Preempted the
	// Workloads evicted by preemption on the workers.
	Withdrawn, Preempted int
	// Took is from the first submission to the end (all gangs whole, or the wait
	// ran out).
	Took time.Duration
}

// RunMultiKueueArm starts the three clusters with Kueue's dispatcherName set to
// dispatcher (the KubeNexus manager on the manager cluster dispatches when it is
// multikueue.DispatcherName), submits gangs Jobs (the first bigs of them big) to
// the manager cluster, and waits until each is bound whole on a worker or wait runs
// out. The clusters are stopped before it returns; their logs stay under opts.Dir.
func RunMultiKueueArm(ctx context.Context, opts Options, dispatcher string, gangs, bigs int, wait time.Duration) (*MultiKueueArm, error) {
	r := &MultiKueueArm{Dispatcher: dispatcher, Gangs: gangs, PerCluster: map[string]int{}}
	up := func(name string, managerArgs ...string) (*Cluster, error) {
		o := opts
		o.Dir, o.WithoutFrameworks, o.ManagerArgs = filepath.Join(opts.Dir, name), true, managerArgs
		o.Log = prefixed{w: opts.Log, prefix: name + ": "}
		return Up(ctx, o)
	}
	var args []string
	if dispatcher == multikueue.DispatcherName {
		args = []string{"--multikueue-dispatcher", "--kueue-namespace=" + kueueNamespace}
	}
	manager, err := up("manager", args...)
	if err != nil {
		return r, err
	}
	defer manager.Down()
	workers := map[string]*Cluster{}
	for _, w := range mkWorkers {
		c, err := up(w.name)
		if err != nil {
			return r, err
		}
		defer c.Down()
		workers[w.name] = c
		if err := c.mkWorkerSetUp(ctx, w); err != nil {
			return r, fmt.Errorf("%s: %w", w.name, err)
		}
	}
	if err := manager.mkManagerSetUp(ctx, dispatcher, workers); err != nil {
		return r, fmt.Errorf("manager: %w", err)
	}

	// Every worker's Workloads, as they change: which reserved quota where, and
	// which were preempted.
	obs := &mkObserved{reserved: map[string]map[string]bool{}, preempted: map[string]bool{},
		bound: map[string]map[string]map[string]string{}, racks: map[string]map[string]string{}, assigned: map[string]string{}}
	watchCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		if err := obs.watchManager(watchCtx, manager); err != nil {
			manager.logf("MultiKueue: watching the manager cluster: %v", err)
		}
	}()
	for name, c := range workers {
		go func() {
			if err := obs.watch(watchCtx, name, c); err != nil {
				manager.logf("MultiKueue: watching %s: %v", name, err)
			}
		}()
	}

	manager.logf("MultiKueue (%s): submitting %d gangs (%d of %d × 8 GPUs, %d of %d × %d GPU), each in one rack", dispatcher, gangs, bigs, mkBig, gangs-bigs, mkSmall, mkSmallGPUs)
	began := time.Now()
	for i := range gangs {
		pods, gpus := mkSmall, mkSmallGPUs
		if i < bigs {
			pods, gpus = mkBig, 8
		}
		if err := manager.Client.Create(ctx, mkJob(fmt.Sprintf("gang-%02d", i), pods, gpus)); err != nil {
			return r, err
		}
	}
	// Kueue's own dispatch may leave gangs on a worker that cannot hold them: that
	// arm ends once nothing has changed for half a minute.
	var last string
	changed := time.Now()
	err = waitFor(ctx, wait, func() error {
		if err := manager.mkOutcome(ctx, obs, gangs, r); err != nil {
			return err
		}
		if r.WholeIn == gangs {
			return nil
		}
		if now := fmt.Sprint(r.WholeIn, r.Stuck, r.Unadmitted); now != last {
			last, changed = now, time.Now()
		} else if dispatcher != multikueue.DispatcherName && time.Since(changed) > 30*time.Second {
			return nil
		}
		return fmt.Errorf("%d of %d gangs bound whole on a worker; stuck %v; not admitted %v", r.WholeIn, gangs, r.Stuck, r.Unadmitted)
	})
	r.Took = time.Since(began)
	stop()
	obs.count(ctx, manager, r)
	if err != nil && dispatcher == multikueue.DispatcherName {
		return r, err
	}
	return r, nil // the baseline arm's gangs may stay stuck: that is its outcome
}

// mkWorkerSetUp creates the worker's fleet (kwok 8-GPU nodes, rack-labelled), the
// namespace, the flavor and a ClusterQueue with room for every gang by quota, and
// its LocalQueue; then starts Kueue.
func (c *Cluster) mkWorkerSetUp(ctx context.Context, w mkWorker) error {
	var labels []map[string]string
	for r, n := range w.racks {
		for range n {
			labels = append(labels, map[string]string{kueuePoolKey: kueuePool, v1alpha1.LabelRack: fmt.Sprintf("%s-rack-%d", w.name, r)})
		}
	}
	if err := c.taintedPool(ctx, w.name, labels, kueueTaintKey); err != nil {
		return err
	}
	if err := c.StartKueue(ctx); err != nil {
		return err
	}
	return c.mkQueues(ctx, nil)
}

// mkQueues creates the scenario's namespace (opted in to KubeNexus), the flavor of
// its nodes, and ClusterQueue mk (checks on it) with its LocalQueue.
func (c *Cluster) mkQueues(ctx context.Context, checks []kueue.AdmissionCheckReference) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: mkNamespace, Labels: map[string]string{v1alpha1.LabelNamespaceEnabled: "true"}}}
	if err := c.Client.Create(ctx, ns); err != nil {
		return err
	}
	flavor := &kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: kueuePool}, Spec: kueue.ResourceFlavorSpec{
		NodeLabels:  map[string]string{kueuePoolKey: kueuePool},
		Tolerations: []corev1.Toleration{{Key: kueueTaintKey, Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}},
	}}
	if err := c.Client.Create(ctx, flavor); err != nil {
		return err
	}
	big := resource.MustParse("100000")
	cq := &kueue.ClusterQueue{
		ObjectMeta: metav1.ObjectMeta{Name: "mk"},
		Spec: kueue.ClusterQueueSpec{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: mkNamespace}},
			ResourceGroups: []kueue.ResourceGroup{{
				CoveredResources: []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, v1alpha1.ResourceNvidiaGPU},
				Flavors: []kueue.FlavorQuotas{{Name: kueuePool, Resources: []kueue.ResourceQuota{
					{Name: corev1.ResourceCPU, NominalQuota: big}, {Name: corev1.ResourceMemory, NominalQuota: resource.MustParse("100Ti")},
					{Name: v1alpha1.ResourceNvidiaGPU, NominalQuota: big},
				}}},
			}},
			AdmissionChecksStrategy: checksStrategy(checks),
		},
	}
	if err := c.Client.Create(ctx, cq); err != nil {
		return err
	}
	if err := c.Client.Create(ctx, &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Name: mkQueue, Namespace: mkNamespace}, Spec: kueue.LocalQueueSpec{ClusterQueue: "mk"}}); err != nil {
		return err
	}
	return c.queuesActive(ctx, "mk")
}

// mkManagerSetUp starts Kueue on the manager cluster with MultiKueue's dispatcher
// named, and creates the MultiKueue objects: each worker's kubeconfig Secret and
// MultiKueueCluster, the MultiKueueConfig, the AdmissionCheck and the queues.
func (c *Cluster) mkManagerSetUp(ctx context.Context, dispatcher string, workers map[string]*Cluster) error {
	if err := c.startKueue(ctx, fmt.Sprintf("multiKueue:\n  dispatcherName: %s\n", dispatcher)); err != nil {
		return err
	}
	var names []string
	for name, w := range workers {
		kubeconfig, err := os.ReadFile(w.Kubeconfig)
		if err != nil {
			return err
		}
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-kubeconfig", Namespace: kueueNamespace}, Data: map[string][]byte{"kubeconfig": kubeconfig}}
		if err := c.Client.Create(ctx, secret); err != nil {
			return err
		}
		mkc := &kueue.MultiKueueCluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kueue.MultiKueueClusterSpec{ClusterSource: kueue.ClusterSource{
			KubeConfig: &kueue.KubeConfig{Location: secret.Name, LocationType: kueue.SecretLocationType}}}}
		if err := c.Client.Create(ctx, mkc); err != nil {
			return err
		}
		names = append(names, name)
	}
	sort.Strings(names)
	if err := c.Client.Create(ctx, &kueue.MultiKueueConfig{ObjectMeta: metav1.ObjectMeta{Name: mkConfig}, Spec: kueue.MultiKueueConfigSpec{Clusters: names}}); err != nil {
		return err
	}
	ac := &kueue.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{Name: mkCheck}, Spec: kueue.AdmissionCheckSpec{ControllerName: kueue.MultiKueueControllerName,
		Parameters: &kueue.AdmissionCheckParametersReference{APIGroup: kueue.GroupVersion.Group, Kind: "MultiKueueConfig", Name: mkConfig}}}
	if err := c.Client.Create(ctx, ac); err != nil {
		return err
	}
	// Kueue connects to each worker and marks the clusters and the check Active.
	if err := waitFor(ctx, 2*time.Minute, func() error {
		for _, name := range names {
			mkc := &kueue.MultiKueueCluster{}
			if err := c.Client.Get(ctx, client.ObjectKey{Name: name}, mkc); err != nil {
				return err
			}
			if !apimeta.IsStatusConditionTrue(mkc.Status.Conditions, kueue.MultiKueueClusterActive) {
				return fmt.Errorf("MultiKueueCluster %s is not active: %+v", name, mkc.Status.Conditions)
			}
		}
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(ac), ac); err != nil {
			return err
		}
		if !apimeta.IsStatusConditionTrue(ac.Status.Conditions, kueue.AdmissionCheckActive) {
			return fmt.Errorf("AdmissionCheck %s is not active: %+v", ac.Name, ac.Status.Conditions)
		}
		return nil
	}); err != nil {
		return err
	}
	return c.mkQueues(ctx, []kueue.AdmissionCheckReference{mkCheck})
}

// mkJob is an indexed Job of pods gpus-GPU pods, a KubeNexus gang that must share
// one rack, queued to the manager cluster's LocalQueue and managed there by
// MultiKueue.
func mkJob(name string, pods, gpus int) *batchv1.Job {
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"),
		v1alpha1.ResourceNvidiaGPU: *resource.NewQuantity(int64(gpus), resource.DecimalSI)}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: mkNamespace, Labels: map[string]string{v1alpha1.LabelKueueQueueName: mkQueue}},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To(int32(pods)), Completions: ptr.To(int32(pods)), CompletionMode: ptr.To(batchv1.IndexedCompletion),
			Suspend: ptr.To(true), ManagedBy: ptr.To(kueue.MultiKueueControllerName),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      map[string]string{v1alpha1.LabelKubeNexusGangName: name, v1alpha1.LabelKubeNexusGangMinAvailable: fmt.Sprint(pods)},
					Annotations: map[string]string{v1alpha1.AnnotationKAIRequiredPlacement: v1alpha1.LabelRack},
				},
				Spec: corev1.PodSpec{
					SchedulerName: "kubenexus-scheduler",
					RestartPolicy: corev1.RestartPolicyNever,
					Tolerations:   []corev1.Toleration{{Key: kueueTaintKey, Operator: corev1.TolerationOpExists}},
					Containers:    []corev1.Container{{Name: "trainer", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{Requests: rl, Limits: rl}}},
				},
			},
		},
	}
}

// mkOutcome reads where each gang runs: its Workload's cluster on the manager, and
// whether the watch saw every pod of its Job bound there, all in one rack (kwok
// completes them at once, and MultiKueue removes the worker's copy of a finished
// Job: the pods are gone soon after).
func (c *Cluster) mkOutcome(ctx context.Context, obs *mkObserved, gangs int, r *MultiKueueArm) error {
	var wls kueue.WorkloadList
	if err := c.Client.List(ctx, &wls, client.InNamespace(mkNamespace)); err != nil {
		return err
	}
	r.WholeIn, r.Stuck, r.Unadmitted, r.PerCluster = 0, nil, nil, map[string]int{}
	seen := map[string]bool{}
	for i := range wls.Items {
		wl := &wls.Items[i]
		job := jobOf(wl)
		if job == "" {
			continue
		}
		seen[job] = true
		name := obs.clusterOf(wl)
		if name == "" {
			r.Unadmitted = append(r.Unadmitted, job)
			continue
		}
		if obs.boundWhole(name, job, int(wl.Spec.PodSets[0].Count)) {
			r.WholeIn++
			r.PerCluster[name]++
		} else {
			r.Stuck = append(r.Stuck, job+" on "+name)
		}
	}
	for i := range gangs {
		if job := fmt.Sprintf("gang-%02d", i); !seen[job] {
			r.Unadmitted = append(r.Unadmitted, job)
		}
	}
	sort.Strings(r.Stuck)
	sort.Strings(r.Unadmitted)
	return nil
}

func jobOf(wl *kueue.Workload) string {
	for _, ref := range wl.OwnerReferences {
		if ref.Kind == "Job" {
			return ref.Name
		}
	}
	return ""
}

// mkObserved is what the watches of the workers saw.
type mkObserved struct {
	mu sync.Mutex
	// reserved: worker → Workloads that had quota reserved there.
	reserved  map[string]map[string]bool
	preempted map[string]bool
	// bound: worker → Job → pod → rack of the node it was bound to.
	bound map[string]map[string]map[string]string
	// racks: worker → node → rack.
	racks map[string]map[string]string
	// assigned: the worker each manager Workload was assigned to (its
	// status.clusterName, which Kueue clears once the Workload finishes).
	assigned map[string]string
}

// watchManager follows the manager cluster's Workloads until ctx ends.
func (o *mkObserved) watchManager(ctx context.Context, c *Cluster) error {
	wc, err := client.NewWithWatch(c.Config, client.Options{Scheme: controllers.NewScheme()})
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		w, err := wc.Watch(ctx, &kueue.WorkloadList{}, client.InNamespace(mkNamespace))
		if err != nil {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		for ev := range w.ResultChan() {
			if wl, ok := ev.Object.(*kueue.Workload); ok && wl.Status.ClusterName != nil {
				o.mu.Lock()
				o.assigned[wl.Name] = *wl.Status.ClusterName
				o.mu.Unlock()
			}
		}
		w.Stop()
	}
	return nil
}

// clusterOf is the worker wl was assigned to ("": none seen).
func (o *mkObserved) clusterOf(wl *kueue.Workload) string {
	if wl.Status.ClusterName != nil {
		return *wl.Status.ClusterName
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.assigned[wl.Name]
}

// watch follows a worker's Workloads and pods until ctx ends (again after a
// dropped watch).
func (o *mkObserved) watch(ctx context.Context, name string, c *Cluster) error {
	var nodes corev1.NodeList
	if err := c.Client.List(ctx, &nodes); err != nil {
		return err
	}
	o.mu.Lock()
	o.racks[name] = map[string]string{}
	for _, n := range nodes.Items {
		o.racks[name][n.Name] = n.Labels[v1alpha1.LabelRack]
	}
	o.mu.Unlock()
	wc, err := client.NewWithWatch(c.Config, client.Options{Scheme: controllers.NewScheme()})
	if err != nil {
		return err
	}
	follow := func(list client.ObjectList) {
		for ctx.Err() == nil {
			w, err := wc.Watch(ctx, list, client.InNamespace(mkNamespace))
			if err != nil {
				time.Sleep(200 * time.Millisecond)
				continue
			}
			for ev := range w.ResultChan() {
				if ev.Type != watch.Error {
					o.note(name, ev.Object)
				}
			}
			w.Stop()
		}
	}
	go follow(&corev1.PodList{})
	follow(&kueue.WorkloadList{})
	return nil
}

func (o *mkObserved) note(worker string, obj runtime.Object) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch x := obj.(type) {
	case *kueue.Workload:
		if apimeta.IsStatusConditionTrue(x.Status.Conditions, kueue.WorkloadQuotaReserved) {
			if o.reserved[worker] == nil {
				o.reserved[worker] = map[string]bool{}
			}
			o.reserved[worker][x.Name] = true
		}
		if apimeta.IsStatusConditionTrue(x.Status.Conditions, kueue.WorkloadPreempted) {
			o.preempted[worker+"/"+x.Name] = true
		}
	case *corev1.Pod:
		job := x.Labels["batch.kubernetes.io/job-name"]
		if job == "" || x.Spec.NodeName == "" {
			return
		}
		if o.bound[worker] == nil {
			o.bound[worker] = map[string]map[string]string{}
		}
		if o.bound[worker][job] == nil {
			o.bound[worker][job] = map[string]string{}
		}
		o.bound[worker][job][x.Name] = o.racks[worker][x.Spec.NodeName]
	}
}

// boundWhole reports whether count pods of job were seen bound on worker, all in
// one rack.
func (o *mkObserved) boundWhole(worker, job string, count int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	racks := map[string]bool{}
	for _, rack := range o.bound[worker][job] {
		racks[rack] = true
	}
	return len(o.bound[worker][job]) >= count && len(racks) == 1
}

// count fills Withdrawn (a Workload that reserved quota on a worker other than the
// one it was assigned to) and Preempted.
func (o *mkObserved) count(ctx context.Context, manager *Cluster, r *MultiKueueArm) {
	var wls kueue.WorkloadList
	if err := manager.Client.List(ctx, &wls, client.InNamespace(mkNamespace)); err != nil {
		return
	}
	for i := range wls.Items {
		wl := &wls.Items[i]
		at := o.clusterOf(wl)
		o.mu.Lock()
		for worker, names := range o.reserved {
			if names[wl.Name] && worker != at {
				r.Withdrawn++
			}
		}
		o.mu.Unlock()
	}
	o.mu.Lock()
	r.Preempted = len(o.preempted)
	o.mu.Unlock()
}

// prefixed writes each line with a prefix (one log for the three clusters).
type prefixed struct {
	w      io.Writer
	prefix string
}

func (p prefixed) Write(b []byte) (int, error) {
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	for i := range lines {
		lines[i] = p.prefix + lines[i]
	}
	if _, err := io.WriteString(p.w, strings.Join(lines, "\n")); err != nil {
		return 0, err
	}
	return len(b), nil
}

// PrintMultiKueue writes the arms side by side.
func PrintMultiKueue(w io.Writer, arms ...*MultiKueueArm) {
	fmt.Fprintln(w, "| dispatcher | gangs | bound whole on their worker | per worker | stuck on a worker that cannot hold them | not admitted | admissions withdrawn | preempted | took |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	for _, r := range arms {
		if r == nil {
			continue
		}
		var per []string
		for name, n := range r.PerCluster {
			per = append(per, fmt.Sprintf("%s %d", name, n))
		}
		slices.Sort(per)
		fmt.Fprintf(w, "| %s | %d | %d | %s | %d | %d | %d | %d | %s |\n", r.Dispatcher, r.Gangs, r.WholeIn, strings.Join(per, ", "),
			len(r.Stuck), len(r.Unadmitted), r.Withdrawn, r.Preempted, r.Took.Round(time.Second))
	}
}
