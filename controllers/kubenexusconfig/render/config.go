// Package render turns a KubeNexusConfig into what the operator applies: the
// kubenexus-scheduler KubeSchedulerConfiguration and the objects that run it. It is
// pure — no API calls — so that the reconciler, the admission webhook and the
// golden-file tests share one rendering.
package render

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	componentbaseconfigv1alpha1 "k8s.io/component-base/config/v1alpha1"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	schedconfig "github.com/kube-nexus/kubenexus/scheduler/apis/config"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/names"
)

// NodeResourcesFit is kube-scheduler's resource fit plugin, whose score WorkloadAware
// replaces.
const NodeResourcesFit = "NodeResourcesFit"

// DefaultPreemption is kube-scheduler's preemption PostFilter, which GangPreemption
// replaces.
const DefaultPreemption = "DefaultPreemption"

// PodTopologySpread is kube-scheduler's spreading plugin, whose system default
// constraints TopologyAware replaces.
const PodTopologySpread = "PodTopologySpread"

// LeaseName is the scheduler's leader election lease, in the scheduler's namespace.
// It does not follow the scheduler name so that the shipped RBAC can name it.
const LeaseName = "kubenexus-scheduler"

// plugin is one KubeNexus plugin as the KubeNexusConfig sets it.
type plugin struct {
	name    string
	enabled *bool
	// weight is the score weight; 0 for plugins that do not score.
	weight int32
	// args are the plugin's typed args; nil when it has none.
	args any
	// queueSort: the plugin replaces the default queue sort.
	queueSort bool
}

// plugins lists every plugin of the API in profile order.
func plugins(p *v1alpha1.PluginsSpec, topology *v1alpha1.TopologySpec, kueue *v1alpha1.KueueSpec) []plugin {
	gpus := gpuResources(&p.ResourceFragmentation)
	// NUMATopology, VRAM and ResourceReservation take only the GPU resource names
	// here: no args (their defaults) unless those differ from the default.
	var numaArgs, vramArgs, reservationArgs any
	if gpus != nil {
		numaArgs = &schedconfig.NUMATopologyArgs{GPUResources: gpus}
		vramArgs = &schedconfig.VRAMArgs{GPUResources: gpus}
		reservationArgs = &schedconfig.ResourceReservationArgs{GPUResources: gpus}
	}
	return []plugin{
		{name: names.ProfileClassifier, enabled: p.ProfileClassifier.Enabled, args: profileClassifierArgs(kueue)},
		{name: names.Coscheduling, enabled: p.Coscheduling.Enabled, args: coschedulingArgs(&p.Coscheduling), queueSort: true},
		{name: names.WorkloadAware, enabled: p.WorkloadAware.Enabled, weight: p.WorkloadAware.Weight, args: workloadAwareArgs(&p.WorkloadAware, gpus)},
		{name: names.TopologyAware, enabled: p.TopologyAware.Enabled, weight: p.TopologyAware.Weight},
		{name: names.NetworkFabric, enabled: p.NetworkFabric.Enabled, weight: p.NetworkFabric.Weight, args: networkFabricArgs(topology)},
		{name: names.ResourceFragmentation, enabled: p.ResourceFragmentation.Enabled, weight: p.ResourceFragmentation.Weight, args: resourceFragmentationArgs(&p.ResourceFragmentation, topology)},
		{name: names.TenantHardware, enabled: p.TenantHardware.Enabled, weight: p.TenantHardware.Weight},
		{name: names.NUMATopology, enabled: p.NUMATopology.Enabled, weight: p.NUMATopology.Weight, args: numaArgs},
		{name: names.VRAM, enabled: p.VRAM.Enabled, weight: p.VRAM.Weight, args: vramArgs},
		{name: names.ResourceReservation, enabled: p.ResourceReservation.Enabled, weight: p.ResourceReservation.Weight, args: reservationArgs},
		{name: names.Backfill, enabled: p.Backfill.Enabled, weight: p.Backfill.Weight, args: backfillArgs(&p.Backfill)},
		{name: names.GangPreemption, enabled: p.GangPreemption.Enabled, args: gangPreemptionArgs(&p.GangPreemption, gpus)},
		{name: names.BindingBackpressure, enabled: p.BindingBackpressure.Enabled, args: bindingBackpressureArgs(&p.BindingBackpressure)},
	}
}

// profileClassifierArgs renders where tenant tiers come from; nil (the plugin's
// default, the namespace) unless the KubeNexusConfig takes them from Kueue
// ClusterQueues.
func profileClassifierArgs(k *v1alpha1.KueueSpec) any {
	if k.TenantTierFrom != v1alpha1.TenantTierFromClusterQueue {
		return nil
	}
	return &schedconfig.ProfileClassifierArgs{TenantTierFrom: k.TenantTierFrom}
}

