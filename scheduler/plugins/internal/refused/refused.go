// Package refused remembers the pending pods a plugin's Filter refused, so that the
// plugin can send them back to the active queue when what refused them changes in a
// way the scheduler's queueing hints cannot see in time: a change that reaches the
// plugin's own cache after the scheduler's event, or one that is no API event at all
// (a reservation's expiry).
package refused

import (
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/podobj"
)

// Pods are the refused pods (uid → pod), each kept until it is bound or deleted.
type Pods struct {
	handle fwk.Handle
	pods   sync.Map
}

// New returns the set, forgetting pods from the scheduler's pod informer as they
// are bound or deleted.
func New(h fwk.Handle) (*Pods, error) {
	p := &Pods{handle: h}
	forget := func(obj any) {
		if pod := podobj.From(obj); pod != nil {
			p.pods.Delete(pod.UID)
		}
	}
	if _, err := h.SharedInformerFactory().Core().V1().Pods().Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, newObj any) {
			if pod := podobj.From(newObj); pod != nil && pod.Spec.NodeName != "" {
				p.pods.Delete(pod.UID)
			}
		},
		DeleteFunc: forget,
	}); err != nil {
		return nil, fmt.Errorf("watching pods: %w", err)
	}
	return p, nil
}

// Add remembers a pod Filter refused.
func (p *Pods) Add(pod *corev1.Pod) { p.pods.Store(pod.UID, pod) }

// Activate moves every remembered pod back to the active queue; why says what
// changed, for the log.
func (p *Pods) Activate(logger klog.Logger, why string) {
	pods := map[string]*corev1.Pod{}
	p.pods.Range(func(_, v any) bool {
		pod := v.(*corev1.Pod)
		pods[pod.Namespace+"/"+pod.Name] = pod
		return true
	})
	if len(pods) > 0 {
		logger.V(4).Info(why+"; retrying the pods Filter refused", "pods", len(pods))
		p.handle.Activate(logger, pods)
	}
}
