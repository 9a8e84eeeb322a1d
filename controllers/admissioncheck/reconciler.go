// Package admissioncheck runs Kueue AdmissionChecks whose controllerName is
// kubenexus.io/placement-feasibility: Kueue reserves quota by counting, and admits an
// 8 × 8-GPU job when 64 GPUs are free in crumbs; this check holds such a Workload
// until all its pods can be placed now — all or nothing, in the one topology domain
// it requires, on nodes its flavors, node selectors, taints and HardwareTiers allow —
// computed with the planner the scheduler's gang plans use.
package admissioncheck

import (
	"context"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kube-nexus/kubenexus/api/hardware"
	"github.com/kube-nexus/kubenexus/api/kueuecompat"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/controllers/feasibility"
)

// ControllerName is the controllerName of the AdmissionChecks this controller runs.
const ControllerName = "kubenexus.io/placement-feasibility"

// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=admissionchecks,verbs=get;list;watch
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=admissionchecks/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=workloads,verbs=get;list;watch
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=workloads/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=resourceflavors;clusterqueues,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaimtemplates,verbs=get;list;watch
// +kubebuilder:rbac:groups=topology.node.k8s.io,resources=noderesourcetopologies,verbs=get;list;watch

var (
	decisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kubenexus_placement_check_decisions_total",
		Help: "Decisions of the placement-feasibility AdmissionCheck, by state (Ready: every pod fits now; Retry: not now, Kueue requeues the Workload).",
	}, []string{"state"})
	pendingGauge = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "kubenexus_placement_check_pending",
		Help: "Workloads with reserved quota waiting for the placement-feasibility AdmissionCheck.",
	})
	registerOnce sync.Once
)

// Reconciler decides the placement-feasibility check of Workloads.
type Reconciler struct {
	Client client.Client
	// Recorder, when set, reports each Retry on the Workload with the check's message.
	Recorder recorder.EventRecorder

	mu sync.Mutex
	// pending are the Workloads last seen waiting for the check.
	pending map[types.NamespacedName]bool
}

// Reconcile decides every Pending state of one of this controller's checks on a
// Workload whose quota is reserved.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	wl := &kueue.Workload{}
	if err := r.Client.Get(ctx, req.NamespacedName, wl); err != nil {
		r.setPending(req.NamespacedName, false)
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	ours, err := r.checks(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	// The indexes of this controller's checks still Pending on the Workload.
	var undecided []int
	for i, st := range wl.Status.AdmissionChecks {
		if ours[string(st.Name)] && st.State == kueue.CheckStatePending {
			undecided = append(undecided, i)
		}
	}
	// Quota reserved, and not being evicted: Kueue resets the checks to Pending when
	// it evicts (after a Retry) while the quota is still reserved, and a second
	// verdict then would leave the Workload with a Retry that its scheduler treats as
	// failed for good.
	reserved := apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadQuotaReserved) && wl.Status.Admission != nil &&
		!apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadEvicted)
	if len(undecided) == 0 || !reserved {
		r.setPending(req.NamespacedName, len(undecided) > 0)
		return ctrl.Result{}, nil
	}
	r.setPending(req.NamespacedName, true)
	c, _, err := feasibility.Read(ctx, r.Client)
	if err != nil {
		return ctrl.Result{}, err
	}
	w, err := r.workloadOf(ctx, wl, c.TierFromClusterQueue, c.GPUClasses)
	if err != nil {
		return ctrl.Result{}, err
	}
	d := feasibility.Decide(c, w)
	state := kueue.CheckStateRetry
	if d.Fits {
		state = kueue.CheckStateReady
	}
	patch := client.MergeFromWithOptions(wl.DeepCopy(), client.MergeFromWithOptimisticLock{})
	now := metav1.Now()
	for _, i := range undecided {
		st := &wl.Status.AdmissionChecks[i]
		st.State, st.Message, st.LastTransitionTime = state, v1alpha1.Shorten(d.Message, maxMessage), now
		// Kueue requeues a Workload sent back after this long (Kueue ≥ 0.15; on v1beta1
		// the field does not exist and Kueue's own backoff applies).
		st.RequeueAfterSeconds = nil
		if !d.Fits {
			st.RequeueAfterSeconds = ptr.To(c.RetryAfterSeconds)
		}
	}
	if err := r.Client.Status().Patch(ctx, wl, patch); err != nil {
		return ctrl.Result{}, err
	}
	decisions.WithLabelValues(string(state)).Inc()
	if !d.Fits && r.Recorder != nil {
		r.Recorder.Eventf(wl, nil, corev1.EventTypeWarning, v1alpha1.EventReasonPlacementRetry, "Check", "%s", v1alpha1.EventNote(d.Message))
	}
	r.setPending(req.NamespacedName, false)
	log.FromContext(ctx).Info("Placement-feasibility check decided", "workload", req.NamespacedName, "state", state, "message", d.Message)
	return ctrl.Result{}, nil
}

// maxMessage is Kueue's limit on an admission check state's message.
const maxMessage = 32768

func (r *Reconciler) setPending(key types.NamespacedName, pending bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if pending {
		r.pending[key] = true
	} else {
		delete(r.pending, key)
	}
	pendingGauge.Set(float64(len(r.pending)))
}

