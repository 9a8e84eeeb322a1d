package tenant

import (
	"context"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/hardware"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/crdcache"
)

// Tiers is the cluster's HardwareTiers as every plugin of the process applies them:
// one snapshot (hardware.TierSet), replaced as a whole when a HardwareTier changes, the
// DaemonSet exemption, and the nodes' devices for tiers that select by them.
// TenantHardware filters and scores by it and turns its rules on for its profile
// (Apply); NetworkFabric rates nodes for gang plans and GangPreemption tells tier
// borrowers by the rules of the same profile (For), so a plan, a preemption and a
// placement never disagree on a tier.
type Tiers struct {
	set atomic.Pointer[hardware.TierSet]
	// loaded is closed once the first snapshot is taken (in the background, once the
	// shared cache has synced).
	loaded    chan struct{}
	devices   func(node string) []hardware.Device
	exemption daemonSetExemption
	tenants   *Resolver
	queues    Queues

	mu       sync.Mutex
	watchers []func()
	rules    map[string]*Rules
}

// TenantTierOf is the pod's tenant tier, read as ProfileClassifier reads it (its
// namespace's, or its ClusterQueue's), never from the pod's own labels.
func (t *Tiers) TenantTierOf(pod *corev1.Pod) v1alpha1.TenantTier { return t.tenants.TierOf(pod) }

// Tiers returns the process's Tiers, built on first use from the shared cache's
// HardwareTiers and the scheduler's DaemonSet informer; devices gives the nodes'
// DRA devices (nil: tiers select by labels only).
func (p *Provider) Tiers(ctx context.Context, h fwk.Handle, c *crdcache.Cache, devices DeviceLister) (*Tiers, error) {
	p.tiersOnce.Do(func() {
		t := &Tiers{
			loaded:    make(chan struct{}),
			devices:   onNode(devices),
			exemption: daemonSetExemption{daemonSets: h.SharedInformerFactory().Apps().V1().DaemonSets().Lister()},
			tenants:   p.Get(h, c),
			queues:    c,
			rules:     map[string]*Rules{},
		}
		logger := klog.FromContext(ctx)
		// Refreshes run one at a time, so that the last to list is the last to store.
		var refreshing sync.Mutex
		refresh := func() {
			refreshing.Lock()
			defer refreshing.Unlock()
			hwts, err := c.HardwareTiers()
			if err != nil {
				logger.Error(err, "Listing HardwareTiers from the cache")
				return
			}
			set, errs := hardware.NewTierSet(hwts)
			for _, e := range errs {
				logger.Error(e, "Ignoring a HardwareTier")
			}
			t.set.Store(set)
			t.mu.Lock()
			watchers := t.watchers
			t.mu.Unlock()
			for _, w := range watchers {
				w()
			}
		}
		// The first snapshot waits for the cache to sync, off the start-up path; a
		// cycle that needs it waits for it (Current).
		go func() {
			refresh()
			close(t.loaded)
		}()
		p.tiersErr = c.OnHardwareTierChange(refresh)
		p.tiers = t
	})
	return p.tiers, p.tiersErr
}

// Current is the tier snapshot, once the first has been taken.
func (t *Tiers) Current() *hardware.TierSet {
	if s := t.set.Load(); s != nil || t.loaded == nil {
		return s
	}
	<-t.loaded
	return t.set.Load()
}

// OnChange calls f after each new snapshot (a HardwareTier changed).
func (t *Tiers) OnChange(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.watchers = append(t.watchers, f)
}

// Devices gives a node's DRA devices (nil: none are read).
func (t *Tiers) Devices() func(node string) []hardware.Device { return t.devices }

// DeviceLister gives a node's DRA devices.
type DeviceLister interface {
	OnNode(node string) []hardware.Device
}

// onNode is l's OnNode, nil for a nil l.
func onNode(l DeviceLister) func(string) []hardware.Device {
	if l == nil {
		return nil
	}
	return l.OnNode
}

// Exempt reports whether the pod is exempt from tier rules as a verified DaemonSet
// pod that asks for no device (daemonSetExemption).
func (t *Tiers) Exempt(pod *corev1.Pod) bool { return t.exemption.exempt(pod) }

