package networkfabric

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/topology"
)

// A gang without placed members is first planned over a window of the cluster (as
// many nodes as kube-scheduler itself searches for one pod, from a start that
// moves on with each plan the window holds), and over all nodes only when the
// window does not hold it. Planning over every node for each gang made a gang's
// cost grow with the cluster's size where kube-scheduler's stays flat (see the
// scheduler's benchmarks in test/bench).
//
// The window is made of whole domains of the lowest level, up to the policy's, that
// some node carries a label of (the rack, where nvlink and ToR are not labelled),
// so that a plan in one of its domains is a plan the whole cluster would allow;
// such a plan is taken only when it keeps the gang in one domain of that level or
// below. Where no level up to the policy's is labelled, every domain is one node
// and the window is a run of nodes, whose plan is taken whenever it holds the gang.

// labelled tracks, from the node informer, which topology levels each node carries
// a label of.
type labelled struct {
	levels []topology.Level
	mu     sync.Mutex
	nodes  map[string]uint64 // node → bit i set: it carries level i's label
	counts []int             // per level: the nodes carrying its label
}

func newLabelled(levels []topology.Level) *labelled {
	return &labelled{levels: levels, nodes: map[string]uint64{}, counts: make([]int, len(levels))}
}

func (l *labelled) bits(n *corev1.Node) uint64 {
	var b uint64
	for i, lv := range l.levels {
		if i < 64 && n.Labels[lv.NodeLabel] != "" {
			b |= 1 << i
		}
	}
	return b
}

// put records a node's labels (0: the node is gone or carries none).
func (l *labelled) put(name string, b uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	old := l.nodes[name]
	for i := range l.counts {
		if old&(1<<i) != 0 {
			l.counts[i]--
		}
		if b&(1<<i) != 0 {
			l.counts[i]++
		}
	}
	if b == 0 {
		delete(l.nodes, name)
	} else {
		l.nodes[name] = b
	}
}

func (l *labelled) set(obj any) {
	if n, ok := obj.(*corev1.Node); ok {
		l.put(n.Name, l.bits(n))
	}
}

func (l *labelled) drop(obj any) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if n, ok := obj.(*corev1.Node); ok {
		l.put(n.Name, 0)
	}
}

// lowest returns the lowest level up to maxLevel that some node carries a label
// of, -1 when none does, and false when nothing tracks the nodes.
func (l *labelled) lowest(maxLevel int) (int, bool) {
	if l == nil {
		return 0, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := 0; i <= maxLevel && i < len(l.counts); i++ {
		if l.counts[i] > 0 {
			return i, true
		}
	}
	return -1, true
}

// carried reports whether some node carries level i's label (false when nothing
// tracks the nodes).
func (l *labelled) carried(i int) bool {
	if l == nil || i < 0 {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return i < len(l.counts) && l.counts[i] > 0
}

// trackLabels follows the nodes' topology labels from inf's events.
func trackLabels(inf toolscache.SharedIndexInformer, levels []topology.Level) (*labelled, error) {
	l := newLabelled(levels)
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

// windowSize is how many of n nodes a plan looks at first.
func windowSize(n int) int {
	if n <= minWindow {
		return n
	}
	pct := max(50-n/125, 5)
	return max(n*pct/100, minWindow)
}

// window returns the nodes a gang's plan looks at first, from start on: at least
// windowSize of them, made of whole domains of level (-1: single nodes), and the
// position after the last node looked at. It returns nil when the window would
// hold every node.
func (pl *Plugin) window(nodes []fwk.NodeInfo, level, start int) ([]fwk.NodeInfo, int) {
	w := windowSize(len(nodes))
	if w >= len(nodes) {
		return nil, start
	}
	out := make([]fwk.NodeInfo, 0, w)
	if level < 0 {
		for i := range w {
			out = append(out, nodes[(start+i)%len(nodes)])
		}
		return out, start + w
	}
	label := pl.levels[level].NodeLabel
	members := map[string][]int{}
	for i, ni := range nodes {
		if v := ni.Node().Labels[label]; v != "" {
			members[v] = append(members[v], i)
		}
	}
	taken := map[string]bool{}
	k := 0
	for ; k < len(nodes) && len(out) < w; k++ {
		i := (start + k) % len(nodes)
		v := nodes[i].Node().Labels[label]
		if v == "" {
			out = append(out, nodes[i]) // a domain of its own
			continue
		}
		if taken[v] {
			continue
		}
		taken[v] = true
		for _, j := range members[v] {
			out = append(out, nodes[j])
		}
	}
	if len(out) >= len(nodes) {
		return nil, start
	}
	return out, start + k
}
