package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
)

// nullBinderReady is the line the null binder prints on stdout once its informer has
// synced (the counterpart of a scheduler's /readyz).
const nullBinderReady = "null-binder: ready"

type podRef struct {
	namespace, name string
	uid             types.UID
}

// nullBinder is the null-binder arm, run as a process of its own (the bench
// re-executes itself with -null-binder) so that its CPU time and RSS are measured
// like a scheduler's. It binds every pending pod of schedulerName, round-robin over
// all nodes, through the pods/binding subresource exactly as kube-scheduler's
// DefaultBinder does, with the schedulers' client settings (QPS/burst 5000,
// protobuf) and no filtering, scoring, events or status writes: what remains is the
// cost of watching pending pods and binding them, so its pods/s is the throughput
// limit this kube-apiserver and etcd set for any scheduler. With events it also
// writes, for each pod it binds, the events.k8s.io Event kube-scheduler records
// ("Scheduled": "Successfully assigned ns/pod to node"), in the background as
// kube-scheduler's event broadcaster does: the limit for a scheduler that records
// its decisions.
func nullBinder(kubeconfig, schedulerName string, workers int, events bool) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 5000, 5000
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx := context.Background()
	nodeList, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return err
	}
	nodes := make([]string, 0, len(nodeList.Items))
	for _, n := range nodeList.Items {
		nodes = append(nodes, n.Name)
	}
	if len(nodes) == 0 {
		return fmt.Errorf("no nodes")
	}
	sort.Strings(nodes)

	queue := workqueue.NewTyped[podRef]()
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = "spec.nodeName=,spec.schedulerName=" + schedulerName
	}))
	inf := factory.Core().V1().Pods().Informer()
	enqueue := func(o any) {
		if p, ok := o.(*corev1.Pod); ok && p.Spec.NodeName == "" && p.DeletionTimestamp == nil {
			queue.Add(podRef{namespace: p.Namespace, name: p.Name, uid: p.UID})
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, o any) { enqueue(o) },
	}); err != nil {
		return err
	}
	stop := make(chan struct{})
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	fmt.Println(nullBinderReady)

	var next atomic.Uint64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				p, shutdown := queue.Get()
				if shutdown {
					return
				}
				node := nodes[int(next.Add(1)-1)%len(nodes)]
				err := cs.CoreV1().Pods(p.namespace).Bind(ctx, &corev1.Binding{
					ObjectMeta: metav1.ObjectMeta{Namespace: p.namespace, Name: p.name, UID: p.uid},
					Target:     corev1.ObjectReference{Kind: "Node", Name: node},
				}, metav1.CreateOptions{})
				if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
					fmt.Fprintf(os.Stderr, "binding %s/%s to %s: %v\n", p.namespace, p.name, node, err)
					queue.Done(p)
					queue.Add(p) // retry; the bench's timeout bounds a persistent failure
					continue
				}
				queue.Done(p)
				if events && err == nil {
					go recordScheduled(ctx, cs, p, node)
				}
			}
		}()
	}
	wg.Wait()
	return nil
}

// recordScheduled writes the Event kube-scheduler records for a pod it bound.
func recordScheduled(ctx context.Context, cs kubernetes.Interface, p podRef, node string) {
	now := time.Now()
	ev := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", p.name, now.UnixNano()), Namespace: p.namespace},
		EventTime:           metav1.NewMicroTime(now),
		ReportingController: "null-binder",
		ReportingInstance:   "null-binder",
		Action:              "Binding",
		Reason:              "Scheduled",
		Regarding:           corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: p.namespace, Name: p.name, UID: p.uid},
		Note:                fmt.Sprintf("Successfully assigned %s/%s to %s", p.namespace, p.name, node),
		Type:                corev1.EventTypeNormal,
	}
	if _, err := cs.EventsV1().Events(p.namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		fmt.Fprintf(os.Stderr, "event for %s/%s: %v\n", p.namespace, p.name, err)
	}
}
