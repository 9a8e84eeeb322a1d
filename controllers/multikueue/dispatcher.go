// Package multikueue runs KubeNexus's manager as MultiKueue's external dispatcher:
// Kueue on the manager cluster, configured with multiKueue.dispatcherName
// kubenexus.io/multikueue-dispatcher, creates a Workload's copy only on the worker
// clusters named in its status.nominatedClusterNames. For each Workload waiting for
// its MultiKueue AdmissionCheck, the dispatcher reads every worker cluster of the
// check's MultiKueueConfig through the kubeconfig of its MultiKueueCluster, asks the
// placement core whether the gang fits there whole (all its pods, in the one
// topology domain it requires, on nodes its tier and flavors allow) and when it
// would start behind the gangs queued there, and nominates the one cluster where it
// starts first. A cluster that cannot hold the gang even empty is never nominated.
package multikueue

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kube-nexus/kubenexus/api/topology"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/controllers/feasibility"
)

// DispatcherName is the value of Kueue's multiKueue.dispatcherName that hands the
// choice of worker clusters to KubeNexus.
const DispatcherName = "kubenexus.io/multikueue-dispatcher"

// DefaultKueueNamespace is where Kueue runs unless told otherwise.
const DefaultKueueNamespace = "kueue-system"

// kubeconfigKey is the key of a MultiKueueCluster's Secret that holds the kubeconfig
// (Kueue's contract).
const kubeconfigKey = "kubeconfig"

// retry is how soon a Workload no worker cluster can hold is looked at again: nodes
// may be added.
const retry = 30 * time.Second

// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=multikueueconfigs;multikueueclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=workloads/status,verbs=get;update;patch

// Dispatcher nominates the worker cluster of each MultiKueue Workload.
type Dispatcher struct {
	// Client reads and writes the manager cluster's Kueue objects (cached).
	Client client.Client
	// Secrets reads the MultiKueueClusters' kubeconfig Secrets (uncached: the
	// manager needs get on Secrets in KueueNamespace only).
	Secrets client.Reader
	// KueueNamespace is where Kueue runs and keeps the kubeconfig Secrets.
	KueueNamespace string
	// Scheme is the worker clients' scheme.
	Scheme   *runtime.Scheme
	Recorder recorder.EventRecorder
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu sync.Mutex
	// workers are the clients of the worker clusters, by MultiKueueCluster name,
	// made again when the Secret changes.
	workers map[string]*worker
	// sent are the nominations written that the cache may not show yet: the next
	// Workload must count them (reconciles run one at a time).
	sent map[types.NamespacedName][]string
}

type worker struct {
	version string
	client  client.Client
}

// Verdict is what the dispatcher found on one worker cluster.
type Verdict struct {
	Cluster string
	// Holds: the gang fits there whole once nothing else runs; Start is when it
	// would start behind the gangs queued there (OK: a start is known).
	Holds bool
	OK    bool
	Start time.Time
	// Why says what the verdict rests on (the planner's message, or the queue).
	Why string
}

func (d *Dispatcher) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// Reconcile nominates a cluster for a Workload that waits for its MultiKueue check
// with quota reserved and none nominated yet (or nominated to a cluster its
// MultiKueueConfig no longer names).
func (d *Dispatcher) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	wl := &kueue.Workload{}
	if err := d.Client.Get(ctx, req.NamespacedName, wl); err != nil {
		d.mu.Lock()
		delete(d.sent, req.NamespacedName)
		d.mu.Unlock()
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !wl.DeletionTimestamp.IsZero() || wl.Status.ClusterName != nil || wl.Status.Admission == nil ||
		!apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadQuotaReserved) ||
		apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadFinished) {
		return ctrl.Result{}, nil
	}
	clusters, err := d.clustersFor(ctx, wl)
	if err != nil || clusters == nil {
		return ctrl.Result{}, err
	}
	if len(wl.Status.NominatedClusterNames) > 0 && allIn(wl.Status.NominatedClusterNames, clusters) {
		return ctrl.Result{}, nil
	}
	verdicts, err := d.Verdicts(ctx, wl, clusters)
	if err != nil {
		return ctrl.Result{}, err
	}
	best := Best(verdicts)
	logger := log.FromContext(ctx)
	if best == nil {
		msg := fmt.Sprintf("fits whole on no worker cluster: %s", describe(verdicts))
		logger.Info("MultiKueue Workload not dispatched", "workload", req.NamespacedName, "why", msg)
		d.event(wl, corev1.EventTypeWarning, v1alpha1.EventReasonDispatchRefused, msg)
		if len(wl.Status.NominatedClusterNames) > 0 {
			// Its nominated cluster left the MultiKueueConfig: withdraw it.
			if err := d.nominate(ctx, wl, nil); err != nil {
				return ctrl.Result{}, err
			}
		}
		return ctrl.Result{RequeueAfter: retry}, nil
	}
	if err := d.nominate(ctx, wl, []string{best.Cluster}); err != nil {
		return ctrl.Result{}, err
	}
	d.mu.Lock()
	if d.sent == nil {
		d.sent = map[types.NamespacedName][]string{}
	}
	d.sent[req.NamespacedName] = []string{best.Cluster}
	d.mu.Unlock()
	msg := fmt.Sprintf("nominated worker cluster %s (%s); %s", best.Cluster, best.Why, describe(verdicts))
	logger.Info("MultiKueue Workload dispatched", "workload", req.NamespacedName, "cluster", best.Cluster, "verdicts", msg)
	d.event(wl, corev1.EventTypeNormal, v1alpha1.EventReasonDispatched, msg)
	return ctrl.Result{}, nil
}

