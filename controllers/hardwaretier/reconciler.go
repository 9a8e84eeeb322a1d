package hardwaretier

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kube-nexus/kubenexus/api/hardware"
	"github.com/kube-nexus/kubenexus/api/topology"
	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
)

// nodeNameIndex indexes GPU pods by spec.nodeName.
const nodeNameIndex = "kubenexus.spec.nodeName"

// +kubebuilder:rbac:groups=scheduling.kubenexus.io,resources=hardwaretiers,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.kubenexus.io,resources=hardwaretiers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceslices;deviceclasses;devicetaintrules;resourceclaims,verbs=get;list;watch

// Reconciler keeps HardwareTier status current.
type Reconciler struct {
	Client client.Client
}

func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	tier := &v1alpha1.HardwareTier{}
	if err := r.Client.Get(ctx, req.NamespacedName, tier); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var tiers v1alpha1.HardwareTierList
	if err := r.Client.List(ctx, &tiers); err != nil {
		return ctrl.Result{}, err
	}
	var nodes corev1.NodeList
	if err := r.Client.List(ctx, &nodes); err != nil {
		return ctrl.Result{}, err
	}
	var listErr error
	var gpuResources []corev1.ResourceName // the KubeNexusConfig's, read below
	allocated := func(node string) int64 {
		var pods corev1.PodList
		if err := r.Client.List(ctx, &pods, client.MatchingFields{nodeNameIndex: node}); err != nil {
			listErr = err
			return 0
		}
		var n int64
		for j := range pods.Items {
			n += workload.HeldGPUs(&pods.Items[j], gpuResources...)
		}
		return n
	}
	// Topology levels come from the KubeNexusConfig (the defaults without one).
	var configs v1alpha1.KubeNexusConfigList
	if err := r.Client.List(ctx, &configs); err != nil {
		return ctrl.Result{}, err
	}
	levels := topology.DefaultLevels
	rf := &v1alpha1.ResourceFragmentationPlugin{}
	if len(configs.Items) > 0 {
		levels = topology.Levels(configs.Items[0].Spec.Topology.Levels)
		rf = &configs.Items[0].Spec.Plugins.ResourceFragmentation
	}
	gpuResources = rf.GPUResources()
	devicesOf, err := r.devices(ctx, tiers.Items)
	if err != nil {
		return ctrl.Result{}, err
	}
	extendedOf, err := hardware.ListExtended(ctx, r.Client)
	if err != nil {
		return ctrl.Result{}, err
	}
	cards, _, err := hardware.ListGPUCards(ctx, r.Client, rf.DeviceClasses(), rf.GPUResources())
	if err != nil {
		return ctrl.Result{}, err
	}
	status := ComputeStatus(tier, tiers.Items, nodes.Items, devicesOf, extendedOf, cards.Of, allocated, gpuResources, levels)
	if listErr != nil {
		return ctrl.Result{}, listErr
	}
	if equality.Semantic.DeepEqual(status, tier.Status) {
		return ctrl.Result{}, nil
	}
	patch := client.MergeFromWithOptions(tier.DeepCopy(), client.MergeFromWithOptimisticLock{})
	tier.Status = status
	return ctrl.Result{}, r.Client.Status().Patch(ctx, tier, patch)
}

// devices returns each node's DRA devices, read only when some tier selects by
// them.
func (r *Reconciler) devices(ctx context.Context, tiers []v1alpha1.HardwareTier) (func(string) []hardware.Device, error) {
	if !hardware.UsesDevices(tiers) {
		return func(string) []hardware.Device { return nil }, nil
	}
	return hardware.ListDevices(ctx, r.Client)
}

// requestedGPUs is the pod's effective GPU request if it is bound to a node,
// finished or not: a pod that finishes gives its GPUs back, and the tiers it ran
// on are recomputed.
func requestedGPUs(p *corev1.Pod) int64 {
	if p.Spec.NodeName == "" {
		return 0
	}
	return workload.RequestedGPUs(p)
}

