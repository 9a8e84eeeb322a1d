// Package perfupstream runs upstream's scheduler benchmark suite,
// k8s.io/kubernetes/test/integration/scheduler_perf at the Kubernetes version the main
// module pins, twice per workload: with kube-scheduler's default profile and with
// KubeNexus's default profile (the operator's rendering of an empty KubeNexusConfig)
// through the scheduler's own plugin registry. `make perf-upstream` runs it; the
// benchmark itself is in perf_test.go (build tag perfupstream, since it compiles an
// in-process kube-apiserver). This file selects workloads and rewrites upstream's
// configuration for each arm; report.go turns the results into one table.
package perfupstream

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/controllers/kubenexusconfig/render"
	"github.com/kube-nexus/kubenexus/scheduler/plugins"
)

// Arms of the comparison.
const (
	ArmStock     = "stock"
	ArmKubeNexus = "kubenexus"
)

// Selection names one upstream workload: its topic directory (relative to
// scheduler_perf), test case and workload, and parameters replaced because the
// upstream size does not fit this machine.
type Selection struct {
	Topic, TestCase, Workload string
	Params                    map[string]int
}

// Name is the selection as the table and the flags write it.
func (s Selection) Name() string {
	return s.Topic + "/" + s.TestCase + "/" + s.Workload
}

// DefaultSelections are the workloads `make perf-upstream` runs: upstream's
// performance workloads of the topics the issue asks for, at upstream's size except
// the batching workloads (20,000 nodes upstream; 5,000 here, the largest a 2-core
// machine with 24 GiB holds for both arms in one invocation).
var DefaultSelections = []Selection{
	{Topic: "misc", TestCase: "SchedulingBasic", Workload: "5000Nodes_10000Pods"},
	{Topic: "topology_spreading", TestCase: "TopologySpreading", Workload: "5000Nodes_5000Pods"},
	{Topic: "topology_spreading", TestCase: "PreferredTopologySpreading", Workload: "5000Nodes_5000Pods"},
	{Topic: "affinity", TestCase: "SchedulingPodAntiAffinity", Workload: "5000Nodes_2000Pods"},
	{Topic: "affinity", TestCase: "SchedulingPodAffinity", Workload: "5000Nodes_5000Pods"},
	{Topic: "affinity", TestCase: "SchedulingNodeAffinity", Workload: "5000Nodes_10000Pods"},
	{Topic: "dra", TestCase: "SchedulingWithResourceClaimTemplate", Workload: "5000pods_500nodes"},
	{Topic: "batching", TestCase: "HostPortConflict", Workload: "20000Nodes_20000Pods_100BatchSize",
		Params: map[string]int{"initNodes": 5000, "measurePods": 5000}},
	{Topic: "batching", TestCase: "ResourceSaturation", Workload: "20000Nodes_20000Pods_100BatchSize",
		Params: map[string]int{"initNodes": 5000, "measurePods": 5000}},
	{Topic: "podgroup/gangscheduling", TestCase: "GangScheduling", Workload: "5000Nodes_1000Gangs_3000Pods"},
	{Topic: "podgroup/gangscheduling", TestCase: "GangScheduling", Workload: "5000Nodes_3000Gangs_9000Pods"},
	{Topic: "podgroup/gangscheduling", TestCase: "GangScheduling", Workload: "5000Nodes_3Gangs_3000Pods_1000PerGroup"},
	{Topic: "podgroup/tas", TestCase: "TopologyAwareScheduling", Workload: "5000Nodes_750Gangs_3000Pods"},
	{Topic: "podgroup/tas", TestCase: "TopologyAwareScheduling", Workload: "5000Nodes_3Gangs_3000Pods_1000PerGroup"},
}

// ParseSelections reads a comma-separated list of topic/testcase/workload names.
func ParseSelections(s string) ([]Selection, error) {
	var out []Selection
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if i := slices.IndexFunc(DefaultSelections, func(d Selection) bool { return d.Name() == name }); i >= 0 {
			out = append(out, DefaultSelections[i])
			continue
		}
		parts := strings.Split(name, "/")
		if len(parts) < 3 {
			return nil, fmt.Errorf("-workloads: %q is not topic/testcase/workload (e.g. misc/SchedulingBasic/500Nodes)", name)
		}
		n := len(parts)
		out = append(out, Selection{Topic: strings.Join(parts[:n-2], "/"), TestCase: parts[n-2], Workload: parts[n-1]})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-workloads: no workload named")
	}
	return out, nil
}

