package render

import (
	"bytes"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	schedconfig "github.com/kube-nexus/kubenexus/scheduler/apis/config"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

var testOpts = Options{Namespace: "kubenexus-system", DefaultImage: "ghcr.io/kube-nexus/kubenexus-scheduler:v0.1.0"}

func knc(spec v1alpha1.KubeNexusConfigSpec) *v1alpha1.KubeNexusConfig {
	return &v1alpha1.KubeNexusConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "default", UID: "5c0e9a52-1d0b-4a43-9b1e-0d9f3c1b7a11"},
		Spec:       spec,
	}
}

func sample(t *testing.T) v1alpha1.KubeNexusConfigSpec {
	t.Helper()
	data, err := os.ReadFile("../../../config/samples/scheduling_v1alpha1_kubenexusconfig.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var obj v1alpha1.KubeNexusConfig
	if err := yaml.UnmarshalStrict(data, &obj); err != nil {
		t.Fatal(err)
	}
	return obj.Spec
}

// The golden files are what the operator applies; a change to rendering shows up as
// a reviewable diff (go test ./controllers/kubenexusconfig/render -update).
func TestRenderGolden(t *testing.T) {
	cases := map[string]v1alpha1.KubeNexusConfigSpec{
		// An empty spec, as a client that skipped API defaulting would send it.
		"empty":  {},
		"sample": sample(t),
		"ha": {
			Scheduler: v1alpha1.SchedulerSpec{
				SchedulerName:   "gpu-scheduler",
				Image:           "registry.example.com/kubenexus-scheduler@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
				ImagePullPolicy: corev1.PullAlways,
				Replicas:        3,
				LeaderElection:  v1alpha1.LeaderElectionSpec{Enabled: ptr.To(true), LeaseDurationSeconds: 30, RenewDeadlineSeconds: 20, RetryPeriodSeconds: 4},
				Resources: &corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("8Gi")},
				},
				ClientConnection:         v1alpha1.ClientConnectionSpec{QPS: 1000, Burst: 2000},
				PercentageOfNodesToScore: 30,
				Verbosity:                4,
				ServingCertSecretName:    "kubenexus-scheduler-serving-cert",
			},
			Plugins: v1alpha1.PluginsSpec{Coscheduling: v1alpha1.CoschedulingPlugin{
				DefaultScheduleTimeoutSeconds: 300, BackoffSeconds: 30, StarvationAgingSeconds: 600,
			}},
		},
		"plugins-off": {
			Scheduler: v1alpha1.SchedulerSpec{LeaderElection: v1alpha1.LeaderElectionSpec{Enabled: ptr.To(false)}},
			Plugins: v1alpha1.PluginsSpec{
				Coscheduling:      v1alpha1.CoschedulingPlugin{Enabled: ptr.To(false)},
				ProfileClassifier: v1alpha1.ProfileClassifierPlugin{Enabled: ptr.To(false)},
				TenantHardware:    v1alpha1.TenantHardwarePlugin{Enabled: ptr.To(false)},
				NetworkFabric:     v1alpha1.NetworkFabricPlugin{Enabled: ptr.To(false)},
			},
		},
	}
	for name, spec := range cases {
		t.Run(name, func(t *testing.T) {
			objs, err := Render(knc(spec), testOpts)
			if err != nil {
				t.Fatal(err)
			}
			if errs := Validate(&spec, testOpts.Namespace); len(errs) > 0 {
				t.Fatalf("the scheduler would reject the %s rendering: %v", name, errs.ToAggregate())
			}
			var out bytes.Buffer
			out.WriteString("# " + ConfigKey + " (hash " + objs.Hash + ")\n")
			out.Write(objs.Config)
			for _, o := range objs.All() {
				b, err := yaml.Marshal(o)
				if err != nil {
					t.Fatal(err)
				}
				out.WriteString("---\n")
				out.Write(b)
			}
			golden := filepath.Join("testdata", name+".golden.yaml")
			if *update {
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Errorf("rendering differs from %s (run with -update and review the diff):\n%s", golden, out.String())
			}
		})
	}
}

