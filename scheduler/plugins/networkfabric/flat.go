package networkfabric

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/kube-nexus/kubenexus/api/topology"
)

// A cluster whose nodes carry no label of any topology level is flat: every domain
// of every level is one node, so a gang's plan only picks the nodes its members
// take. There, a gang whose policy is only preferred is first planned over a
// window of the nodes (as many as kube-scheduler itself searches for one pod,
// from a start that moves on with each plan), and over all of them only when the
// window does not hold it: planning over every node for each gang cost the upstream
// gang benchmark (1000 gangs of 3 on 5000 unlabelled nodes) half of stock's
// throughput. A required policy, or members already placed, always plan over all.

// labelled counts the nodes that carry a label of some topology level, from the
// node informer.
type labelled struct {
	levels []topology.Level
	mu     sync.Mutex
	nodes  map[string]bool
}

func (l *labelled) has(n *corev1.Node) bool {
	for _, lv := range l.levels {
		if n.Labels[lv.NodeLabel] != "" {
			return true
		}
	}
	return false
}

func (l *labelled) set(obj any) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.has(n) {
		l.nodes[n.Name] = true
	} else {
		delete(l.nodes, n.Name)
	}
}

func (l *labelled) drop(obj any) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if n, ok := obj.(*corev1.Node); ok {
		l.mu.Lock()
		delete(l.nodes, n.Name)
		l.mu.Unlock()
	}
}

// flat reports whether no node is known to carry a topology label; false when
// nothing tracks the nodes.
func (l *labelled) flat() bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.nodes) == 0
}

// trackLabels counts labelled nodes from inf's events.
func trackLabels(inf toolscache.SharedIndexInformer, levels []topology.Level) (*labelled, error) {
	l := &labelled{levels: levels, nodes: map[string]bool{}}
	_, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    l.set,
		UpdateFunc: func(_, n any) { l.set(n) },
		DeleteFunc: l.drop,
	})
	return l, err
}

// minWindow and the percentage below are kube-scheduler's own bounds on the nodes
// it searches for one pod (numFeasibleNodesToFind with an adaptive percentage).
const minWindow = 100

// windowSize is how many of n nodes a flat plan looks at first.
func windowSize(n int) int {
	if n <= minWindow {
		return n
	}
	pct := max(50-n/125, 5)
	return max(n*pct/100, minWindow)
}