// coschedulingArgs maps the API's Coscheduling settings to the plugin's args. Zero
// values (an object that skipped API defaulting) are left to the plugin's defaults.
func coschedulingArgs(c *v1alpha1.CoschedulingPlugin) *schedconfig.CoschedulingArgs {
	a := &schedconfig.CoschedulingArgs{}
	if c.DefaultScheduleTimeoutSeconds != 0 {
		a.DefaultScheduleTimeoutSeconds = ptr.To(c.DefaultScheduleTimeoutSeconds)
	}
	if c.BackoffSeconds != 0 {
		a.BackoffSeconds = ptr.To(c.BackoffSeconds)
	}
	if c.StarvationAgingSeconds != 0 {
		a.StarvationAgingSeconds = ptr.To(c.StarvationAgingSeconds)
	}
	return a
}

// networkFabricArgs renders the topology levels into NetworkFabric's args; nil (the
// plugin's defaults, the same levels as the API's) when none are set.
func networkFabricArgs(t *v1alpha1.TopologySpec) any {
	if len(t.Levels) == 0 {
		return nil
	}
	return &schedconfig.NetworkFabricArgs{Levels: levelArgs(t)}
}

// levelArgs renders the KubeNexusConfig's topology levels as plugin args.
func levelArgs(t *v1alpha1.TopologySpec) []schedconfig.TopologyLevel {
	var out []schedconfig.TopologyLevel
	for _, l := range t.Levels {
		out = append(out, schedconfig.TopologyLevel{Name: l.Name, NodeLabel: l.NodeLabel, KeepWhole: l.KeepWhole})
	}
	return out
}

// resourceFragmentationArgs maps the API's GPU resource names, GPU DeviceClasses,
// arrival half-life and topology levels (for its gauges) to the plugin's args; nil (the plugin's defaults)
// when none are set.
func resourceFragmentationArgs(r *v1alpha1.ResourceFragmentationPlugin, t *v1alpha1.TopologySpec) any {
	if r.GPUResourceName == "" && len(r.AdditionalGPUResources) == 0 && r.GPUDeviceClasses == nil && r.ArrivalHalfLifeSeconds == 0 && len(t.Levels) == 0 && !ptr.Deref(r.KeepHostsForQueued, false) {
		return nil
	}
	a := &schedconfig.ResourceFragmentationArgs{Levels: levelArgs(t), GPUDeviceClasses: append([]string(nil), r.GPUDeviceClasses...)}
	if r.GPUResourceName != "" {
		a.GPUResources = append(a.GPUResources, corev1.ResourceName(r.GPUResourceName))
	}
	for _, name := range r.AdditionalGPUResources {
		a.GPUResources = append(a.GPUResources, corev1.ResourceName(name))
	}
	if r.ArrivalHalfLifeSeconds != 0 {
		a.ArrivalHalfLifeSeconds = ptr.To(r.ArrivalHalfLifeSeconds)
	}
	if ptr.Deref(r.KeepHostsForQueued, false) {
		a.KeepHostsForQueued = ptr.To(true)
	}
	return a
}

// backfillArgs maps the API's safety margin to Backfill's args; nil (the plugin's
// defaults) when unset.
func backfillArgs(b *v1alpha1.BackfillPlugin) any {
	if b.SafetyMarginSeconds == nil {
		return nil
	}
	return &schedconfig.BackfillArgs{SafetyMarginSeconds: ptr.To(*b.SafetyMarginSeconds)}
}

// gpuResources are the extended resources every plugin counts as GPUs, from the
// one place the API names them (spec.plugins.resourceFragmentation.gpuResourceName
// and additionalGPUResources); nil when that is the plugins' own default,
// nvidia.com/gpu alone.
func gpuResources(r *v1alpha1.ResourceFragmentationPlugin) []corev1.ResourceName {
	names := r.GPUResources()
	if len(names) == 1 && names[0] == v1alpha1.ResourceNvidiaGPU {
		return nil
	}
	return names
}

// gangPreemptionArgs maps the API's GangPreemption settings and the GPU resource
// names to the plugin's args; nil (the plugin's defaults) when none are set.
func gangPreemptionArgs(g *v1alpha1.GangPreemptionPlugin, gpus []corev1.ResourceName) any {
	if g.PreemptServicesForBatch == nil && gpus == nil && g.Consolidation == nil {
		return nil
	}
	a := &schedconfig.GangPreemptionArgs{GPUResources: gpus}
	if g.PreemptServicesForBatch != nil {
		a.PreemptServicesForBatch = ptr.To(*g.PreemptServicesForBatch)
	}
	if c := g.Consolidation; c != nil {
		a.Consolidation = &schedconfig.ConsolidationArgs{
			Enabled: copyPtr(c.Enabled), CheckpointedPods: copyPtr(c.CheckpointedPods),
			MaxEvictionsPerGang: copyPtr(c.MaxEvictionsPerGang), MaxEvictionsPerHour: copyPtr(c.MaxEvictionsPerHour),
		}
	}
	return a
}