func (d *Dispatcher) event(wl *kueue.Workload, kind, reason, msg string) {
	if d.Recorder != nil {
		d.Recorder.Eventf(wl, nil, kind, reason, "Dispatch", "%s", v1alpha1.EventNote(msg))
	}
}

// KueueAdmission is the field manager of Kueue's status applies.
const KueueAdmission = "kueue-admission"

// admissionConditions are the conditions Kueue's status apply carries.
var admissionConditions = []string{kueue.WorkloadQuotaReserved, kueue.WorkloadBlockedOnPreemptionGates, kueue.WorkloadEvicted,
	kueue.WorkloadAdmitted, kueue.WorkloadPreempted, kueue.WorkloadRequeued, kueue.WorkloadDeactivationTarget, kueue.WorkloadFinished}

// nominate writes the Workload's status.nominatedClusterNames. Kueue's contract for
// external dispatchers: the field is applied under Kueue's own field manager
// (kueue-admission), so that Kueue drops it when it applies status.clusterName (the
// two are mutually exclusive). An apply under that manager must carry everything
// Kueue's applies carry, or the server would remove it (AdmissionApply).
func (d *Dispatcher) nominate(ctx context.Context, wl *kueue.Workload, clusters []string) error {
	next := wl.DeepCopy()
	next.Status.NominatedClusterNames = clusters
	obj, err := AdmissionApply(next)
	if err != nil {
		return err
	}
	if err := d.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(KueueAdmission), client.ForceOwnership); err != nil {
		return fmt.Errorf("nominating %v for Workload %s/%s: %w", clusters, wl.Namespace, wl.Name, err)
	}
	return nil
}

// AdmissionApply is the status apply Kueue's admission makes of wl as it is: the
// admission, its conditions, the checks' states, the cluster fields and the rest,
// with wl's resource version (a stale copy fails rather than write old state).
func AdmissionApply(wl *kueue.Workload) (*unstructured.Unstructured, error) {
	obj := &kueue.Workload{
		TypeMeta: metav1.TypeMeta{APIVersion: kueue.GroupVersion.String(), Kind: "Workload"},
		ObjectMeta: metav1.ObjectMeta{UID: wl.UID, Name: wl.Name, Namespace: wl.Namespace, Generation: wl.Generation,
			ResourceVersion: wl.ResourceVersion, Labels: wl.Labels, Annotations: wl.Annotations},
	}
	st, now := &obj.Status, &wl.Status
	st.Admission = now.Admission.DeepCopy()
	if rq := now.RequeueState; rq != nil && (rq.Count != nil || rq.RequeueAt != nil) {
		st.RequeueState = rq.DeepCopy()
	}
	st.ResourceRequests = []kueue.PodSetRequest{}
	if st.Admission == nil {
		st.ResourceRequests = append(st.ResourceRequests, now.ResourceRequests...)
	}
	for _, t := range admissionConditions {
		if c := apimeta.FindStatusCondition(now.Conditions, t); c != nil {
			st.Conditions = append(st.Conditions, *c)
		}
	}
	st.AccumulatedPastExecutionTimeSeconds = now.AccumulatedPastExecutionTimeSeconds
	if now.SchedulingStats != nil {
		st.SchedulingStats = &kueue.SchedulingStats{Evictions: now.SchedulingStats.Evictions}
	}
	st.ClusterName, st.NominatedClusterNames = now.ClusterName, now.NominatedClusterNames
	st.UnhealthyNodes, st.PreemptionGates = now.UnhealthyNodes, now.PreemptionGates
	st.AdmissionChecks = append([]kueue.AdmissionCheckState{}, now.AdmissionChecks...)
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: u}, nil
}