// checks are the names of the AdmissionChecks this controller runs.
func (r *Reconciler) checks(ctx context.Context) (map[string]bool, error) {
	var list kueue.AdmissionCheckList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, ac := range list.Items {
		if ac.Spec.ControllerName == ControllerName {
			out[ac.Name] = true
		}
	}
	return out, nil
}

// workloadOf reads the Workload's pod sets, assigned flavors and tenant tier: from
// its ClusterQueue's label when the KubeNexusConfig says so and the queue has one,
// else from its namespace — never from the pods.
func (r *Reconciler) workloadOf(ctx context.Context, wl *kueue.Workload, tierFromQueue bool, gpuClasses map[string][]string) (*feasibility.Workload, error) {
	w := &feasibility.Workload{ClusterQueue: string(wl.Status.Admission.ClusterQueue)}
	if tierFromQueue {
		cq := &kueue.ClusterQueue{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: w.ClusterQueue}, cq); client.IgnoreNotFound(err) != nil {
			return nil, err
		}
		if workload.HasTier(cq.Labels) {
			w.Tenant = workload.TierOf(workload.Namespace{Labels: cq.Labels}, "")
		}
	}
	if w.Tenant == "" {
		ns := &corev1.Namespace{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: wl.Namespace}, ns); err != nil {
			return nil, err
		}
		w.Tenant = workload.TierOf(workload.Namespace{Labels: ns.Labels}, "")
	}
	w.PodSets = feasibility.PodSetsOf(wl)
	if len(gpuClasses) > 0 {
		for i := range w.PodSets {
			n, err := r.draGPUs(ctx, wl.Namespace, &w.PodSets[i].Template.Spec, gpuClasses)
			if err != nil {
				return nil, err
			}
			w.PodSets[i].DRAGPUs = n
		}
	}
	return w, nil
}

// draGPUs is how many whole GPUs each pod of a template asks for through the
// ResourceClaimTemplates it names (a claim the pods share by name is one allocation
// for all of them, and is not counted per pod). A template not there yet asks for
// nothing: Kueue's integrations create claim templates with the workload.
func (r *Reconciler) draGPUs(ctx context.Context, namespace string, spec *corev1.PodSpec, gpuClasses map[string][]string) (int64, error) {
	var n int64
	for _, pc := range spec.ResourceClaims {
		if pc.ResourceClaimTemplateName == nil {
			continue
		}
		t := &resourceapi.ResourceClaimTemplate{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: *pc.ResourceClaimTemplateName}, t); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return 0, err
		}
		n += hardware.WholeGPUs(&t.Spec.Spec.Devices, gpuClasses)
	}
	return n, nil
}

// SetupWithManager runs the check's two loops: Workloads (decisions) and
// AdmissionChecks (marked Active, which Kueue needs before a ClusterQueue that
// names them admits anything).
//
// served is the version of Kueue's API the cluster serves (kueuecompat.Served):
// on v1beta1, the controllers watch v1beta1 objects and r.Client must be
// kueuecompat's client for it.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, served schema.GroupVersion) error {
	registerOnce.Do(func() { ctrlmetrics.Registry.MustRegister(decisions, pendingGauge) })
	r.pending = map[types.NamespacedName]bool{}
	// A check created after its Workloads reserved quota: decide them all.
	allWorkloads := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		var list kueue.WorkloadList
		if err := r.Client.List(ctx, &list); err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(list.Items))
		for i := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
		return out
	})
	ours := predicate.NewPredicateFuncs(func(o client.Object) bool {
		ac := &kueue.AdmissionCheck{}
		return kueuecompat.ToCurrent(o, ac) == nil && ac.Spec.ControllerName == ControllerName
	})
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("placement-feasibility").
		For(kueuecompat.Object(&kueue.Workload{}, served)).
		Watches(kueuecompat.Object(&kueue.AdmissionCheck{}, served), allWorkloads, builder.WithPredicates(ours, predicate.Funcs{UpdateFunc: func(event.UpdateEvent) bool { return false }})).
		Complete(r); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("placement-feasibility-check").
		For(kueuecompat.Object(&kueue.AdmissionCheck{}, served), builder.WithPredicates(ours)).
		Complete(&activeReconciler{client: r.Client})
}

// activeReconciler marks this controller's AdmissionChecks Active.
type activeReconciler struct{ client client.Client }

func (a *activeReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ac := &kueue.AdmissionCheck{}
	if err := a.client.Get(ctx, req.NamespacedName, ac); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if ac.Spec.ControllerName != ControllerName {
		return ctrl.Result{}, nil
	}
	patch := client.MergeFrom(ac.DeepCopy())
	changed := apimeta.SetStatusCondition(&ac.Status.Conditions, metav1.Condition{
		Type: kueue.AdmissionCheckActive, Status: metav1.ConditionTrue, Reason: "Active",
		Message:            fmt.Sprintf("%s decides Workloads with reserved quota: Ready when every pod can be placed now, Retry otherwise.", ControllerName),
		ObservedGeneration: ac.Generation,
	})
	if !changed {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, a.client.Status().Patch(ctx, ac, patch)
}
