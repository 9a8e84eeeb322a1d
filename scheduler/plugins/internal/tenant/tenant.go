// Package tenant resolves a pod's tenant tier for every KubeNexus plugin the same
// way: from its namespace's tenant.kubenexus.io/tier label or, when the
// KubeNexusConfig says so (spec.kueue.tenantTierFrom: ClusterQueue), from the label
// of the Kueue ClusterQueue that admitted the pod's Workload. Both are objects the
// tenant cannot write; the pod's own labels never count.
package tenant

import (
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/crdcache"
)

// Queues says which ClusterQueue admitted a pod and what that queue's labels are
// (the shared KubeNexus cache, when Kueue is installed).
type Queues interface {
	ClusterQueueOf(pod *corev1.Pod) (string, bool)
	ClusterQueueLabels(name string) (map[string]string, bool)
}

// Resolver gives pods their tenant tier's source.
type Resolver struct {
	namespaces corelisters.NamespaceLister
	queues     Queues
	fromQueue  atomic.Bool
}

// NewResolver returns a Resolver over these namespaces and queues (nil: Kueue is
// not read).
func NewResolver(namespaces corelisters.NamespaceLister, queues Queues) *Resolver {
	return &Resolver{namespaces: namespaces, queues: queues}
}

// SetFromClusterQueue turns the ClusterQueue source on or off (ProfileClassifier's
// tenantTierFrom arg).
func (r *Resolver) SetFromClusterQueue(on bool) { r.fromQueue.Store(on) }

// Source returns the labels that carry the pod's tenant tier: those of the
// ClusterQueue that admitted it when that source is on and the queue has a tier
// label, else its namespace's. ok is false when the namespace is not in the cache
// yet.
func (r *Resolver) Source(pod *corev1.Pod) (labels map[string]string, ok bool) {
	if r.fromQueue.Load() && r.queues != nil {
		if cq, admitted := r.queues.ClusterQueueOf(pod); admitted {
			if l, found := r.queues.ClusterQueueLabels(cq); found && workload.HasTier(l) {
				return l, true
			}
		}
	}
	ns, err := r.namespaces.Get(pod.Namespace)
	if err != nil {
		return nil, false
	}
	return ns.Labels, true
}

// TierOf is the pod's tenant tier (bronze when its source has no valid tier label).
func (r *Resolver) TierOf(pod *corev1.Pod) v1alpha1.TenantTier {
	l, _ := r.Source(pod)
	return workload.TierOf(workload.Namespace{Labels: l}, "")
}

// Provider hands every plugin of the process the same Resolver.
type Provider struct {
	once     sync.Once
	resolver *Resolver

	tiersOnce sync.Once
	tiers     *Tiers
	tiersErr  error
}

// Get returns the shared Resolver, built on first use from the scheduler's
// namespace informer and queues (nil: Kueue is not read). When queues bound the pods
// an admitted Workload vouches for (crdcache's SetControllerPods), they get the
// scheduler's pods indexed by controller.
func (p *Provider) Get(h fwk.Handle, queues Queues) *Resolver {
	p.once.Do(func() {
		p.resolver = NewResolver(h.SharedInformerFactory().Core().V1().Namespaces().Lister(), queues)
		if v, ok := queues.(interface{ SetControllerPods(crdcache.ControllerPods) }); ok {
			if list, err := controllerPods(h); err == nil {
				v.SetControllerPods(list)
			} else {
				klog.Background().Error(err, "Indexing pods by controller; an admitted Workload vouches for every pod that names its owner")
			}
		}
	})
	return p.resolver
}

// controllerIndex indexes pods by their controller's UID.
const controllerIndex = "kubenexus.io/controller-uid"

// controllerPods indexes the scheduler's pod informer by controller and returns the
// lookup. The informer must not have started.
func controllerPods(h fwk.Handle) (crdcache.ControllerPods, error) {
	informer := h.SharedInformerFactory().Core().V1().Pods().Informer()
	if err := informer.AddIndexers(toolscache.Indexers{controllerIndex: func(obj any) ([]string, error) {
		if pod, ok := obj.(*corev1.Pod); ok {
			if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
				return []string{pod.Namespace + "/" + string(ref.UID)}, nil
			}
		}
		return nil, nil
	}}); err != nil {
		return nil, err
	}
	indexer := informer.GetIndexer()
	return func(namespace string, uid types.UID) []*corev1.Pod {
		objs, err := indexer.ByIndex(controllerIndex, namespace+"/"+string(uid))
		if err != nil {
			return nil
		}
		out := make([]*corev1.Pod, 0, len(objs))
		for _, o := range objs {
			if pod, ok := o.(*corev1.Pod); ok {
				out = append(out, pod)
			}
		}
		return out
	}, nil
}
