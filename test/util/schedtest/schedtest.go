// Package schedtest builds a scheduling-framework handle for plugins built through
// their New in unit tests: kube-scheduler's own framework over a fake clientset,
// its shared informers, and a snapshot of the nodes and pods given.
package schedtest

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/dynamic-resource-allocation/resourceslice/tracker"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/util/assumecache"
)

// SchedulerName is the profile's name, the scheduler the tests' pods name.
const SchedulerName = "kubenexus-scheduler"

// Env is a profile's handle and what it was built on.
type Env struct {
	Handle fwk.Handle
	Client *fake.Clientset

	ctx       context.Context
	informers informers.SharedInformerFactory
	snapshot  *internalcache.Snapshot

	mu        sync.Mutex
	activated []string
	// nominated are the pods nominated to a node, by UID, as kube-scheduler's
	// nominator holds them: one node per pod.
	nominated map[types.UID]nomination
}

type nomination struct {
	node string
	pod  fwk.PodInfo
}

// New returns a handle whose clientset and informers hold objs, and whose snapshot
// holds the nodes among objs and the pods among them bound to one of them, with
// kube-scheduler's own DRA manager over those informers (the ResourceClaims among
// objs, assumed allocations included). Build the plugins with it, then call Start.
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
			pods = append(pods, v)
		}
	}
	e := &Env{Client: cs, ctx: ctx, informers: f, snapshot: snapshotOf(pods, nodes)}
	slices, err := tracker.StartTracker(ctx, tracker.Options{SliceInformer: f.Resource().V1().ResourceSlices(), KubeClient: cs})
	if err != nil {
		t.Fatal(err)
	}
	claims := assumecache.NewAssumeCache(klog.FromContext(ctx), f.Resource().V1().ResourceClaims().Informer(), "ResourceClaim", "", nil)
	h, err := frameworkruntime.NewFramework(ctx, frameworkruntime.Registry{}, &config.KubeSchedulerProfile{SchedulerName: SchedulerName},
		frameworkruntime.WithClientSet(cs),
		frameworkruntime.WithKubeConfig(&rest.Config{}),
		frameworkruntime.WithInformerFactory(f),
		frameworkruntime.WithSnapshotSharedLister(e.snapshot),
		frameworkruntime.WithPodActivator(activator{e}),
		frameworkruntime.WithPodNominator(nominator{e}),
		frameworkruntime.WithSharedDRAManager(dynamicresources.NewDRAManager(ctx, claims, slices, f)),
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

// SyncSnapshot brings the snapshot up to the clientset, as the scheduler's cache
// does between cycles: it then holds the nodes the clientset has and the pods bound
// to them. Until it is called the snapshot stays as it was (the scheduler's cache
// lags behind the informers).
func (e *Env) SyncSnapshot(t testing.TB) {
	t.Helper()
	nodes, err := e.Client.CoreV1().Nodes().List(e.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := e.Client.CoreV1().Pods(metav1.NamespaceAll).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ns []*corev1.Node
	for i := range nodes.Items {
		ns = append(ns, &nodes.Items[i])
	}
	var ps []*corev1.Pod
	for i := range pods.Items {
		ps = append(ps, &pods.Items[i])
	}
	*e.snapshot = *snapshotOf(ps, ns)
}

// snapshotOf is the snapshot of nodes and of the pods bound to one of them (the
// scheduler's snapshot lists no node it has no Node object of).
func snapshotOf(pods []*corev1.Pod, nodes []*corev1.Node) *internalcache.Snapshot {
	known := map[string]bool{}
	for _, n := range nodes {
		known[n.Name] = true
	}
	var bound []*corev1.Pod
	for _, p := range pods {
		if known[p.Spec.NodeName] {
			bound = append(bound, p)
		}
	}
	return internalcache.NewSnapshot(bound, nodes)
}

// WaitFor polls cond until it holds, failing the test after a generous timeout:
// for what the informers deliver to the plugins' handlers after Start or after a
// change made through Client.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// Nominate nominates pod to node, as preemption does (replacing any nomination of
// the pod): the handle's NominatedPodsForNode lists it.
func (e *Env) Nominate(pod *corev1.Pod, node string) {
	pi, err := framework.NewPodInfo(pod)
	if err != nil {
		panic(err)
	}
	e.nominate(pi, node)
}

func (e *Env) nominate(pi fwk.PodInfo, node string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.nominated == nil {
		e.nominated = map[types.UID]nomination{}
	}
	uid := pi.GetPod().UID
	if node == "" {
		delete(e.nominated, uid)
		return
	}
	e.nominated[uid] = nomination{node: node, pod: pi}
}

// nominator holds the nominations made with Env.Nominate and by the plugins
// (AddNominatedPod), as kube-scheduler's does: a nomination to "" clears the pod's.
type nominator struct{ e *Env }

func (n nominator) AddNominatedPod(_ klog.Logger, pi fwk.PodInfo, ni *fwk.NominatingInfo) {
	node := ""
	if ni != nil {
		node = ni.NominatedNodeName
	}
	n.e.nominate(pi, node)
}

func (n nominator) DeleteNominatedPodIfExists(pod *corev1.Pod) {
	n.e.mu.Lock()
	defer n.e.mu.Unlock()
	delete(n.e.nominated, pod.UID)
}

func (n nominator) UpdateNominatedPod(_ klog.Logger, old *corev1.Pod, pi fwk.PodInfo) {
	n.e.mu.Lock()
	defer n.e.mu.Unlock()
	if nom, ok := n.e.nominated[old.UID]; ok {
		delete(n.e.nominated, old.UID)
		n.e.nominated[pi.GetPod().UID] = nomination{node: nom.node, pod: pi}
	}
}

func (n nominator) NominatedPodsForNode(node string) []fwk.PodInfo {
	n.e.mu.Lock()
	defer n.e.mu.Unlock()
	var out []fwk.PodInfo
	for _, nom := range n.e.nominated {
		if nom.node == node {
			out = append(out, nom.pod)
		}
	}
	return out
}
