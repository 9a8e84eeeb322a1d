package feasibility

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
)

// Waiters is a cluster's queue as the forecast plays it: KubeNexus's waiting gangs
// in queue order, each as a Workload, with the objects that describe them.
type Waiters struct {
	Queue []*InQueue
	// Ahead[i] is Queue[i] as the forecast plans it, then Held[i-len(Queue)],
	// then the gangs of admitted Workloads whose pods run, held in case the
	// forecast preempts them (QuotaWorkload.Again; no Workload[i]);
	// Workload[i] the Kueue Workload its pods were (or will be) started for (nil:
	// none).
	Ahead    []Ahead
	Workload []*types.NamespacedName
	// Quotas is Kueue's quota (nil where Kueue is not installed); Held the Kueue
	// Workloads waiting for it whose pods KubeNexus will schedule.
	Quotas *Quotas
	Held   []*QuotaWorkload
	// PodGroups are the cluster's KubeNexus PodGroups, Workloads its Kueue
	// Workloads (none where Kueue is not installed).
	PodGroups []v1alpha1.PodGroup
	Workloads []kueue.Workload
}

// ReadWaiters reads what orders the queue of the pods c was read with (the
// KubeNexusConfig's scheduler name, the PodGroups' PriorityClasses) and what each
// waiting gang is planned as (its namespace's tenant tier, or its admitting
// ClusterQueue's when the KubeNexusConfig says so), and returns the queue.
func ReadWaiters(ctx context.Context, r client.Reader, c *Cluster, pods []corev1.Pod) (*Waiters, error) {
	cfg, err := readConfig(ctx, r)
	if err != nil {
		return nil, err
	}
	scheduler := cfg.Spec.Scheduler.SchedulerName
	out := &Waiters{}
	var pgs v1alpha1.PodGroupList
	if err := r.List(ctx, &pgs); err != nil {
		return nil, fmt.Errorf("listing PodGroups: %w", err)
	}
	out.PodGroups = pgs.Items
	var wls kueue.WorkloadList
	if err := r.List(ctx, &wls); err != nil && !NotServed(err) {
		return nil, fmt.Errorf("listing Kueue Workloads: %w", err)
	}
	out.Workloads = wls.Items
	var classes schedulingv1.PriorityClassList
	if err := r.List(ctx, &classes); err != nil {
		return nil, fmt.Errorf("listing PriorityClasses: %w", err)
	}
	classValue := make(map[string]int32, len(classes.Items))
	for _, pc := range classes.Items {
		classValue[pc.Name] = pc.Value
	}
	// A Kubernetes PodGroup of a CompositePodGroup tree is queued as the tree's one
	// gang, read as one PodGroup (its quorum, topology and priority class).
	composites := CompositeGangs(ctx, r, pods)
	trees := map[gang.Key]*v1alpha1.PodGroup{}
	for _, root := range composites {
		if _, read := trees[root]; read {
			continue
		}
		pg, err := CompositeGang(ctx, r, client.ObjectKey{Namespace: root.Namespace, Name: root.Name})
		if err != nil {
			pg = nil // queued by its pods alone
		}
		trees[root] = pg
	}
	out.Queue = Queue(pods, func(s string) bool { return s == scheduler }, gangValues(classValue, pgs.Items, trees), c.StarvationAgingSeconds, composites)
	if len(out.Queue) == 0 && len(wls.Items) == 0 {
		return out, nil
	}
	var nss corev1.NamespaceList
	if err := r.List(ctx, &nss); err != nil {
		return nil, fmt.Errorf("listing namespaces: %w", err)
	}
	nsLabels := make(map[string]map[string]string, len(nss.Items))
	for i := range nss.Items {
		nsLabels[nss.Items[i].Name] = nss.Items[i].Labels
	}
	pgByKey := make(map[gang.Key]*v1alpha1.PodGroup, len(pgs.Items)+len(trees))
	for i := range pgs.Items {
		pgByKey[gang.Key{Namespace: pgs.Items[i].Namespace, Name: pgs.Items[i].Name}] = &pgs.Items[i]
	}
	for k, pg := range trees {
		if pg != nil {
			pgByKey[k] = pg
		}
	}
	admittedBy := make(map[types.NamespacedName]string, len(wls.Items))
	for i := range wls.Items {
		if a := wls.Items[i].Status.Admission; a != nil {
			admittedBy[client.ObjectKeyFromObject(&wls.Items[i])] = string(a.ClusterQueue)
		}
	}
	queueLabels, err := clusterQueueLabels(ctx, r, c)
	if err != nil {
		return nil, err
	}
	out.Ahead = make([]Ahead, len(out.Queue))
	out.Workload = make([]*types.NamespacedName, len(out.Queue))
	for i, q := range out.Queue {
		if q.Key != nil {
			q.PodGroup = pgByKey[*q.Key]
		}
		labels := nsLabels[q.Name.Namespace]
		cq := ""
		if name := q.Pending[0].Annotations[v1alpha1.AnnotationKueueWorkload]; name != "" {
			k := types.NamespacedName{Namespace: q.Name.Namespace, Name: name}
			if by, ok := admittedBy[k]; ok {
				out.Workload[i], cq = &k, by
				// The tier comes from the admitting ClusterQueue's label when the
				// KubeNexusConfig says so, as the scheduler reads it.
				if l := queueLabels[cq]; workload.HasTier(l) {
					labels = l
				}
			}
		}
		out.Ahead[i] = Ahead{Name: q.Name.String(), Workload: c.WorkloadOf(&q.Gang, len(q.Pending), labels, cq), Runtime: q.Runtime(), Priority: q.Priority}
	}
	if len(wls.Items) > 0 {
		k := kueueQueue{cfg: cfg, nsLabels: nsLabels, queueLabels: queueLabels, classValue: classValue}
		if err := k.read(ctx, r, c, out, pods); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readConfig is the default KubeNexusConfig (an empty one when there is none), its
// scheduler name filled in.
func readConfig(ctx context.Context, r client.Reader) (*v1alpha1.KubeNexusConfig, error) {
	var configs v1alpha1.KubeNexusConfigList
	if err := r.List(ctx, &configs); err != nil {
		return nil, fmt.Errorf("reading the KubeNexusConfig: %w", err)
	}
	cfg := &v1alpha1.KubeNexusConfig{}
	for i := range configs.Items {
		if configs.Items[i].Name == v1alpha1.DefaultConfigName {
			cfg = &configs.Items[i]
		}
	}
	if cfg.Spec.Scheduler.SchedulerName == "" {
		cfg.Spec.Scheduler.SchedulerName = v1alpha1.DefaultSchedulerName
	}
	return cfg, nil
}

// gangValues is the value of the PriorityClass each KubeNexus PodGroup, and each
// CompositePodGroup tree read as one (trees, by its gang; nil: unread), names (nil:
// none, or the class does not exist).
func gangValues(classValue map[string]int32, pgs []v1alpha1.PodGroup, trees map[gang.Key]*v1alpha1.PodGroup) func(gang.Key) *int32 {
	byGang := map[gang.Key]int32{}
	for i := range pgs {
		if v, ok := classValue[pgs[i].Spec.PriorityClassName]; ok {
			byGang[gang.Key{Namespace: pgs[i].Namespace, Name: pgs[i].Name}] = v
		}
	}
	for k, pg := range trees {
		if pg == nil {
			continue
		}
		if v, ok := classValue[pg.Spec.PriorityClassName]; ok {
			byGang[k] = v
		}
	}
	return func(k gang.Key) *int32 {
		if v, ok := byGang[k]; ok {
			return &v
		}
		return nil
	}
}

// clusterQueueLabels are the ClusterQueues' labels by name when the KubeNexusConfig
// takes tenant tiers from them (nil otherwise).
func clusterQueueLabels(ctx context.Context, r client.Reader, c *Cluster) (map[string]map[string]string, error) {
	if !c.TierFromClusterQueue {
		return nil, nil
	}
	var cqs kueue.ClusterQueueList
	if err := r.List(ctx, &cqs); err != nil && !NotServed(err) {
		return nil, fmt.Errorf("listing Kueue ClusterQueues: %w", err)
	}
	out := make(map[string]map[string]string, len(cqs.Items))
	for i := range cqs.Items {
		out[cqs.Items[i].Name] = cqs.Items[i].Labels
	}
	return out, nil
}