func allIn(names, in []string) bool {
	for _, n := range names {
		if !slices.Contains(in, n) {
			return false
		}
	}
	return true
}

// clustersFor is the worker clusters of the Workload's MultiKueue check while that
// check is Pending (nil: the Workload has none, or it is decided).
func (d *Dispatcher) clustersFor(ctx context.Context, wl *kueue.Workload) ([]string, error) {
	var checks kueue.AdmissionCheckList
	if err := d.Client.List(ctx, &checks); err != nil {
		return nil, err
	}
	for _, ac := range checks.Items {
		if ac.Spec.ControllerName != kueue.MultiKueueControllerName {
			continue
		}
		st := findCheck(wl, ac.Name)
		if st == nil || st.State != kueue.CheckStatePending {
			continue
		}
		p := ac.Spec.Parameters
		if p == nil || p.APIGroup != kueue.GroupVersion.Group || p.Kind != "MultiKueueConfig" {
			return nil, nil
		}
		cfg := &kueue.MultiKueueConfig{}
		if err := d.Client.Get(ctx, client.ObjectKey{Name: p.Name}, cfg); err != nil {
			return nil, client.IgnoreNotFound(err)
		}
		return slices.Sorted(slices.Values(cfg.Spec.Clusters)), nil
	}
	return nil, nil
}

func findCheck(wl *kueue.Workload, name string) *kueue.AdmissionCheckState {
	for i := range wl.Status.AdmissionChecks {
		if string(wl.Status.AdmissionChecks[i].Name) == name {
			return &wl.Status.AdmissionChecks[i]
		}
	}
	return nil
}

// Verdicts reads each worker cluster and says whether it holds the Workload whole
// and when it would start there. A cluster that cannot be read (inactive, its
// kubeconfig missing or refused) holds nothing.
func (d *Dispatcher) Verdicts(ctx context.Context, wl *kueue.Workload, clusters []string) ([]Verdict, error) {
	// Workloads already sent to a cluster whose pods are not there yet are queued
	// there ahead of this one: the cluster's pods do not show them.
	var all kueue.WorkloadList
	if err := d.Client.List(ctx, &all); err != nil {
		return nil, err
	}
	out := make([]Verdict, 0, len(clusters))
	for _, name := range clusters {
		r, why := d.workerFor(ctx, name)
		if r == nil {
			out = append(out, Verdict{Cluster: name, Why: why})
			continue
		}
		v, err := d.verdict(ctx, r, name, wl, all.Items)
		if err != nil {
			out = append(out, Verdict{Cluster: name, Why: fmt.Sprintf("cannot be read: %v", err)})
			continue
		}
		out = append(out, v)
	}
	return out, nil
}

// verdict places wl on one worker cluster.
func (d *Dispatcher) verdict(ctx context.Context, r client.Reader, cluster string, wl *kueue.Workload, sent []kueue.Workload) (Verdict, error) {
	v := Verdict{Cluster: cluster}
	c, pods, err := feasibility.Read(ctx, r)
	if err != nil {
		return v, err
	}
	ns := &corev1.Namespace{}
	if err := r.Get(ctx, client.ObjectKey{Name: wl.Namespace}, ns); err != nil {
		if client.IgnoreNotFound(err) == nil {
			v.Why = fmt.Sprintf("has no namespace %s", wl.Namespace)
			return v, nil
		}
		return v, err
	}
	w := workloadOn(c, wl, ns.Labels)
	occupying := make([]*corev1.Pod, 0, len(pods))
	for i := range pods {
		if workload.OccupiesNode(&pods[i]) {
			occupying = append(occupying, &pods[i])
		}
	}
	if empty := feasibility.Decide(c.Without(occupying), w); !empty.Fits {
		v.Why = "cannot hold it even empty: " + empty.Message
		return v, nil
	}
	v.Holds = true
	waiting, err := feasibility.ReadWaiters(ctx, r, c, pods)
	if err != nil {
		return v, err
	}
	priority := int32(0)
	if wl.Spec.Priority != nil {
		priority = *wl.Spec.Priority
	}
	queueName, err := d.workerQueue(ctx, r, waiting, wl)
	if err != nil {
		return v, err
	}
	if queueName != "" {
		return d.quotaVerdict(ctx, r, v, c, waiting, w, wl, queueName, cluster, sent, pods), nil
	}
	var ahead []feasibility.Ahead
	for i, q := range waiting.Queue {
		if q.Priority >= priority {
			ahead = append(ahead, waiting.Ahead[i])
		}
	}
	ahead = append(ahead, d.sentAhead(c, cluster, wl, sent, pods, priority)...)
	f := c.Forecast(w, ahead, d.now())
	if !f.OK {
		v.Why = fmt.Sprintf("holds it, start unknown: %s ahead with no runtime bound hold its room", gangs(len(f.Unbounded)))
		return v, nil
	}
	v.OK, v.Start = true, f.Start
	if now := d.now(); !f.Start.After(now) {
		v.Why = "fits whole now"
	} else {
		v.Why = fmt.Sprintf("starts at %s (in %s)", f.Start.UTC().Format(time.RFC3339), f.Start.Sub(now).Round(time.Second))
	}
	v.Why += "; " + gangs(len(ahead)) + " queued ahead there"
	return v, nil
}