// Threshold is upstream's pass mark for a workload: the value of Metric's Bucket
// (with Labels) must be at least Value, or at most it when Lower.
type Threshold struct {
	Value  float64
	Metric string
	Labels map[string]string
	Bucket string
	Lower  bool
}

// Prepared is one arm's configuration of one selection.
type Prepared struct {
	// ConfigFile holds one test case with one workload, labelled "performance",
	// without its threshold (the table compares instead of failing).
	ConfigFile string
	// Threshold is the one taken out, if the workload had one.
	Threshold *Threshold
	// FeatureGates the workload runs with (test case's and workload's), for DRA.
	FeatureGates map[string]bool
}

// Prepare writes the configuration of sel for arm into dir. upstream is the
// scheduler_perf directory of the pinned k8s.io/kubernetes module.
func Prepare(upstream string, sel Selection, arm, dir string) (*Prepared, error) {
	topicDir := filepath.Join(upstream, sel.Topic)
	data, err := os.ReadFile(filepath.Join(topicDir, "performance-config.yaml"))
	if err != nil {
		return nil, err
	}
	var cases []map[string]any
	if err := yaml.Unmarshal(data, &cases); err != nil {
		return nil, fmt.Errorf("%s: %w", sel.Topic, err)
	}
	i := slices.IndexFunc(cases, func(c map[string]any) bool { return c["name"] == sel.TestCase })
	if i < 0 {
		return nil, fmt.Errorf("%s: no test case %q", sel.Topic, sel.TestCase)
	}
	tc := cases[i]
	workloads, _ := tc["workloads"].([]any)
	var w map[string]any
	for _, x := range workloads {
		if m, ok := x.(map[string]any); ok && m["name"] == sel.Workload {
			w = m
		}
	}
	if w == nil {
		return nil, fmt.Errorf("%s/%s: no workload %q", sel.Topic, sel.TestCase, sel.Workload)
	}
	out := &Prepared{FeatureGates: map[string]bool{}}
	for _, src := range []any{tc["featureGates"], w["featureGates"]} {
		if m, ok := src.(map[string]any); ok {
			for k, v := range m {
				b, _ := v.(bool)
				out.FeatureGates[k] = b
			}
		}
	}
	if t, err := thresholdOf(tc, w, filepath.Base(sel.Topic)); err != nil {
		return nil, fmt.Errorf("%s: %w", sel.Name(), err)
	} else if t != nil {
		out.Threshold = t
	}
	delete(w, "threshold")
	w["labels"] = []any{"performance"}
	if len(sel.Params) > 0 {
		params, _ := w["params"].(map[string]any)
		if params == nil {
			params = map[string]any{}
		}
		for k, v := range sel.Params {
			params[k] = v
		}
		w["params"] = params
	}
	tc["workloads"] = []any{w}

	// The scheduler configuration: upstream's file (relative to the topic) or the
	// defaults for stock; for KubeNexus the same with KubeNexus's profile merged in.
	var upstreamCfg string
	if p, ok := tc["schedulerConfigPath"].(string); ok && p != "" {
		upstreamCfg = filepath.Join(topicDir, p)
		tc["schedulerConfigPath"] = upstreamCfg
	}
	if arm == ArmKubeNexus {
		cfg, err := KubeNexusConfig(upstreamCfg)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sel.Name(), err)
		}
		cfgPath := filepath.Join(dir, "scheduler-config.yaml")
		if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
			return nil, err
		}
		tc["schedulerConfigPath"] = cfgPath
		// kubenexus-scheduler's own feature-gate defaults, where the workload does
		// not set the gate itself.
		gates, _ := w["featureGates"].(map[string]any)
		if gates == nil {
			gates = map[string]any{}
		}
		for k, v := range plugins.DefaultFeatureGates {
			if _, set := out.FeatureGates[k]; !set {
				gates[k] = v
				out.FeatureGates[k] = v
			}
		}
		if len(gates) > 0 {
			w["featureGates"] = gates
		}
	}
	data, err = yaml.Marshal([]any{tc})
	if err != nil {
		return nil, err
	}
	out.ConfigFile = filepath.Join(dir, "performance-config.yaml")
	return out, os.WriteFile(out.ConfigFile, data, 0o600)
}

