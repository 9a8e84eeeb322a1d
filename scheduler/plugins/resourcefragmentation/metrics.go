package resourcefragmentation

import (
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"github.com/kube-nexus/kubenexus/api/hardware"
	"github.com/kube-nexus/kubenexus/api/topology"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/dragpus"
)

var largestGangDesc = metrics.NewDesc("kubenexus_largest_placeable_gang",
	"The largest gang of members of gpus_per_member GPUs each that fits, now, in one domain of the topology level (\"any\": anywhere) "+
		"among the nodes of one GPU model (nvidia.com/gpu.product) and HardwareTier, counting each node's free GPUs.",
	[]string{"gpu_model", "hardware_tier", "gpus_per_member", "level"}, nil, metrics.ALPHA, "")

var gpusDesc = metrics.NewDesc("kubenexus_gpus",
	"GPUs of the nodes of one GPU model (nvidia.com/gpu.product) and HardwareTier, by state: allocated (held by bound pods), "+
		"free, and fragmented (the free GPUs of nodes where some are allocated: a member that needs the whole node cannot use them; part of free).",
	[]string{"gpu_model", "hardware_tier", "state"}, nil, metrics.ALPHA, "")

var domainGangDesc = metrics.NewDesc("kubenexus_domain_placeable_gang",
	"Per domain of the topology level kept whole (spec.topology.levels[].keepWhole; by default the NVLink domain, nvidia.com/gpu.clique): "+
		"the largest gang of members of gpus_per_member GPUs each that fits in it now, counting each node's free GPUs.",
	[]string{"level", "domain", "gpus_per_member"}, nil, metrics.ALPHA, "")

var domainWholeDesc = metrics.NewDesc("kubenexus_domain_whole",
	"1 while no pod but DaemonSets' and static pods runs in the domain of the topology level kept whole, 0 once one does "+
		"(pods that need no domain go to broken domains first).",
	[]string{"level", "domain"}, nil, metrics.ALPHA, "")

// gangCollector computes the largest placeable gangs when /metrics is scraped, from
// the scheduler's informer caches (bound pods; not the pods assumed in a cycle).
// Cost per scrape: O(nodes + pods).
type gangCollector struct {
	nodes  corelisters.NodeLister
	pods   corelisters.PodLister
	tiers  func() ([]v1alpha1.HardwareTier, error)
	levels []topology.Level
	gpus   []corev1.ResourceName
	// dra reads the GPUs nodes publish as DRA devices of a GPU class (nil: none):
	// a node without GPU resources counts its cards, a card partly used as
	// allocated.
	dra *dragpus.View
}

// gauges is the one collector registered with the scheduler's registry; it
// delegates to the collector of the plugin built last (profiles of one scheduler
// share its informers).
type gauges struct {
	metrics.BaseStableCollector
	current atomic.Pointer[gangCollector]
}

var (
	registerGauges sync.Once
	theGauges      = &gauges{}
)

// serve makes c the source of the gauges, registering them on first use.
func serve(c *gangCollector) {
	theGauges.current.Store(c)
	registerGauges.Do(func() { legacyregistry.CustomMustRegister(theGauges) })
}

func (g *gauges) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- largestGangDesc
	ch <- gpusDesc
	ch <- domainGangDesc
	ch <- domainWholeDesc
}

func (g *gauges) CollectWithStability(ch chan<- metrics.Metric) {
	if c := g.current.Load(); c != nil {
		c.collect(ch)
	}
}