// workerQueue is the ClusterQueue wl would wait in on the worker: its LocalQueue's
// there ("" when the worker's Kueue queues cannot be read, or it has no such
// LocalQueue: the verdict then weighs nodes only).
func (d *Dispatcher) workerQueue(ctx context.Context, r client.Reader, waiting *feasibility.Waiters, wl *kueue.Workload) (string, error) {
	if waiting.Quotas == nil || wl.Spec.QueueName == "" {
		return "", nil
	}
	lq := &kueue.LocalQueue{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: wl.Namespace, Name: string(wl.Spec.QueueName)}, lq); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || feasibility.NotServed(err) {
			return "", nil
		}
		return "", err
	}
	return string(lq.Spec.ClusterQueue), nil
}

// quotaVerdict is the verdict where the worker's Kueue queues can be read: wl
// arrives there waiting for quota in its ClusterQueue, behind the Workloads already
// there and those sent there that have not arrived yet, and the worker's whole queue
// is forecast with Kueue's quota played (feasibility.Quotas): when its ClusterQueue
// there admits it, and when its pods start.
func (d *Dispatcher) quotaVerdict(ctx context.Context, r client.Reader, v Verdict, c *feasibility.Cluster, waiting *feasibility.Waiters, w *feasibility.Workload,
	wl *kueue.Workload, queueName, cluster string, sent []kueue.Workload, pods []corev1.Pod) Verdict {
	now := d.now()
	queue := append([]feasibility.Ahead(nil), waiting.Ahead...)
	there := map[types.NamespacedName]bool{}
	for i := range waiting.Workloads {
		there[client.ObjectKeyFromObject(&waiting.Workloads[i])] = true
	}
	// Sent, not there yet: each arrives before wl, in its own queue.
	arriving := 0
	for _, a := range d.sentAhead(c, cluster, wl, sent, pods, math.MinInt32) {
		k := a.Name
		o := sentNamed(sent, k)
		if o == nil || there[client.ObjectKeyFromObject(o)] {
			continue
		}
		cq := queueName
		if o.Spec.QueueName != wl.Spec.QueueName || o.Namespace != wl.Namespace {
			lq := &kueue.LocalQueue{}
			if err := r.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: string(o.Spec.QueueName)}, lq); err != nil {
				continue
			}
			cq = string(lq.Spec.ClusterQueue)
		}
		a.Priority, a.Quota = ptr.Deref(o.Spec.Priority, 0), quotaOf(o, cq, now.Add(-time.Second), len(queue))
		waiting.Quotas.Wait(a.Quota)
		queue = append(queue, a)
		arriving++
	}
	me := len(queue)
	if i := slices.IndexFunc(waiting.Held, func(h *feasibility.QuotaWorkload) bool { return h.Name == client.ObjectKeyFromObject(wl) }); i >= 0 {
		me = len(waiting.Queue) + i // its copy waits there already
	} else {
		target := feasibility.Ahead{Name: client.ObjectKeyFromObject(wl).String(), Workload: w, Runtime: feasibility.RuntimeOf(wl),
			Priority: ptr.Deref(wl.Spec.Priority, 0), Quota: quotaOf(wl, queueName, now, me)}
		waiting.Quotas.Wait(target.Quota)
		queue = append(queue, target)
	}
	s := c.ForecastQueue(queue, waiting.Quotas, now)[me]
	ahead := fmt.Sprintf("%s and %s there", gangs(len(waiting.Queue)), workloads(len(waiting.Held)+arriving))
	switch {
	case s.OK:
		v.OK, v.Start = true, s.At
		if !s.At.After(now) {
			v.Why = fmt.Sprintf("fits whole now, in ClusterQueue %s's quota", queueName)
		} else {
			v.Why = fmt.Sprintf("starts at %s (in %s), ClusterQueue %s admitting it %s", s.At.UTC().Format(time.RFC3339), s.At.Sub(now).Round(time.Second), queueName, admitted(s.Admitted, now))
		}
	case !s.Admitted.IsZero():
		v.Why = fmt.Sprintf("holds it, start unknown: ClusterQueue %s admits it %s, but %s ahead with no runtime bound hold its room", queueName, admitted(s.Admitted, now), gangs(len(s.Unbounded)))
	default:
		v.Why = fmt.Sprintf("holds it, start unknown: ClusterQueue %s is not forecast to admit it", queueName)
	}
	v.Why += "; " + ahead + " queued ahead"
	return v
}