// bindingBackpressureArgs maps the API's limit to BindingBackpressure's args; nil
// (the plugin's default) when unset.
func bindingBackpressureArgs(b *v1alpha1.BindingBackpressurePlugin) any {
	if b.MaxBindingsInFlight == nil {
		return nil
	}
	return &schedconfig.BindingBackpressureArgs{MaxBindingsInFlight: ptr.To(*b.MaxBindingsInFlight)}
}

// workloadAwareArgs maps the API's WorkloadAware resource weights, and the GPU
// resource names as the resources that make a node an accelerator node, to the
// plugin's args; nil (the plugin's defaults) when none are set.
func workloadAwareArgs(w *v1alpha1.WorkloadAwarePlugin, gpus []corev1.ResourceName) any {
	if len(w.Resources) == 0 && gpus == nil {
		return nil
	}
	a := &schedconfig.WorkloadAwareArgs{}
	for _, g := range gpus {
		a.AcceleratorResources = append(a.AcceleratorResources, string(g))
	}
	for _, r := range w.Resources {
		a.Resources = append(a.Resources, schedconfig.ResourceWeight{Name: corev1.ResourceName(r.Name), Weight: r.Weight})
	}
	return a
}

// SchedulerConfiguration renders spec as the kubenexus-scheduler
// KubeSchedulerConfiguration: one profile named after spec.scheduler.schedulerName
// with the enabled KubeNexus plugins that the scheduler registers (see
// names.Implemented), their weights and args, the client rate limit,
// percentageOfNodesToScore and leader election in namespace.
func SchedulerConfiguration(spec *v1alpha1.KubeNexusConfigSpec, namespace string) (*configv1.KubeSchedulerConfiguration, error) {
	s := &spec.Scheduler
	profile := configv1.KubeSchedulerProfile{
		SchedulerName: ptr.To(schedulerName(s)),
		Plugins:       &configv1.Plugins{},
	}
	for _, p := range plugins(&spec.Plugins, &spec.Topology, &spec.Kueue) {
		if !ptr.Deref(p.enabled, true) || !slices.Contains(names.Implemented, p.name) {
			continue
		}
		entry := configv1.Plugin{Name: p.name}
		if p.weight > 0 {
			entry.Weight = ptr.To(p.weight)
		}
		profile.Plugins.MultiPoint.Enabled = append(profile.Plugins.MultiPoint.Enabled, entry)
		if p.name == names.WorkloadAware {
			// WorkloadAware scores by allocation itself, packing or spreading by class;
			// NodeResourcesFit's least-allocated score would pull packed pods apart.
			// Its filter stays on.
			profile.Plugins.Score.Disabled = append(profile.Plugins.Score.Disabled, configv1.Plugin{Name: NodeResourcesFit})
		}
		if p.name == names.GangPreemption {
			// GangPreemption preempts for plain pods too, with gangs kept whole;
			// DefaultPreemption would evict single gang members. Named at postFilter
			// as well, it runs before Coscheduling's PostFilter: a gang it makes room
			// for is not rejected into backoff first.
			profile.Plugins.PostFilter.Enabled = append(profile.Plugins.PostFilter.Enabled, configv1.Plugin{Name: names.GangPreemption})
			// Named at preFilter, it runs first there: a member whose room is being
			// made is held back (Pending) before any plan is made for it.
			profile.Plugins.PreFilter.Enabled = append(profile.Plugins.PreFilter.Enabled, configv1.Plugin{Name: names.GangPreemption})
			profile.Plugins.PostFilter.Disabled = append(profile.Plugins.PostFilter.Disabled, configv1.Plugin{Name: DefaultPreemption})
		}
		if p.name == names.ResourceFragmentation {
			// Named at filter, it runs first there: a node whose GPU devices cannot
			// hold a pod's ResourceClaims is refused before DynamicResources runs
			// its allocator on it (resourcefragmentation/drafit.go).
			profile.Plugins.Filter.Enabled = append(profile.Plugins.Filter.Enabled, configv1.Plugin{Name: names.ResourceFragmentation})
		}
		if p.name == names.TopologyAware {
			// TopologyAware spreads a controller's replicas over zones and nodes, the
			// pods kube-scheduler's system default constraints would spread. Without
			// them, pods nothing spreads (plain pods, Jobs, gangs) can be signed, and
			// opportunistic batching serves them; with them PodTopologySpread signs
			// no pod at all. Constraints a pod declares stay PodTopologySpread's.
			profile.PluginConfig = append(profile.PluginConfig, configv1.PluginConfig{Name: PodTopologySpread,
				Args: runtime.RawExtension{Raw: []byte(`{"defaultingType":"List"}`)}})
		}
		if p.name == names.BindingBackpressure {
			// Its Bind takes a slot and passes the pod on: named at bind, it runs
			// before DefaultBinder.
			profile.Plugins.Bind.Enabled = append(profile.Plugins.Bind.Enabled, configv1.Plugin{Name: names.BindingBackpressure})
		}
		if p.queueSort {
			profile.Plugins.QueueSort = configv1.PluginSet{
				Enabled:  []configv1.Plugin{{Name: p.name}},
				Disabled: []configv1.Plugin{{Name: "*"}},
			}
		}
		if p.args != nil {
			raw, err := json.Marshal(p.args)
			if err != nil {
				return nil, fmt.Errorf("encoding %s args: %w", p.name, err)
			}
			profile.PluginConfig = append(profile.PluginConfig, configv1.PluginConfig{Name: p.name, Args: runtime.RawExtension{Raw: raw}})
		}
	}

	le := &s.LeaderElection
	cfg := &configv1.KubeSchedulerConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: configv1.SchemeGroupVersion.String(), Kind: "KubeSchedulerConfiguration"},
		LeaderElection: componentbaseconfigv1alpha1.LeaderElectionConfiguration{
			LeaderElect:       ptr.To(ptr.Deref(le.Enabled, true)),
			LeaseDuration:     seconds(le.LeaseDurationSeconds, 15),
			RenewDeadline:     seconds(le.RenewDeadlineSeconds, 10),
			RetryPeriod:       seconds(le.RetryPeriodSeconds, 2),
			ResourceLock:      "leases",
			ResourceName:      LeaseName,
			ResourceNamespace: namespace,
		},
		ClientConnection: componentbaseconfigv1alpha1.ClientConnectionConfiguration{
			QPS:   float32(orDefault(s.ClientConnection.QPS, 50)),
			Burst: orDefault(s.ClientConnection.Burst, 100),
		},
		PercentageOfNodesToScore: ptr.To(s.PercentageOfNodesToScore),
		Profiles:                 []configv1.KubeSchedulerProfile{profile},
		// kube-scheduler serves /debug/pprof by default; a production scheduler
		// does not (the endpoint can be abused to load the process).
		DebuggingConfiguration: componentbaseconfigv1alpha1.DebuggingConfiguration{
			EnableProfiling:           ptr.To(false),
			EnableContentionProfiling: ptr.To(false),
		},
	}
	return cfg, nil
}