func (c *gangCollector) collect(ch chan<- metrics.Metric) {
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return
	}
	pods, err := c.pods.List(labels.Everything())
	if err != nil {
		return
	}
	used, running := c.usage(pods)
	tiers := c.tierSelectors()
	type group struct{ model, tier string }
	groups := map[group][]placement.GPUNode{}
	keep := topology.KeptWhole(c.levels)
	var kept []placement.GPUNode // GPU nodes in a domain of the level kept whole
	whole := map[string]bool{}
	type gpus struct{ allocated, free, fragmented int64 }
	totals := map[group]gpus{}
	var dc *dragpus.Cycle
	if c.dra != nil {
		if dc, err = c.dra.Cycle(); err != nil {
			klog.V(4).InfoS("Largest placeable gang: allocated devices not readable", "err", err)
		}
	}
	for _, n := range nodes {
		cards := dc.Cards(n.Name)
		capacity, fromCards := hardware.NodeGPUs(n.Status.Allocatable, nil, cards, c.gpus)
		if fromCards {
			used[n.Name] = capacity - cards.FreeCards()
		}
		if capacity == 0 {
			continue
		}
		g := group{model: n.Labels[v1alpha1.LabelGPUProduct], tier: "none"}
		if g.model == "" {
			g.model = "unknown"
		}
		for _, t := range tiers {
			if t.selector.Matches(labels.Set(n.Labels)) {
				g.tier = t.name
				break
			}
		}
		free := max(capacity-used[n.Name], 0)
		gn := placement.GPUNode{Name: n.Name, Free: free, Domains: topology.DomainsOf(c.levels, n.Labels)}
		groups[g] = append(groups[g], gn)
		if keep >= 0 && gn.Domains[keep] != "" {
			kept = append(kept, gn)
			d := gn.Domains[keep]
			if _, seen := whole[d]; !seen {
				whole[d] = true
			}
			whole[d] = whole[d] && !running[n.Name]
		}
		t := totals[g]
		t.allocated += min(used[n.Name], capacity)
		t.free += free
		if free < capacity {
			t.fragmented += free
		}
		totals[g] = t
	}
	for g, t := range totals {
		for state, v := range map[string]int64{"allocated": t.allocated, "free": t.free, "fragmented": t.fragmented} {
			ch <- metrics.NewLazyConstMetric(gpusDesc, metrics.GaugeValue, float64(v), g.model, g.tier, state)
		}
	}
	for g, members := range groups {
		for _, pg := range placement.LargestGangs(members, c.levels) {
			ch <- metrics.NewLazyConstMetric(largestGangDesc, metrics.GaugeValue, float64(pg.Members),
				g.model, g.tier, strconv.FormatInt(pg.GPUsPerMember, 10), pg.Level)
		}
	}
	if len(kept) > 0 {
		c.emitDomains(ch, kept, whole, keep)
	}
}

// usage is the GPUs the pods hold per node, and the nodes where a pod other than a
// DaemonSet's or a static pod runs.
func (c *gangCollector) usage(pods []*corev1.Pod) (used map[string]int64, running map[string]bool) {
	used, running = map[string]int64{}, map[string]bool{}
	for _, p := range pods {
		if n := workload.HeldGPUs(p, c.gpus...); n > 0 {
			used[p.Spec.NodeName] += n
		}
		if workload.OccupiesNode(p) && !workload.NodeBound(p) {
			running[p.Spec.NodeName] = true
		}
	}
	return used, running
}

// namedSelector is a HardwareTier's node selector.
type namedSelector struct {
	name     string
	rank     int32
	selector labels.Selector
}

// tierSelectors are the HardwareTiers' node selectors, the highest rank first (it
// wins where selectors overlap, as TenantHardware decides).
func (c *gangCollector) tierSelectors() []namedSelector {
	var tiers []namedSelector
	hwts, err := c.tiers()
	if err != nil {
		klog.V(4).InfoS("Largest placeable gang: HardwareTiers not readable", "err", err)
		return nil
	}
	for _, h := range hwts {
		if sel, err := metav1.LabelSelectorAsSelector(&h.Spec.NodeSelector); err == nil && !sel.Empty() {
			tiers = append(tiers, namedSelector{h.Name, h.Spec.Rank, sel})
		}
	}
	slices.SortStableFunc(tiers, func(a, b namedSelector) int { return int(b.rank - a.rank) })
	return tiers
}

// emitDomains reports, for the domains of the level kept whole (index keep),
// whether each is wholly free and the largest gang of each member size it holds.
func (c *gangCollector) emitDomains(ch chan<- metrics.Metric, kept []placement.GPUNode, whole map[string]bool, keep int) {
	level := c.levels[keep].Name
	for d, w := range whole {
		v := 0.0
		if w {
			v = 1
		}
		ch <- metrics.NewLazyConstMetric(domainWholeDesc, metrics.GaugeValue, v, level, d)
	}
	for _, k := range placement.MemberSizes {
		for d, members := range placement.PerDomain(kept, k, keep) {
			ch <- metrics.NewLazyConstMetric(domainGangDesc, metrics.GaugeValue, float64(members), level, d, strconv.FormatInt(k, 10))
		}
	}
}