func TestRenderedProfile(t *testing.T) {
	cfg, err := SchedulerConfiguration(&v1alpha1.KubeNexusConfigSpec{
		Scheduler: v1alpha1.SchedulerSpec{SchedulerName: "gpu-scheduler"},
		Plugins: v1alpha1.PluginsSpec{
			ProfileClassifier:     v1alpha1.ProfileClassifierPlugin{Enabled: ptr.To(false)},
			ResourceFragmentation: v1alpha1.ResourceFragmentationPlugin{Enabled: ptr.To(true), Weight: 7, KeepHostsForQueued: ptr.To(true), GPUDeviceClasses: []string{"gpu.example.com"}},
			NUMATopology:          v1alpha1.NUMATopologyPlugin{Enabled: ptr.To(true), Weight: 5},
			VRAM:                  v1alpha1.VRAMPlugin{Enabled: ptr.To(false)},
			BindingBackpressure:   v1alpha1.BindingBackpressurePlugin{MaxBindingsInFlight: ptr.To[int32](16)},
		},
	}, "ns")
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Profiles[0]
	if *p.SchedulerName != "gpu-scheduler" {
		t.Errorf("profile name %q", *p.SchedulerName)
	}
	var enabled []string
	for _, e := range p.Plugins.MultiPoint.Enabled {
		enabled = append(enabled, e.Name)
	}
	if want := "Coscheduling,WorkloadAware,TopologyAware,NetworkFabric,ResourceFragmentation,TenantHardware,NUMATopology,ResourceReservation,Backfill,GangPreemption,BindingBackpressure"; strings.Join(enabled, ",") != want {
		t.Errorf("multiPoint enabled %v, want %s", enabled, want)
	}
	if b := p.Plugins.Bind.Enabled; len(b) != 1 || b[0].Name != "BindingBackpressure" {
		t.Errorf("bind enabled %+v, want BindingBackpressure named before the default binder", b)
	}
	var backpressureArgs, fragmentationArgs string
	for _, c := range p.PluginConfig {
		switch c.Name {
		case "BindingBackpressure":
			backpressureArgs = string(c.Args.Raw)
		case "ResourceFragmentation":
			fragmentationArgs = string(c.Args.Raw)
		}
	}
	if !strings.Contains(fragmentationArgs, `"keepHostsForQueued":true`) {
		t.Errorf("ResourceFragmentation args %s, want keepHostsForQueued", fragmentationArgs)
	}
	if !strings.Contains(fragmentationArgs, `"gpuDeviceClasses":["gpu.example.com"]`) {
		t.Errorf("ResourceFragmentation args %s, want gpuDeviceClasses", fragmentationArgs)
	}
	if backpressureArgs != `{"maxBindingsInFlight":16}` {
		t.Errorf("BindingBackpressure args %s, want maxBindingsInFlight 16", backpressureArgs)
	}
	for _, e := range p.Plugins.MultiPoint.Enabled {
		if e.Name == "ResourceFragmentation" && (e.Weight == nil || *e.Weight != 7) {
			t.Errorf("ResourceFragmentation weight %v, want 7", e.Weight)
		}
		if e.Name == "NUMATopology" && (e.Weight == nil || *e.Weight != 5) {
			t.Errorf("NUMATopology weight %v, want 5", e.Weight)
		}
	}
	if qs := p.Plugins.QueueSort; len(qs.Enabled) != 1 || qs.Enabled[0].Name != "Coscheduling" || len(qs.Disabled) != 1 || qs.Disabled[0].Name != "*" {
		t.Errorf("queueSort %+v, want Coscheduling replacing the default", qs)
	}
	if cfg.LeaderElection.ResourceNamespace != "ns" || cfg.LeaderElection.ResourceName != LeaseName {
		t.Errorf("lease %s/%s", cfg.LeaderElection.ResourceNamespace, cfg.LeaderElection.ResourceName)
	}
}