// ConfigYAML renders the scheduler configuration as the YAML file the scheduler
// reads, with empty sections left out, and its hash.
func ConfigYAML(spec *v1alpha1.KubeNexusConfigSpec, namespace string) ([]byte, string, error) {
	cfg, err := SchedulerConfiguration(spec, namespace)
	if err != nil {
		return nil, "", err
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("encoding the scheduler configuration: %w", err)
	}
	var tree map[string]any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return nil, "", fmt.Errorf("decoding the scheduler configuration: %w", err)
	}
	out, err := yaml.Marshal(prune(tree))
	if err != nil {
		return nil, "", fmt.Errorf("encoding the scheduler configuration: %w", err)
	}
	sum := sha256.Sum256(out)
	return out, hex.EncodeToString(sum[:])[:16], nil
}

// prune drops nulls, empty strings and empty objects, which the scheduler's
// defaulting treats as unset, so the file shows only what is configured.
func prune(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			e = prune(e)
			if m, ok := e.(map[string]any); e == nil || e == "" || (ok && len(m) == 0) {
				delete(t, k)
				continue
			}
			t[k] = e
		}
		return t
	case []any:
		for i := range t {
			t[i] = prune(t[i])
		}
		return t
	default:
		return v
	}
}

func schedulerName(s *v1alpha1.SchedulerSpec) string {
	if s.SchedulerName == "" {
		return v1alpha1.DefaultSchedulerName
	}
	return s.SchedulerName
}

func orDefault(v, def int32) int32 {
	if v == 0 {
		return def
	}
	return v
}

func seconds(v, def int32) metav1.Duration {
	return metav1.Duration{Duration: time.Duration(orDefault(v, def)) * time.Second}
}

// copyPtr copies what p points to (nil stays nil: the plugin's default).
func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	return ptr.To(*p)
}