// SetupWithManager recomputes every tier when tiers, nodes or GPU pods change: tiers
// are few, and overlap is a property of the whole set.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Pod{}, nodeNameIndex, func(o client.Object) []string {
		p := o.(*corev1.Pod)
		if requestedGPUs(p) == 0 {
			return nil
		}
		return []string{p.Spec.NodeName}
	}); err != nil {
		return err
	}
	allTiers := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		var tiers v1alpha1.HardwareTierList
		if err := r.Client.List(ctx, &tiers); err != nil {
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(tiers.Items))
		for i := range tiers.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&tiers.Items[i])})
		}
		return reqs
	})
	// Bound GPU pods: binding, finishing and deletion change allocation.
	gpuPods := predicate.NewPredicateFuncs(func(o client.Object) bool {
		p, ok := o.(*corev1.Pod)
		return ok && requestedGPUs(p) > 0
	})
	nodeChanges := predicate.Or(predicate.LabelChangedPredicate{}, predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld.(*corev1.Node), e.ObjectNew.(*corev1.Node)
			return !o.Status.Allocatable[v1alpha1.ResourceNvidiaGPU].Equal(n.Status.Allocatable[v1alpha1.ResourceNvidiaGPU])
		},
	})
	b := ctrl.NewControllerManagedBy(mgr).
		Named("hardwaretier").
		// A tier's selector changing changes its neighbours' overlap too.
		Watches(&v1alpha1.HardwareTier{}, allTiers, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Node{}, allTiers, builder.WithPredicates(nodeChanges)).
		Watches(&corev1.Pod{}, allTiers, builder.WithPredicates(gpuPods))
	// Devices move nodes into and out of tiers that select by them; clusters that
	// do not serve resource.k8s.io/v1 have none.
	served := func(kind string) bool {
		_, err := mgr.GetRESTMapper().RESTMapping(resourceapi.SchemeGroupVersion.WithKind(kind).GroupKind(), resourceapi.SchemeGroupVersion.Version)
		return err == nil
	}
	if served("ResourceSlice") {
		// Devices that pods' own claims hold back no nvidia.com/gpu
		// (hardware.ListExtended): an allocation of such a claim changes capacity.
		own := func(o client.Object) bool {
			c, ok := o.(*resourceapi.ResourceClaim)
			return ok && c.Status.Allocation != nil && c.Annotations[resourceapi.ExtendedResourceClaimAnnotation] != "true"
		}
		ownAllocations := predicate.Funcs{
			CreateFunc: func(e event.CreateEvent) bool { return own(e.Object) },
			UpdateFunc: func(e event.UpdateEvent) bool {
				o, n := e.ObjectOld.(*resourceapi.ResourceClaim), e.ObjectNew.(*resourceapi.ResourceClaim)
				return (own(o) || own(n)) && !equality.Semantic.DeepEqual(o.Status.Allocation, n.Status.Allocation)
			},
			DeleteFunc:  func(e event.DeleteEvent) bool { return own(e.Object) },
			GenericFunc: func(event.GenericEvent) bool { return false },
		}
		// A DeviceClass decides which devices are GPUs (ResourceFragmentation's GPU
		// classes, and classes that back nvidia.com/gpu).
		b = b.Watches(&resourceapi.ResourceSlice{}, allTiers).
			Watches(&resourceapi.ResourceClaim{}, allTiers, builder.WithPredicates(ownAllocations)).
			Watches(&resourceapi.DeviceClass{}, allTiers, builder.WithPredicates(predicate.GenerationChangedPredicate{}))
	}
	// DeviceTaintRules are served from 1.37 on.
	if served("DeviceTaintRule") {
		b = b.Watches(&resourceapi.DeviceTaintRule{}, allTiers)
	}
	return b.Complete(r)
}