func TestConfigHash(t *testing.T) {
	base := sample(t)
	_, h1, _ := ConfigYAML(&base, testOpts.Namespace)
	same := sample(t)
	same.Scheduler.Replicas = 4 // the Deployment changes, not the scheduler's configuration
	same.Scheduler.Image = "other:tag"
	_, h2, _ := ConfigYAML(&same, testOpts.Namespace)
	if h1 != h2 {
		t.Errorf("replicas and image changed the configuration hash (%s → %s)", h1, h2)
	}
	changed := sample(t)
	changed.Plugins.Coscheduling.BackoffSeconds++
	_, h3, _ := ConfigYAML(&changed, testOpts.Namespace)
	if h1 == h3 {
		t.Error("a Coscheduling arg change kept the configuration hash")
	}
	objs, _ := Render(knc(changed), testOpts)
	if got := objs.Deployment.Spec.Template.Annotations[ConfigHashAnnotation]; got != h3 {
		t.Errorf("pod template hash annotation %q, want %q", got, h3)
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name      string
		mutate    func(*v1alpha1.KubeNexusConfigSpec)
		wantField string
		wantText  string
	}{
		{
			// Allowed by the CRD (retryPeriod < renewDeadline), refused by the leader elector.
			name: "renew deadline within retry jitter",
			mutate: func(s *v1alpha1.KubeNexusConfigSpec) {
				s.Scheduler.LeaderElection = v1alpha1.LeaderElectionSpec{Enabled: ptr.To(true), LeaseDurationSeconds: 15, RenewDeadlineSeconds: 10, RetryPeriodSeconds: 9}
			},
			wantField: "spec.scheduler.leaderElection.renewDeadlineSeconds",
			wantText:  "retryPeriodSeconds",
		},
		{
			name: "lease shorter than renew deadline",
			mutate: func(s *v1alpha1.KubeNexusConfigSpec) {
				s.Scheduler.LeaderElection = v1alpha1.LeaderElectionSpec{Enabled: ptr.To(true), LeaseDurationSeconds: 10, RenewDeadlineSeconds: 10, RetryPeriodSeconds: 2}
			},
			wantField: "spec.scheduler.leaderElection.leaseDurationSeconds",
			wantText:  "RenewDeadline",
		},
		{
			name:      "percentage of nodes out of range",
			mutate:    func(s *v1alpha1.KubeNexusConfigSpec) { s.Scheduler.PercentageOfNodesToScore = 150 },
			wantField: "spec.scheduler.percentageOfNodesToScore",
			wantText:  "0-100",
		},
		{
			name:      "coscheduling backoff out of range",
			mutate:    func(s *v1alpha1.KubeNexusConfigSpec) { s.Plugins.Coscheduling.BackoffSeconds = 7200 },
			wantField: "spec.plugins.coscheduling.backoffSeconds",
			wantText:  "between 1 and 3600",
		},
		{
			name:      "tenantHardware without profileClassifier",
			mutate:    func(s *v1alpha1.KubeNexusConfigSpec) { s.Plugins.ProfileClassifier.Enabled = ptr.To(false) },
			wantField: "spec.plugins.tenantHardware.enabled",
			wantText:  "needs spec.plugins.profileClassifier.enabled: true",
		},
		{
			// Allowed by the CRD schema; the API server refuses the Deployment.
			name: "scheduler limits below requests",
			mutate: func(s *v1alpha1.KubeNexusConfigSpec) {
				s.Scheduler.Resources = &corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
				}
			},
			wantField: "spec.scheduler.resources.requests",
			wantText:  "must be less than or equal to cpu limit of 1",
		},
		{
			name: "scheduler resources with a negative quantity",
			mutate: func(s *v1alpha1.KubeNexusConfigSpec) {
				s.Scheduler.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("-1Gi")}}
			},
			wantField: "spec.scheduler.resources.requests[memory]",
			wantText:  "must be greater than or equal to 0",
		},
		{
			name: "scheduler resources naming an unknown standard resource",
			mutate: func(s *v1alpha1.KubeNexusConfigSpec) {
				s.Scheduler.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpus": resource.MustParse("1")}}
			},
			wantField: "spec.scheduler.resources.requests[cpus]",
			wantText:  "must be a standard resource",
		},
		{
			// Allowed by the CRD schema (any operator string); the API server refuses it.
			name: "scheduler toleration with a value for Exists",
			mutate: func(s *v1alpha1.KubeNexusConfigSpec) {
				s.Scheduler.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists, Value: "system", Effect: corev1.TaintEffectNoSchedule}}
			},
			wantField: "spec.scheduler.tolerations[0].operator",
			wantText:  "value must be empty when `operator` is 'Exists'",
		},
		{
			name: "scheduler node affinity with no terms",
			mutate: func(s *v1alpha1.KubeNexusConfigSpec) {
				s.Scheduler.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{}}}
			},
			wantField: "spec.scheduler.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms",
			wantText:  "Required value",
		},
		{
			// The API's schema allows any resource name; the plugin refuses a repeat.
			name: "workloadAware resource listed twice",
			mutate: func(s *v1alpha1.KubeNexusConfigSpec) {
				s.Plugins.WorkloadAware.Resources = []v1alpha1.ResourceWeight{{Name: "cpu", Weight: 1}, {Name: "cpu", Weight: 2}}
			},
			wantField: "spec.plugins.workloadAware.resources[1].name",
			wantText:  "Duplicate value",
		},
		{
			name: "two topology levels reading the same node label",
			mutate: func(s *v1alpha1.KubeNexusConfigSpec) {
				s.Topology.Levels = []v1alpha1.TopologyLevel{{Name: "rack", NodeLabel: "example.com/rack"}, {Name: "row", NodeLabel: "example.com/rack"}}
			},
			wantField: "spec.topology.levels[1].nodeLabel",
			wantText:  "Duplicate value",
		},
		{
			name:      "negative starvation aging",
			mutate:    func(s *v1alpha1.KubeNexusConfigSpec) { s.Plugins.Coscheduling.StarvationAgingSeconds = -1 },
			wantField: "spec.plugins.coscheduling.starvationAgingSeconds",
			wantText:  "0 (off)",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := sample(t)
			tc.mutate(&spec)
			// Every error names the one wrong field (the API server may say two things
			// about it), and one of them says what is wrong.
			errs := Validate(&spec, "ns")
			if len(errs) == 0 {
				t.Fatalf("accepted; want an error at %s", tc.wantField)
			}
			mentioned := false
			for _, e := range errs {
				if e.Field != tc.wantField {
					t.Errorf("error %q names another field; want only %s", e.Error(), tc.wantField)
				}
				mentioned = mentioned || strings.Contains(e.Error(), tc.wantText)
			}
			if !mentioned {
				t.Errorf("got %v, want a message mentioning %q", errs.ToAggregate(), tc.wantText)
			}
		})
	}
	spec := sample(t)
	if errs := Validate(&spec, "ns"); len(errs) > 0 {
		t.Errorf("the sample is refused: %v", errs.ToAggregate())
	}
}