// quotaOf is o as it waits for quota in cq on a worker, queued at queued, its gang
// at index gang of the forecast.
func quotaOf(o *kueue.Workload, cq string, queued time.Time, gang int) *feasibility.QuotaWorkload {
	need := feasibility.QuotaNeed(feasibility.PodSetsOf(o))
	q := &feasibility.QuotaWorkload{Name: client.ObjectKeyFromObject(o), ClusterQueue: cq, Priority: ptr.Deref(o.Spec.Priority, 0), Queued: queued,
		Request: make(map[corev1.ResourceName]int64, len(need)), Runtime: feasibility.RuntimeOf(o), Gangs: []int{gang}}
	for name, v := range need {
		q.Request[name] = v.MilliValue()
	}
	return q
}

func sentNamed(sent []kueue.Workload, name string) *kueue.Workload {
	for i := range sent {
		if client.ObjectKeyFromObject(&sent[i]).String() == name {
			return &sent[i]
		}
	}
	return nil
}

func admitted(at, now time.Time) string {
	if !at.After(now) {
		return "now"
	}
	return fmt.Sprintf("in %s", at.Sub(now).Round(time.Second))
}

func workloads(n int) string {
	if n == 1 {
		return "1 Workload waiting for quota"
	}
	return fmt.Sprintf("%d Workloads waiting for quota", n)
}

func gangs(n int) string {
	if n == 1 {
		return "1 gang"
	}
	return fmt.Sprintf("%d gangs", n)
}

// sentAhead are the Workloads dispatched to cluster whose pods are not there yet
// (none carries the workload's name in kueue.x-k8s.io/workload), not finished, at
// wl's priority or above: they take room before it.
func (d *Dispatcher) sentAhead(c *feasibility.Cluster, cluster string, wl *kueue.Workload, sent []kueue.Workload, pods []corev1.Pod, priority int32) []feasibility.Ahead {
	present := map[types.NamespacedName]bool{}
	for i := range pods {
		if name := pods[i].Annotations[v1alpha1.AnnotationKueueWorkload]; name != "" {
			present[types.NamespacedName{Namespace: pods[i].Namespace, Name: name}] = true
		}
	}
	var out []feasibility.Ahead
	for i := range sent {
		o := &sent[i]
		k := client.ObjectKeyFromObject(o)
		if k == client.ObjectKeyFromObject(wl) || present[k] || apimeta.IsStatusConditionTrue(o.Status.Conditions, kueue.WorkloadFinished) {
			continue
		}
		to := d.destination(o)
		if !slices.Equal(to, []string{cluster}) {
			continue // not sent, or sent to several (Kueue's own dispatch): not counted
		}
		if o.Spec.Priority != nil && *o.Spec.Priority < priority {
			continue
		}
		out = append(out, feasibility.Ahead{Name: k.String(), Workload: workloadOn(c, o, nil), Runtime: feasibility.RuntimeOf(o)})
	}
	return out
}

// destination is where o was sent: its cluster, else the clusters nominated for it,
// from the cache or, until the cache shows it, from the nomination just written.
func (d *Dispatcher) destination(o *kueue.Workload) []string {
	k := client.ObjectKeyFromObject(o)
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case o.Status.ClusterName != nil:
		delete(d.sent, k)
		return []string{*o.Status.ClusterName}
	case len(o.Status.NominatedClusterNames) > 0:
		delete(d.sent, k)
		return o.Status.NominatedClusterNames
	}
	return d.sent[k]
}

