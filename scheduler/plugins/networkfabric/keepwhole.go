package networkfabric

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/workload"
)

// A topology level may be kept whole (topology.Level.KeepWhole; by default the
// NVLink domain, nvidia.com/gpu.clique): a gang that needs a whole domain of it (a
// rack-scale job on an NVL72 rack) finds none when small jobs and CPU-only pods are
// scattered over every domain. Pods that do not need a domain — pods the plugin
// does not plan: pods of no gang, members of gangs that ask for no co-location —
// are scored to go first to nodes outside these domains, then to the fullest domain
// already broken, and last to a whole domain; a gang's plan prefers the domain it
// leaves least stranded (placement.Compute).
//
// A domain is broken once a pod that is not a DaemonSet's or a static pod's runs on
// one of its nodes (assumed pods included: the scheduler snapshot).

// domainUse is how many nodes a domain kept whole has, and on how many of them a
// pod runs.
type domainUse struct{ nodes, used int }

func (d domainUse) whole() bool { return d.used == 0 }

// nodeUse keeps the use of each domain kept whole across cycles: per position in
// the snapshot's node list, the node, its generation and what it added to its
// domain's counts. A cycle looks at every node's generation (the snapshot's list
// keeps its order while no node joins or leaves) and reads again only the pods of
// nodes that changed: one node per binding.
type nodeUse struct {
	mu      sync.Mutex
	label   string
	entries []useEntry
	counts  map[string]domainUse
	// last is the copy the previous call returned, returned again while no node
	// changed (callers only read it).
	last map[string]domainUse
}

type useEntry struct {
	name       string
	generation int64
	domain     string
	used       bool
	set        bool
}

// domains returns the use of each domain of the level kept whole (label) over nodes
// (every node of the snapshot). Cost: O(nodes) generation checks, O(pods) of the
// nodes that changed, O(domains) for the copy it returns.
func (u *nodeUse) domains(nodes []fwk.NodeInfo, label string) map[string]domainUse {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.label != label || len(u.entries) != len(nodes) {
		u.label, u.entries, u.counts, u.last = label, make([]useEntry, len(nodes)), map[string]domainUse{}, nil
	}
	changed := false
	for i, ni := range nodes {
		node := ni.Node()
		if node == nil {
			continue
		}
		e := &u.entries[i]
		if e.set && e.generation == ni.GetGeneration() && e.name == node.Name {
			continue
		}
		changed = true
		if e.set && e.domain != "" {
			u.add(e.domain, -1, e.used)
		}
		*e = useEntry{name: node.Name, generation: ni.GetGeneration(), domain: node.Labels[label], set: true}
		if e.domain != "" {
			e.used = runsPods(ni)
			u.add(e.domain, 1, e.used)
		}
	}
	if !changed && u.last != nil {
		return u.last
	}
	u.last = make(map[string]domainUse, len(u.counts))
	for d, c := range u.counts {
		u.last[d] = c
	}
	return u.last
}

// add counts a node in (sign 1) or out of (-1) domain d.
func (u *nodeUse) add(d string, sign int, used bool) {
	c := u.counts[d]
	c.nodes += sign
	if used {
		c.used += sign
	}
	if c.nodes <= 0 {
		delete(u.counts, d)
		return
	}
	u.counts[d] = c
}

// runsPods reports whether a pod other than a DaemonSet's or a static pod runs on
// the node.
func runsPods(ni fwk.NodeInfo) bool {
	for _, pi := range ni.GetPods() {
		if !workload.NodeBound(pi.GetPod()) {
			return true
		}
	}
	return false
}

// keepLevel returns the level kept whole and its label when some node carries it
// (-1 otherwise): with none, nothing is kept whole and nothing costs anything.
func (pl *Plugin) keepLevel() (int, string) {
	if pl.keep < 0 || !pl.nodeLabels.carried(pl.keep) {
		return -1, ""
	}
	return pl.keep, pl.levels[pl.keep].NodeLabel
}

// wholeDomains returns the use of each domain of the level kept whole over every
// node of the snapshot (nil when no level is kept whole or no node carries its
// label).
func (pl *Plugin) wholeDomains() (map[string]domainUse, string) {
	level, label := pl.keepLevel()
	if level < 0 {
		return nil, ""
	}
	lister := pl.handle.SnapshotSharedLister()
	if lister == nil {
		return nil, ""
	}
	nodes, err := lister.NodeInfos().List()
	if err != nil {
		return nil, ""
	}
	return pl.use.domains(nodes, label), label
}

// keepState carries the domains kept whole from PreScore to Score, for a pod that
// does not need one.
type keepState struct {
	label   string
	domains map[string]domainUse
}

func (s *keepState) Clone() fwk.StateData { return s }

const keepKey fwk.StateKey = "PreScore" + Name + "/keepWhole"

// needsNoDomain reports whether the pod is one kept away from whole domains: every
// pod the plugin has not planned, but a DaemonSet's or a static pod (bound to its
// node).
func needsNoDomain(pod *corev1.Pod) bool {
	return !workload.NodeBound(pod)
}

// preScoreKeepWhole records the domains kept whole for a pod that does not need
// one; it returns false (skip) when there are none among the pod's nodes.
func (pl *Plugin) preScoreKeepWhole(cs fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) bool {
	if !needsNoDomain(pod) {
		return false
	}
	level, label := pl.keepLevel()
	if level < 0 {
		return false
	}
	labelled := false
	for _, ni := range nodes {
		if ni.Node().Labels[label] != "" {
			labelled = true
			break
		}
	}
	if !labelled {
		return false
	}
	domains, _ := pl.wholeDomains()
	if len(domains) == 0 {
		return false
	}
	cs.Write(keepKey, &keepState{label: label, domains: domains})
	return true
}

// keepWholeScore scores a node for a pod that needs no domain: 100 outside the
// domains kept whole, 60–100 in a broken domain (the fuller, the higher: broken
// domains fill up before another breaks), 0 in a whole one.
func keepWholeScore(s *keepState, node *corev1.Node) int64 {
	d := node.Labels[s.label]
	if d == "" {
		return 100
	}
	u, ok := s.domains[d]
	if !ok || u.nodes == 0 {
		return 100
	}
	if u.whole() {
		return 0
	}
	return 60 + int64(40*u.used/u.nodes)
}

// signsKeepWhole reports whether a pod the plugin would score to keep domains
// whole may be signed for opportunistic batching: not while some node carries the
// label of the level kept whole. The previous pod's ranking holds every whole
// domain's nodes level; a pod that breaks one makes its other nodes the best for
// the next, which that ranking would not show (the next pod would break another).
func (pl *Plugin) signsKeepWhole(pod *corev1.Pod) bool {
	if !needsNoDomain(pod) {
		return true
	}
	level, _ := pl.keepLevel()
	return level < 0
}