func TestValidateWebhook(t *testing.T) {
	expr := func(op metav1.LabelSelectorOperator, values ...string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "kubenexus.io/enabled", Operator: metav1.LabelSelectorOpExists},
			{Key: "team", Operator: op, Values: values},
		}}
	}
	cases := map[string]struct {
		selector  *metav1.LabelSelector
		wantField string
		wantText  string
	}{
		"operator Equals (not a selector operator)": {expr("Equals", "a"), "spec.webhook.namespaceSelector.matchExpressions[1].operator", `"Equals"`},
		"In without values":                         {expr(metav1.LabelSelectorOpIn), "spec.webhook.namespaceSelector.matchExpressions[1].values", "must be specified when `operator` is 'In' or 'NotIn'"},
		"Exists with values":                        {expr(metav1.LabelSelectorOpExists, "a"), "spec.webhook.namespaceSelector.matchExpressions[1].values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"},
		"invalid label value": {&metav1.LabelSelector{MatchLabels: map[string]string{"team": "a b"}},
			"spec.webhook.namespaceSelector.matchLabels", "a valid label must be"},
		"valid":   {expr(metav1.LabelSelectorOpIn, "a", "b"), "", ""},
		"default": {nil, "", ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := &v1alpha1.WebhookSpec{NamespaceSelector: tc.selector}
			errs := ValidateWebhook(w)
			_, convErr := w.NamespaceScope()
			if tc.wantField == "" {
				if len(errs) > 0 || convErr != nil {
					t.Fatalf("refused a usable selector: %v / %v", errs.ToAggregate(), convErr)
				}
				return
			}
			if convErr == nil {
				t.Errorf("the webhook's conversion accepts a selector admission refuses")
			}
			if len(errs) == 0 || errs[0].Field != tc.wantField || !strings.Contains(errs[0].Error(), tc.wantText) {
				t.Errorf("got %v, want field %s mentioning %q", errs.ToAggregate(), tc.wantField, tc.wantText)
			}
		})
	}
}