// Apply turns the tier rules on for profile, with the scores of an untiered node and
// of a node borrowed from another tier (TenantHardware's args), and returns them.
func (t *Tiers) Apply(profile string, untieredScore, borrowedScore int64) *Rules {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := &Rules{tiers: t, untiered: untieredScore, borrowed: borrowedScore}
	t.rules[profile] = r
	return r
}

// For returns the tier rules of profile: nil when its TenantHardware does not
// apply them (the plugin is not enabled there).
func (t *Tiers) For(profile string) *Rules {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rules[profile]
}

// Rules are the tier rules one profile applies.
type Rules struct {
	tiers              *Tiers
	untiered, borrowed int64
}

// Score rates a node of HardwareTier t (nil: untiered) for a pod of the tenant
// tier on the 0–100 scale (hardware.TierSet.Score).
func (r *Rules) Score(s *hardware.TierSet, t *hardware.Tier, tenant v1alpha1.TenantTier, preemptible bool) int64 {
	return s.Score(t, tenant, preemptible, r.untiered, r.borrowed)
}

// NodePreference rates a node for a pod outside a scheduling cycle (for
// NetworkFabric's gang plans): whether the pod's tenant may use it and its score.
// The tenant tier is read from the pod's namespace (or admitting ClusterQueue); a
// namespace without one, a verified DaemonSet pod and a cluster without
// HardwareTiers give every node the same rating.
func (r *Rules) NodePreference(pod *corev1.Pod, node *corev1.Node) (int64, bool) {
	tiers := r.tiers.Current()
	if tiers.Empty() || r.tiers.Exempt(pod) {
		return 0, true
	}
	src, ok := r.tiers.tenants.Source(pod)
	if !ok || src[v1alpha1.LabelTenantTier] == "" {
		return 0, true
	}
	tenant := workload.TierOf(workload.Namespace{Labels: src}, "")
	preemptible := pod.Labels[v1alpha1.LabelPreemptible] == "true"
	t := tiers.OfNode(node.Name, node.Labels, r.tiers.devices)
	if t != nil && (t.AccessFor(tenant, preemptible) == hardware.Denied || !t.AdmitsClusterQueue(r.tiers.ClusterQueueOf(tiers, pod))) {
		return 0, false
	}
	return r.Score(tiers, t, tenant, preemptible), true
}

// BorrowsFrom reports whether victim is on node only by borrowing its HardwareTier
// (it is preemptible and its tenant tier is not admitted there) while preemptor's
// tenant tier is admitted there. Tenant tiers come from the pods' namespaces (or
// admitting ClusterQueues).
func (r *Rules) BorrowsFrom(victim, preemptor *corev1.Pod, node *corev1.Node) bool {
	tiers := r.tiers.Current()
	if tiers.Empty() || victim.Labels[v1alpha1.LabelPreemptible] != "true" {
		return false
	}
	t := tiers.OfNode(node.Name, node.Labels, r.tiers.devices)
	if t == nil {
		return false
	}
	tenantOf := func(p *corev1.Pod) (v1alpha1.TenantTier, bool) {
		src, ok := r.tiers.tenants.Source(p)
		if !ok {
			return "", false
		}
		return workload.TierOf(workload.Namespace{Labels: src}, ""), true
	}
	vt, ok1 := tenantOf(victim)
	pt, ok2 := tenantOf(preemptor)
	return ok1 && ok2 && t.AccessFor(vt, true) == hardware.Borrowed && t.AccessFor(pt, false) == hardware.Allowed
}

// ClusterQueueOf is the ClusterQueue that admitted the pod, when a tier of s asks
// ("": none asks, or the pod was not admitted through Kueue).
func (t *Tiers) ClusterQueueOf(s *hardware.TierSet, pod *corev1.Pod) string {
	if !s.UsesClusterQueues() || t.queues == nil {
		return ""
	}
	cq, _ := t.queues.ClusterQueueOf(pod)
	return cq
}

// StaticTiers is Tiers over a fixed list of HardwareTiers (no cache, no
// exemption), for tests and tools; it reports the tiers it ignores.
func StaticTiers(hwts []v1alpha1.HardwareTier, tenants *Resolver) (*Tiers, []error) {
	set, errs := hardware.NewTierSet(hwts)
	t := &Tiers{tenants: tenants, rules: map[string]*Rules{}}
	t.set.Store(set)
	return t, errs
}
