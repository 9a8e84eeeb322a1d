// Package schedtest builds a scheduling-framework handle for plugins built through
// their New in unit tests: kube-scheduler's own framework over a fake clientset,
// its shared informers, and a snapshot of the nodes and pods given.
package schedtest

import (
	"context"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// SchedulerName is the profile's name, the scheduler the tests' pods name.
const SchedulerName = "kubenexus-scheduler"

// Env is a profile's handle and what it was built on.
type Env struct {
	Handle fwk.Handle
	Client *fake.Clientset

	ctx       context.Context
	informers informers.SharedInformerFactory

	mu        sync.Mutex
	activated []string
	nominated map[string][]fwk.PodInfo
}

// New returns a handle whose clientset and informers hold objs, and whose snapshot
// holds the nodes among objs and the pods among them bound to a node. Build the
// plugins with it, then call Start.
func New(t testing.TB, objs ...runtime.Object) *Env {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cs := fake.NewClientset(objs...)
	f := informers.NewSharedInformerFactory(cs, 0)
	t.Cleanup(func() {
		cancel()
		f.Shutdown()
	})
	var nodes []*corev1.Node
	var pods []*corev1.Pod
	for _, o := range objs {
		switch v := o.(type) {
		case *corev1.Node:
			nodes = append(nodes, v)
		case *corev1.Pod:
			if v.Spec.NodeName != "" {
				pods = append(pods, v)
			}
		}
	}
	e := &Env{Client: cs, ctx: ctx, informers: f}
	h, err := frameworkruntime.NewFramework(ctx, frameworkruntime.Registry{}, &config.KubeSchedulerProfile{SchedulerName: SchedulerName},
		frameworkruntime.WithClientSet(cs),
		frameworkruntime.WithKubeConfig(&rest.Config{}),
		frameworkruntime.WithInformerFactory(f),
		frameworkruntime.WithSnapshotSharedLister(internalcache.NewSnapshot(pods, nodes)),
		frameworkruntime.WithPodActivator(activator{e}),
		frameworkruntime.WithPodNominator(nominator{e}),
	)
	if err != nil {
		t.Fatal(err)
	}
	e.Handle = h
	return e
}

// Start starts the informers the plugins asked for in their New and waits until
// they have listed.
func (e *Env) Start() {
	e.informers.Start(e.ctx.Done())
	e.informers.WaitForCacheSync(e.ctx.Done())
}

// Activated lists the pods (namespace/name) the plugins moved to the active
// queue, call after call (the pods of one call in no set order).
func (e *Env) Activated() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.activated...)
}

type activator struct{ e *Env }

func (a activator) Activate(_ klog.Logger, pods map[string]*corev1.Pod) {
	a.e.mu.Lock()
	defer a.e.mu.Unlock()
	for _, p := range pods {
		a.e.activated = append(a.e.activated, p.Namespace+"/"+p.Name)
	}
}

// Nominate nominates pod to node, as preemption does: the handle's
// NominatedPodsForNode lists it.
func (e *Env) Nominate(pod *corev1.Pod, node string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.nominated == nil {
		e.nominated = map[string][]fwk.PodInfo{}
	}
	pi, err := framework.NewPodInfo(pod)
	if err != nil {
		panic(err)
	}
	e.nominated[node] = append(e.nominated[node], pi)
}

// nominator serves the nominations made with Env.Nominate; the plugins under test
// only read them.
type nominator struct{ e *Env }

func (nominator) AddNominatedPod(klog.Logger, fwk.PodInfo, *fwk.NominatingInfo) {}
func (nominator) DeleteNominatedPodIfExists(*corev1.Pod)                        {}
func (nominator) UpdateNominatedPod(klog.Logger, *corev1.Pod, fwk.PodInfo)      {}

func (n nominator) NominatedPodsForNode(node string) []fwk.PodInfo {
	n.e.mu.Lock()
	defer n.e.mu.Unlock()
	return append([]fwk.PodInfo(nil), n.e.nominated[node]...)
}