// spec.kueue.tenantTierFrom reaches ProfileClassifier's args, which the scheduler
// decodes strictly.
func TestRenderedTenantTierSource(t *testing.T) {
	cfg, err := SchedulerConfiguration(&v1alpha1.KubeNexusConfigSpec{Kueue: v1alpha1.KueueSpec{TenantTierFrom: v1alpha1.TenantTierFromClusterQueue}}, "ns")
	if err != nil {
		t.Fatal(err)
	}
	for _, pc := range cfg.Profiles[0].PluginConfig {
		if pc.Name != "ProfileClassifier" {
			continue
		}
		args, err := schedconfig.DecodeProfileClassifierArgs(&runtime.Unknown{Raw: pc.Args.Raw})
		if err != nil {
			t.Fatal(err)
		}
		if args.TenantTierFrom != v1alpha1.TenantTierFromClusterQueue {
			t.Errorf("ProfileClassifier tenantTierFrom %q, want ClusterQueue", args.TenantTierFrom)
		}
		return
	}
	t.Error("no ProfileClassifier args rendered")
}

// Against an API server older than the scheduler's release, the Deployment turns
// off the features whose API that server does not serve; from 1.37 on, none.
func TestSchedulerArgsFollowTheAPIServer(t *testing.T) {
	knc := &v1alpha1.KubeNexusConfig{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.DefaultConfigName}}
	argsFor := func(minor int) []string {
		objs, err := Render(knc, Options{Namespace: "kubenexus-system", DefaultImage: "img", APIServerMinor: minor})
		if err != nil {
			t.Fatal(err)
		}
		return objs.Deployment.Spec.Template.Spec.Containers[0].Args
	}
	if got := argsFor(36); !slices.Contains(got, "--feature-gates=DRADeviceTaintRules=false") {
		t.Errorf("1.36: args %v, want DRADeviceTaintRules off", got)
	}
	for _, minor := range []int{0, 37} {
		for _, a := range argsFor(minor) {
			if strings.HasPrefix(a, "--feature-gates") {
				t.Errorf("1.%d: args carry %s", minor, a)
			}
		}
	}
}

// TestDefaultSpreadingFollowsTopologyAware: kube-scheduler's system default spread
// constraints are off while TopologyAware spreads replicas (pods nothing spreads can
// then be batched), and back when TopologyAware is disabled.
func TestDefaultSpreadingFollowsTopologyAware(t *testing.T) {
	spreadArgs := func(topologyAware *bool) (string, bool) {
		cfg, err := SchedulerConfiguration(&v1alpha1.KubeNexusConfigSpec{
			Plugins: v1alpha1.PluginsSpec{TopologyAware: v1alpha1.TopologyAwarePlugin{Enabled: topologyAware}},
		}, "ns")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cfg.Profiles[0].PluginConfig {
			if c.Name == PodTopologySpread {
				return string(c.Args.Raw), true
			}
		}
		return "", false
	}
	if args, ok := spreadArgs(nil); !ok || args != `{"defaultingType":"List"}` {
		t.Errorf("TopologyAware on: PodTopologySpread args %q (present %v), want defaultingType List without constraints", args, ok)
	}
	if args, ok := spreadArgs(ptr.To(false)); ok {
		t.Errorf("TopologyAware off: PodTopologySpread args %q, want none (kube-scheduler's system defaults)", args)
	}
}