// workloadOn is wl as the worker cluster would place it: its pod sets at the counts
// the manager's Kueue assigned, the flavors the worker also has, and the tenant tier
// of the worker's namespace (nsLabels).
func workloadOn(c *feasibility.Cluster, wl *kueue.Workload, nsLabels map[string]string) *feasibility.Workload {
	w := &feasibility.Workload{PodSets: feasibility.PodSetsOf(wl), Tenant: workload.TierOf(workload.Namespace{Labels: nsLabels}, "")}
	for i := range w.PodSets {
		ps := &w.PodSets[i]
		// The worker's Kueue assigns its own flavors: those it does not define do
		// not restrict the nodes.
		ps.Flavors = slices.DeleteFunc(ps.Flavors, func(f string) bool {
			_, ok := c.FlavorLabels[f]
			return !ok
		})
		// A required domain the pods' own annotations ask the scheduler for (KAI's,
		// Kueue's, LeaderWorkerSet's, co-locate: strict), when Kueue's TAS did not.
		if ps.RequiredTopology == "" && len(ps.Slices) == 0 {
			pod := &corev1.Pod{ObjectMeta: ps.Template.ObjectMeta, Spec: ps.Template.Spec}
			if pol, ok, err := topology.PolicyOf(pod, nil, c.Levels); err == nil && ok && pol.Required {
				ps.RequiredTopology = pol.LevelsWith(c.Levels)[pol.Level].NodeLabel
			}
		}
	}
	return w
}

// Best is the cluster where the Workload starts first (the one named first on a
// tie); one that holds it with no known start only when none has one; nil when
// none holds it.
func Best(verdicts []Verdict) *Verdict {
	var best *Verdict
	for i := range verdicts {
		v := &verdicts[i]
		switch {
		case !v.Holds:
		case best == nil, v.OK && !best.OK, v.OK && best.OK && v.Start.Before(best.Start):
			best = v
		}
	}
	return best
}

// describe lists every cluster's verdict.
func describe(verdicts []Verdict) string {
	parts := make([]string, 0, len(verdicts))
	for _, v := range verdicts {
		parts = append(parts, v.Cluster+": "+v.Why)
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

// workerFor is a client of the worker cluster name (nil, and why, when it cannot be
// reached: inactive, or its kubeconfig is missing).
func (d *Dispatcher) workerFor(ctx context.Context, name string) (client.Client, string) {
	mkc := &kueue.MultiKueueCluster{}
	if err := d.Client.Get(ctx, client.ObjectKey{Name: name}, mkc); err != nil {
		return nil, fmt.Sprintf("no MultiKueueCluster: %v", err)
	}
	if !apimeta.IsStatusConditionTrue(mkc.Status.Conditions, kueue.MultiKueueClusterActive) {
		return nil, "not active"
	}
	kc := mkc.Spec.ClusterSource.KubeConfig
	if kc == nil || kc.LocationType == kueue.PathLocationType {
		return nil, "its kubeconfig is not in a Secret (a path, or a ClusterProfile, is not read)"
	}
	secret := &corev1.Secret{}
	if err := d.Secrets.Get(ctx, client.ObjectKey{Namespace: d.KueueNamespace, Name: kc.Location}, secret); err != nil {
		return nil, fmt.Sprintf("its kubeconfig Secret %s/%s cannot be read: %v", d.KueueNamespace, kc.Location, err)
	}
	version := secret.ResourceVersion + "/" + kc.Location
	d.mu.Lock()
	defer d.mu.Unlock()
	if w := d.workers[name]; w != nil && w.version == version {
		return w.client, ""
	}
	c, err := newWorkerClient(secret.Data[kubeconfigKey], d.Scheme)
	if err != nil {
		return nil, fmt.Sprintf("its kubeconfig (Secret %s/%s, key %s) is refused: %v", d.KueueNamespace, kc.Location, kubeconfigKey, err)
	}
	if d.workers == nil {
		d.workers = map[string]*worker{}
	}
	d.workers[name] = &worker{version: version, client: c}
	return c, ""
}

func newWorkerClient(kubeconfig []byte, scheme *runtime.Scheme) (client.Client, error) {
	if len(kubeconfig) == 0 {
		return nil, errors.New("empty")
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 50, 100
	return client.New(cfg, client.Options{Scheme: scheme})
}

// SetupWithManager runs the dispatcher on the manager cluster's Workloads.
func (d *Dispatcher) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("multikueue-dispatcher").
		For(&kueue.Workload{}).
		Complete(d)
}