// thresholdOf reads the workload's threshold for topic (upstream's CI names a
// topic after its directory) and the metric it applies to.
func thresholdOf(tc, w map[string]any, topic string) (*Threshold, error) {
	var value float64
	switch v := w["threshold"].(type) {
	case nil:
		return nil, nil
	case float64:
		value = v
	case map[string]any:
		value, _ = v[topic].(float64)
	default:
		return nil, fmt.Errorf("threshold %v is neither a number nor a map", v)
	}
	if value == 0 {
		return nil, nil
	}
	t := &Threshold{Value: value, Metric: "SchedulingThroughput", Bucket: "Average"}
	sel, _ := w["thresholdMetricSelector"].(map[string]any)
	if sel == nil {
		sel, _ = tc["defaultThresholdMetricSelector"].(map[string]any)
	}
	if sel != nil {
		t.Metric, _ = sel["name"].(string)
		t.Bucket, _ = sel["dataBucket"].(string)
		t.Lower, _ = sel["expectLower"].(bool)
		if labels, ok := sel["labels"].(map[string]any); ok {
			t.Labels = map[string]string{}
			for k, v := range labels {
				t.Labels[k] = fmt.Sprint(v)
			}
		}
	}
	return t, nil
}

// KubeNexusConfig is the scheduler configuration of the KubeNexus arm: the profile
// the operator renders for an empty KubeNexusConfig (every plugin, default
// weights and arguments), named default-scheduler as upstream's pods expect, merged
// into upstream's own configuration of the test case when it has one (its
// settings win where both set the same plugin's arguments).
func KubeNexusConfig(upstreamFile string) ([]byte, error) {
	rendered, err := render.SchedulerConfiguration(&v1alpha1.KubeNexusConfigSpec{}, "kubenexus-system")
	if err != nil {
		return nil, err
	}
	ours := rendered.Profiles[0]
	ours.SchedulerName = ptr.To("default-scheduler")
	cfg := &configv1.KubeSchedulerConfiguration{}
	if upstreamFile != "" {
		data, err := os.ReadFile(upstreamFile)
		if err != nil {
			return nil, err
		}
		scheme := runtime.NewScheme()
		if err := configv1.AddToScheme(scheme); err != nil {
			return nil, err
		}
		if _, _, err := serializer.NewCodecFactory(scheme).UniversalDeserializer().Decode(data, nil, cfg); err != nil {
			return nil, fmt.Errorf("%s: %w", upstreamFile, err)
		}
	}
	if len(cfg.Profiles) > 1 {
		return nil, fmt.Errorf("%s: %d profiles; one is merged", upstreamFile, len(cfg.Profiles))
	}
	if len(cfg.Profiles) == 0 {
		cfg.Profiles = []configv1.KubeSchedulerProfile{{SchedulerName: ptr.To("default-scheduler")}}
	}
	p := &cfg.Profiles[0]
	if p.Plugins == nil {
		p.Plugins = &configv1.Plugins{}
	}
	mergeSet(&p.Plugins.QueueSort, ours.Plugins.QueueSort)
	mergeSet(&p.Plugins.MultiPoint, ours.Plugins.MultiPoint)
	mergeSet(&p.Plugins.Score, ours.Plugins.Score)
	mergeSet(&p.Plugins.PostFilter, ours.Plugins.PostFilter)
	mergeSet(&p.Plugins.Bind, ours.Plugins.Bind)
	for _, pc := range ours.PluginConfig {
		if !slices.ContainsFunc(p.PluginConfig, func(x configv1.PluginConfig) bool { return x.Name == pc.Name }) {
			p.PluginConfig = append(p.PluginConfig, pc)
		}
	}
	cfg.APIVersion, cfg.Kind = configv1.SchemeGroupVersion.String(), "KubeSchedulerConfiguration"
	return yaml.Marshal(cfg)
}

func mergeSet(dst *configv1.PluginSet, src configv1.PluginSet) {
	if slices.ContainsFunc(src.Disabled, func(p configv1.Plugin) bool { return p.Name == "*" }) {
		// QueueSort: ours replaces upstream's.
		*dst = src
		return
	}
	dst.Enabled = append(dst.Enabled, src.Enabled...)
	dst.Disabled = append(dst.Disabled, src.Disabled...)
}