// TestGPUResourcesReachEveryPlugin: the GPU resource names the API takes in one
// place are rendered into every plugin that counts GPUs; with the default
// (nvidia.com/gpu alone) none of them gets args for it.
func TestGPUResourcesReachEveryPlugin(t *testing.T) {
	argsOf := func(r v1alpha1.ResourceFragmentationPlugin) map[string]string {
		cfg, err := SchedulerConfiguration(&v1alpha1.KubeNexusConfigSpec{Plugins: v1alpha1.PluginsSpec{ResourceFragmentation: r}}, "ns")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, c := range cfg.Profiles[0].PluginConfig {
			out[c.Name] = string(c.Args.Raw)
		}
		return out
	}
	got := argsOf(v1alpha1.ResourceFragmentationPlugin{GPUResourceName: "nvidia.com/gpu", AdditionalGPUResources: []string{"amd.com/gpu"}})
	for plugin, want := range map[string]string{
		"ResourceFragmentation": `"gpuResources":["nvidia.com/gpu","amd.com/gpu"]`,
		"VRAM":                  `"gpuResources":["nvidia.com/gpu","amd.com/gpu"]`,
		"NUMATopology":          `"gpuResources":["nvidia.com/gpu","amd.com/gpu"]`,
		"GangPreemption":        `"gpuResources":["nvidia.com/gpu","amd.com/gpu"]`,
		"ResourceReservation":   `"gpuResources":["nvidia.com/gpu","amd.com/gpu"]`,
		"WorkloadAware":         `"acceleratorResources":["nvidia.com/gpu","amd.com/gpu"]`,
	} {
		if !strings.Contains(got[plugin], want) {
			t.Errorf("%s args %q, want %s", plugin, got[plugin], want)
		}
	}
	got = argsOf(v1alpha1.ResourceFragmentationPlugin{GPUResourceName: "nvidia.com/gpu"})
	for _, plugin := range []string{"VRAM", "NUMATopology", "GangPreemption", "ResourceReservation", "WorkloadAware"} {
		if a, ok := got[plugin]; ok {
			t.Errorf("default GPU resource: %s args %q, want none", plugin, a)
		}
	}
}

// TestConsolidationReachesGangPreemption: the KubeNexusConfig's consolidation
// settings become GangPreemption's args, and the scheduler's decoder accepts them
// (the fields it does not name keep the plugin's defaults).
func TestConsolidationReachesGangPreemption(t *testing.T) {
	spec := &v1alpha1.KubeNexusConfigSpec{Plugins: v1alpha1.PluginsSpec{GangPreemption: v1alpha1.GangPreemptionPlugin{
		Consolidation: &v1alpha1.GangConsolidation{CheckpointedPods: ptr.To(true), MaxEvictionsPerGang: ptr.To[int32](2)},
	}}}
	cfg, err := SchedulerConfiguration(spec, "ns")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Profiles[0].PluginConfig {
		if c.Name != "GangPreemption" {
			continue
		}
		if want := `"consolidation":{"checkpointedPods":true,"maxEvictionsPerGang":2}`; !strings.Contains(string(c.Args.Raw), want) {
			t.Fatalf("GangPreemption args %s, want %s", c.Args.Raw, want)
		}
		args, err := schedconfig.DecodeGangPreemptionArgs(&runtime.Unknown{Raw: c.Args.Raw})
		if err != nil {
			t.Fatal(err)
		}
		got := args.Consolidation
		if !*got.Enabled || !*got.CheckpointedPods || *got.MaxEvictionsPerGang != 2 || *got.MaxEvictionsPerHour != 32 {
			t.Errorf("decoded %+v, want enabled, checkpointed pods, 2 per gang, 32 per hour", got)
		}
		return
	}
	t.Fatal("no GangPreemption args rendered")
}

