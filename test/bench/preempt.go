package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	testutil "github.com/kube-nexus/kubenexus/test/util"
)

// The PriorityClasses of W6: the gangs filling the nodes, and those preempting them.
const (
	benchLowPriority  = "bench-low"
	benchHighPriority = "bench-high"
)

// filled is the namespace of the lower-priority gangs W6 fills the nodes with.
type filled struct {
	ns           string
	gangs, size  int
	fillPodCount int
}

// fillNodes fills every node with lower-priority gangs of w.gangSize members of 8
// CPUs, bound directly (no scheduler runs yet): member i of a gang on a different
// node from the gang's other members, 4 members per 32-CPU node.
func fillNodes(ctx context.Context, c client.Client, a arm, w workload, prefix string) (*filled, error) {
	for name, v := range map[string]int32{benchLowPriority: 10, benchHighPriority: 1000} {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: v}
		if err := c.Create(ctx, pc); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return nil, err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	if err := c.Create(ctx, ns); err != nil {
		return nil, err
	}
	n := len(nodes.Items)
	perNode := 4
	f := &filled{ns: ns.Name, gangs: n * perNode / w.gangSize, size: w.gangSize}
	f.fillPodCount = f.gangs * f.size
	fmt.Printf("%s/%s: filling %d nodes with %d bound priority-10 gangs of %d\n", w.name, a.name, n, f.gangs, f.size)
	if err := testutil.Parallel(f.gangs, func(g int) error {
		name := fmt.Sprintf("low%04d", g)
		if a.gangs == sigsGangs {
			return c.Create(ctx, testutil.ForeignPodGroup(v1alpha1.NewSigsPodGroup(), ns.Name, name, map[string]any{"minMember": int64(f.size)}))
		}
		return c.Create(ctx, testutil.MakePodGroup(name, ns.Name).MinMember(int32(f.size)).Obj())
	}); err != nil {
		return nil, err
	}
	stride := f.gangs // member i of gang g on node (g + i*stride) / perNode... spread over the fleet
	if err := testutil.Parallel(f.fillPodCount, func(i int) error {
		g, m := i/f.size, i%f.size
		slot := (g + m*stride) % f.fillPodCount
		p := testutil.MakePod(fmt.Sprintf("low%04d-%d", g, m), ns.Name).SchedulerName(a.schedulerName).
			Req("cpu", "8", "memory", "1Gi").PriorityClass(benchLowPriority).PodGroup(fmt.Sprintf("low%04d", g)).Obj()
		p.Spec.NodeName = nodes.Items[slot/perNode].Name
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
		return c.Create(ctx, p)
	}); err != nil {
		return nil, err
	}
	return f, nil
}

// count returns the lower-priority pods evicted per placed pod and the gangs left
// with some but not all of their members.
func (f *filled) count(ctx context.Context, c client.Client, placed int) (float64, float64) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(f.ns)); err != nil {
		return 0, 0
	}
	left := map[string]int{}
	alive := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			left[p.Labels[v1alpha1.LabelPodGroup]]++
			alive++
		}
	}
	partial := 0
	for _, n := range left {
		if n < f.size {
			partial++
		}
	}
	return float64(f.fillPodCount-alive) / float64(placed), float64(partial)
}

func (f *filled) cleanup(ctx context.Context, c client.Client, sigsCRD bool) {
	objs := []client.Object{&corev1.Pod{}, &v1alpha1.PodGroup{}}
	if sigsCRD {
		objs = append(objs, v1alpha1.NewSigsPodGroup())
	}
	for _, o := range objs {
		if err := c.DeleteAllOf(ctx, o, client.InNamespace(f.ns), client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) && !strings.Contains(err.Error(), "no matches") {
			fmt.Fprintf(os.Stderr, "bench: cleaning up %s: %v\n", f.ns, err)
		}
	}
}
