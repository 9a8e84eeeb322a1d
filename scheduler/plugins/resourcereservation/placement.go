package resourcereservation

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-nexus/kubenexus/api/hardware"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/nodefree"
)

// dominantResource is the resource whose leftover place minimises: the first of
// gpus the slot asks for, else CPU.
func dominantResource(slot map[corev1.ResourceName]int64, gpus []corev1.ResourceName) corev1.ResourceName {
	for _, name := range gpus {
		if slot[name] > 0 {
			return name
		}
	}
	return corev1.ResourceCPU
}

// usage tallies what the pods on each node (bound, or assumed by the scheduler and
// not bound yet) request, and returns, of the pods that consume the reservation,
// one (the representative whose placement rules the reservation follows; nil: none)
// and the nodes they run on.
func (r *reservation) usage(pods []*corev1.Pod, assumed []assumedPod) (used nodefree.Tally[string], rep *corev1.Pod, hosts map[string]bool) {
	used, hosts = nodefree.Tally[string]{}, map[string]bool{}
	bound := make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		if r.consumedBy(p) {
			if rep == nil {
				rep = p
			}
			if p.Spec.NodeName != "" {
				hosts[p.Spec.NodeName] = true
			}
		}
		if p.Spec.NodeName != "" {
			bound[p.UID] = true
			if !workload.Finished(p) {
				used.Add(p.Spec.NodeName, nodefree.Requests(p), 1)
			}
		}
	}
	for _, a := range assumed {
		if !bound[a.pod.UID] {
			used.Add(a.node, nodefree.Requests(a.pod), 1)
		}
	}
	return used, rep, hosts
}

// place picks a node for an unplaced reservation: among the nodes its owner's pods
// may run on (node affinity, taints and unschedulable of a pod of the owner, when
// one exists), those where all its slots fit beside their pods (bound and assumed)
// and other reservations. It prefers a node where the owner's pods already run,
// then the tightest fit of the slot's dominant resource (GPUs, else CPU), so that
// whole free nodes stay whole. Nodes whose HardwareTier (tiers; nil: none) does not
// admit the namespace's tenant tier are left out. It lists from the informers: it
// runs in the background for unplaced reservations only, never in a scheduling
// cycle.
func (s *Shared) place(r *reservation, tiers *hardware.TierSet) (string, string) {
	nodes, err := s.nodes.List(labels.Everything())
	if err != nil {
		return "", fmt.Sprintf("listing nodes: %v", err)
	}
	// The assumed pods before the lister (see consumedOn): a pod bound in between
	// is in one of the two, and counted once.
	var assumed []assumedPod
	s.assumed.Range(func(_, v any) bool {
		assumed = append(assumed, v.(assumedPod))
		return true
	})
	pods, err := s.pods.List(labels.Everything())
	if err != nil {
		return "", fmt.Sprintf("listing pods: %v", err)
	}
	used, rep, hosts := r.usage(pods, assumed)
	now := time.Now()
	idx := s.index()
	for node, rs := range idx.byNode {
		for _, o := range rs {
			if o.key != r.key && o.holds(now) {
				// Slots consumed are in the pods' requests already.
				left := o.slots - int(o.consumed)
				if left > 0 {
					used.Add(node, o.slot, left)
				}
			}
		}
	}
	dominant := dominantResource(r.slot, s.gpus)
	type candidate struct {
		name     string
		host     bool
		leftover int64
	}
	var fits []candidate
	eligible, tierRefused := 0, 0
	for _, n := range nodes {
		if !r.selects(n) || rep != nil && !placement.Eligible(rep, n) || rep == nil && !placement.Eligible(&corev1.Pod{}, n) {
			continue
		}
		if s.gate.refuses(tiers, r.key.Namespace, n) != "" {
			tierRefused++
			continue
		}
		eligible++
		ok := true
		var leftover int64
		for name, v := range r.slot {
			alloc, has := n.Status.Allocatable[name]
			free := int64(0)
			if has {
				free = alloc.MilliValue() - used[n.Name][name]
			}
			if free < nodefree.Times(v, r.slots) {
				ok = false
				break
			}
			if name == dominant {
				leftover = free - nodefree.Times(v, r.slots)
			}
		}
		if ok {
			fits = append(fits, candidate{name: n.Name, host: hosts[n.Name], leftover: leftover})
		}
	}
	if len(fits) == 0 {
		refusedNote := ""
		if tierRefused > 0 {
			refusedNote = fmt.Sprintf("; %d more in HardwareTiers that do not admit tenant tier %s", tierRefused, s.gate.tenantOf(r.key.Namespace))
		}
		return "", fmt.Sprintf("No node has %d slot(s) of %s free beside its pods and other reservations (%d eligible node(s)%s); retrying every %s.",
			r.slots, describe(r.slot), eligible, refusedNote, s.retry)
	}
	sort.Slice(fits, func(i, j int) bool {
		a, b := fits[i], fits[j]
		if a.host != b.host {
			return a.host
		}
		if a.leftover != b.leftover {
			return a.leftover < b.leftover
		}
		return a.name < b.name
	})
	return fits[0].name, ""
}

// describe renders a slot as "{cpu: 4, nvidia.com/gpu: 1}".
func describe(slot map[corev1.ResourceName]int64) string {
	names := make([]string, 0, len(slot))
	for name := range slot {
		names = append(names, string(name))
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, name := range names {
		q := resource.NewMilliQuantity(slot[corev1.ResourceName(name)], resource.DecimalSI)
		if name == string(corev1.ResourceMemory) {
			q = resource.NewQuantity(slot[corev1.ResourceName(name)]/1000, resource.BinarySI)
		}
		parts = append(parts, name+": "+q.String())
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