// The scheduler's leader-election Lease is rendered, owned by the KubeNexusConfig
// (so that it goes with it) and applied before the Deployment whose pods take it,
// only with leader election on.
func TestLeaseOwnedWithLeaderElection(t *testing.T) {
	for _, on := range []bool{true, false} {
		spec := v1alpha1.KubeNexusConfigSpec{Scheduler: v1alpha1.SchedulerSpec{Replicas: 1, LeaderElection: v1alpha1.LeaderElectionSpec{Enabled: ptr.To(on)}}}
		objs, err := Render(knc(spec), testOpts)
		if err != nil {
			t.Fatal(err)
		}
		if !on {
			if objs.Lease != nil {
				t.Errorf("leader election off: a Lease was rendered")
			}
			continue
		}
		l := objs.Lease
		if l == nil || *l.Name != LeaseName || *l.Namespace != testOpts.Namespace || l.Spec != nil {
			t.Fatalf("leader election on: Lease %+v, want %s/%s with no spec (the scheduler writes it)", l, testOpts.Namespace, LeaseName)
		}
		if len(l.OwnerReferences) != 1 || *l.OwnerReferences[0].Kind != "KubeNexusConfig" {
			t.Errorf("Lease owners %v, want the KubeNexusConfig", l.OwnerReferences)
		}
		all := objs.All()
		if all[1] != runtime.ApplyConfiguration(l) || all[2] != runtime.ApplyConfiguration(objs.Deployment) {
			t.Errorf("apply order %v: want the Lease right before the Deployment", all)
		}
	}
}

// A PodDisruptionBudget keeps one scheduler pod through a drain when there is more
// than one; with one pod there is none (a budget of one would block every drain of
// its node).
func TestBudgetOnlyWithReplicas(t *testing.T) {
	for _, n := range []int32{0, 1, 2, 5} {
		spec := v1alpha1.KubeNexusConfigSpec{Scheduler: v1alpha1.SchedulerSpec{Replicas: n, LeaderElection: v1alpha1.LeaderElectionSpec{Enabled: ptr.To(true)}}}
		objs, err := Render(knc(spec), testOpts)
		if err != nil {
			t.Fatal(err)
		}
		pdb := objs.PodDisruptionBudget
		if n <= 1 {
			if pdb != nil || len(objs.All()) != 4 {
				t.Errorf("replicas %d: a PodDisruptionBudget was rendered", n)
			}
			continue
		}
		if pdb == nil || len(objs.All()) != 5 {
			t.Fatalf("replicas %d: no PodDisruptionBudget", n)
		}
		if *pdb.Name != Name || *pdb.Namespace != testOpts.Namespace || pdb.Spec.MinAvailable.IntValue() != 1 || pdb.Spec.MaxUnavailable != nil {
			t.Errorf("replicas %d: budget %s/%s minAvailable %v maxUnavailable %v, want %s/%s minAvailable 1", n, *pdb.Namespace, *pdb.Name, pdb.Spec.MinAvailable, pdb.Spec.MaxUnavailable, testOpts.Namespace, Name)
		}
		if got, want := pdb.Spec.Selector.MatchLabels, objs.Deployment.Spec.Selector.MatchLabels; !maps.Equal(got, want) {
			t.Errorf("replicas %d: budget selects %v, the Deployment's pods are %v", n, got, want)
		}
		if len(pdb.OwnerReferences) != 1 || !*pdb.OwnerReferences[0].Controller {
			t.Errorf("replicas %d: budget owners %v, want the KubeNexusConfig as controller", n, pdb.OwnerReferences)
		}
	}
}
