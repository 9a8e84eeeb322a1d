package topology

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	testutil "github.com/kube-nexus/kubenexus/test/util"
)

// Kueue #9046's shape in the default levels (nvlink 0, tor 1, rack 2, zone 3):
// the whole gang in one zone, slices of 48 in one rack, of 16 in one NVLink domain.
func TestPolicyOfSlices(t *testing.T) {
	pod := func(kv ...string) *corev1.Pod {
		w := testutil.MakePod("p", "ns")
		for i := 0; i+1 < len(kv); i += 2 {
			w = w.Annotation(kv[i], kv[i+1])
		}
		return w.Obj()
	}
	withSlices := func(p Policy, s ...Slice) Policy {
		copy(p.Slices[:], s)
		return p
	}
	multi := `[{"topology": "` + v1alpha1.LabelRack + `", "size": 48}, {"topology": "` + v1alpha1.LabelGPUClique + `", "size": "16"}]`
	pg := testutil.MakePodGroup("g", "ns").MinMember(96).NetworkTopology(v1alpha1.NetworkTopologyRequired, v1alpha1.NetworkLevelZone).Obj()
	pg.Spec.NetworkTopology.Slices = []v1alpha1.NetworkTopologySlice{{Level: "rack", Size: 48}, {Level: "nvlink", Size: 16}}
	badPG := pg.DeepCopy()
	badPG.Spec.NetworkTopology.Slices[1].Level = "spine"
	unevenPG := pg.DeepCopy()
	unevenPG.Spec.MinMember = 100
	withGroups := func(p Policy, g ...Group) Policy {
		copy(p.Groups[:], g)
		return p
	}
	grouped := testutil.MakePodGroup("g", "ns").MinMember(6).NetworkTopology(v1alpha1.NetworkTopologyRequired, v1alpha1.NetworkLevelRack).
		SubGroup("prefill", v1alpha1.NetworkLevelNVLink).SubGroup("decode", v1alpha1.NetworkLevelNVLink).Obj()
	groupedWide := grouped.DeepCopy()
	groupedWide.Spec.NetworkTopology.SubGroups[1].Level = v1alpha1.NetworkLevelZone
	native := &v1alpha1.PodGroup{}
	native.Name, native.APIVersion = "g", "scheduling.k8s.io/v1beta1"
	native.Spec.MinMember, native.Spec.NativeTopologyKey = 4, v1alpha1.LabelRack
	nativeBad := native.DeepCopy()
	nativeBad.Spec.NativeTopologyKey = "cloud.example.com/block"
	composite := &v1alpha1.PodGroup{}
	composite.Name, composite.Kind = "serve", "CompositePodGroup"
	composite.Spec.MinMember, composite.Spec.NativeTopologyKey = 4, v1alpha1.LabelRack
	composite.Spec.NativeGroupKeys = []v1alpha1.NativeGroupKey{{Role: "decode", Key: v1alpha1.LabelGPUClique}, {Role: "prefill", Key: v1alpha1.LabelGPUClique}}
	compositeOwnKey := composite.DeepCopy()
	compositeOwnKey.Spec.NativeTopologyKey = "cloud.example.com/block"
	compositeOwnKey.Spec.NativeGroupKeys = []v1alpha1.NativeGroupKey{{Role: "decode", Key: "cloud.example.com/block"}, {Role: "prefill", Key: v1alpha1.LabelGPUClique}}
	nestedBelow := composite.DeepCopy()
	nestedBelow.Spec.NativeSetKeys = []v1alpha1.NativeSetKey{{Name: "r0", Key: v1alpha1.LabelToR, Roles: []string{"decode", "prefill"}}}
	nestedTwice := nestedBelow.DeepCopy()
	nestedTwice.Spec.NativeTopologyKey = v1alpha1.LabelTopologyZone
	nestedTwice.Spec.NativeSetKeys = append(nestedTwice.Spec.NativeSetKeys, v1alpha1.NativeSetKey{Name: "outer", Key: v1alpha1.LabelRack, Roles: []string{"decode", "prefill"}})
	nestedAt := composite.DeepCopy()
	nestedAt.Spec.NativeSetKeys = []v1alpha1.NativeSetKey{{Name: "r0", Key: v1alpha1.LabelRack, Roles: []string{"decode", "prefill"}}}
	compositeLoose := composite.DeepCopy()
	compositeLoose.Spec.NativeTopologyKey = ""
	compositeUnknown := composite.DeepCopy()
	compositeUnknown.Spec.NativeGroupKeys[1].Key = "cloud.example.com/pod"
	compositeWide := composite.DeepCopy()
	compositeWide.Spec.NativeGroupKeys[0].Key = v1alpha1.LabelTopologyZone
	compositeSource := "CompositePodGroup serve spec.schedulingConstraints.topology"
	kai := func(u *unstructured.Unstructured) *v1alpha1.PodGroup {
		pg, err := v1alpha1.FromKAIPodGroup(u)
		if err != nil {
			t.Fatal(err)
		}
		return pg
	}
	kaiPreferred := testutil.KAIPodGroup("ns", "serve", 0, "")
	kaiPreferred.Object["spec"] = map[string]any{"topologyConstraint": map[string]any{"preferredTopologyLevel": v1alpha1.LabelTopologyZone}}
	sub := func(name, parent, required string) testutil.KAISubGroup {
		return testutil.KAISubGroup{Name: name, Parent: parent, Required: required, MinMember: 2}
	}
	kaiSource := "PodGroup serve spec.topologyConstraint"
	tests := map[string]policyCase{
		"KAI PodGroup: required rack, each leaf sub-group in one nvlink": {pod(), kai(testutil.KAIPodGroup("ns", "serve", 0, v1alpha1.LabelRack, sub("prefill", "", v1alpha1.LabelGPUClique), sub("decode", "", v1alpha1.LabelGPUClique))),
			withGroups(Policy{Required: true, Level: 2, Source: kaiSource}, Group{Role: "prefill", Level: 0}, Group{Role: "decode", Level: 0}), true, ""},
		"KAI PodGroup: required rack, a leaf preferring one nvlink, a preference of no level ignored": {pod(), kai(testutil.KAIPodGroup("ns", "serve", 0, v1alpha1.LabelRack,
			testutil.KAISubGroup{Name: "prefill", Preferred: v1alpha1.LabelGPUClique, MinMember: 2}, testutil.KAISubGroup{Name: "decode", Preferred: "cloud.example.com/pod", MinMember: 2})),
			withGroups(Policy{Required: true, Level: 2, Source: kaiSource}, Group{Role: "prefill", Level: 0, Preferred: true}), true, ""},
		"KAI PodGroup: preferred zone only": {pod(), kai(kaiPreferred),
			Policy{Level: 3, Source: kaiSource}, true, ""},
		"KAI PodGroup: a set within the PodGroup's required level is implied": {pod(), kai(testutil.KAIPodGroup("ns", "serve", 0, v1alpha1.LabelRack,
			sub("decode", "", v1alpha1.LabelTopologyZone), sub("decode-workers", "decode", v1alpha1.LabelGPUClique), sub("decode-leaders", "decode", ""))),
			withGroups(Policy{Required: true, Level: 2, Source: kaiSource}, Group{Role: "decode-workers", Level: 0}), true, ""},
		"KAI PodGroup: a set below the PodGroup's level keeps its leaves in one domain together": {pod(), kai(testutil.KAIPodGroup("ns", "serve", 0, v1alpha1.LabelTopologyZone,
			sub("decode", "", v1alpha1.LabelRack), sub("decode-workers", "decode", v1alpha1.LabelGPUClique), sub("decode-leaders", "decode", ""))),
			withGroups(Policy{Required: true, Level: 3, Source: kaiSource},
				Group{Role: "decode-workers", Level: 0, Set: "decode", SetLevel: 2}, Group{Role: "decode-leaders", Level: NoLevel, Set: "decode", SetLevel: 2}), true, ""},
		"KAI PodGroup: a set without a level of the PodGroup": {pod(), kai(testutil.KAIPodGroup("ns", "serve", 0, "",
			sub("decode", "", v1alpha1.LabelRack), sub("decode-workers", "decode", v1alpha1.LabelGPUClique), sub("decode-leaders", "decode", v1alpha1.LabelGPUClique))),
			withGroups(Policy{Level: 3, Source: kaiSource},
				Group{Role: "decode-workers", Level: 0, Set: "decode", SetLevel: 2}, Group{Role: "decode-leaders", Level: 0, Set: "decode", SetLevel: 2}), true, ""},
		"KAI PodGroup: a leaf in two sets below the PodGroup's level is refused": {pod(), kai(testutil.KAIPodGroup("ns", "serve", 0, v1alpha1.LabelTopologyZone,
			sub("inference", "", v1alpha1.LabelRack), sub("decode", "inference", v1alpha1.LabelToR),
			sub("decode-workers", "decode", v1alpha1.LabelGPUClique), sub("decode-leaders", "decode", ""), sub("prefill", "inference", v1alpha1.LabelGPUClique))),
			Policy{}, false,
			"PodGroup serve: leaf sub-group decode-leaders is in sub-group inference (topologyConstraint.requiredTopologyLevel network.kubenexus.io/rack) and in sub-group decode " +
				"(topologyConstraint.requiredTopologyLevel network.kubenexus.io/tor), both below the PodGroup's level: KubeNexus keeps a leaf sub-group in one sub-group below the PodGroup's level; " +
				"require the outer one's level for the PodGroup (spec.topologyConstraint.requiredTopologyLevel)"},
		"KAI PodGroup: a hostile sub-group name is quoted shortened": {pod(), kai(testutil.KAIPodGroup("ns", "serve", 0, v1alpha1.LabelTopologyZone,
			sub(strings.Repeat("d", 300), "", v1alpha1.LabelToR), sub("decode-workers", strings.Repeat("d", 300), v1alpha1.LabelRack), sub("decode-leaders", strings.Repeat("d", 300), ""))),
			Policy{}, false,
			"PodGroup serve: leaf sub-group decode-workers: topologyConstraint.requiredTopologyLevel network.kubenexus.io/rack is above its sub-group " + strings.Repeat("d", 61) + "…'s (network.kubenexus.io/tor)"},
		"KAI PodGroup: a leaf's level above its set's is refused": {pod(), kai(testutil.KAIPodGroup("ns", "serve", 0, v1alpha1.LabelTopologyZone,
			sub("decode", "", v1alpha1.LabelToR), sub("decode-workers", "decode", v1alpha1.LabelRack), sub("decode-leaders", "decode", ""))),
			Policy{}, false,
			"PodGroup serve: leaf sub-group decode-workers: topologyConstraint.requiredTopologyLevel network.kubenexus.io/rack is above its sub-group decode's (network.kubenexus.io/tor): a leaf sub-group must fit in its sub-group's domain"},
		"KAI PodGroup: a leaf's level of no topology level": {pod(), kai(testutil.KAIPodGroup("ns", "serve", 0, v1alpha1.LabelRack, sub("prefill", "", "cloud.example.com/pod"))),
			Policy{}, false,
			`PodGroup serve: sub-group prefill: topologyConstraint.requiredTopologyLevel "cloud.example.com/pod" is the node label of no topology level; the levels are nvlink, tor, rack, zone`},
		"KAI PodGroup: a leaf's level above the PodGroup's": {pod(), kai(testutil.KAIPodGroup("ns", "serve", 0, v1alpha1.LabelRack, sub("prefill", "", v1alpha1.LabelTopologyZone))),
			Policy{}, false,
			"PodGroup serve: sub-group prefill: topologyConstraint.requiredTopologyLevel topology.kubernetes.io/zone is above the PodGroup's (network.kubenexus.io/rack): a sub-group must fit in the PodGroup's domain"},
		"CompositePodGroup: required rack, each child in one nvlink": {pod(), composite,
			withGroups(Policy{Required: true, Native: true, Level: 2, Source: compositeSource}, Group{Role: "decode", Level: 0}, Group{Role: "prefill", Level: 0}), true, ""},
		"CompositePodGroup: a child may use the composite's own label": {pod(), compositeOwnKey,
			withGroups(Policy{Required: true, Native: true, Level: 4, Label: "cloud.example.com/block", Source: compositeSource}, Group{Role: "decode", Level: 4}, Group{Role: "prefill", Level: 0}), true, ""},
		"CompositePodGroup: a nested composite at the root's level is implied": {pod(), nestedAt,
			withGroups(Policy{Required: true, Native: true, Level: 2, Source: compositeSource}, Group{Role: "decode", Level: 0}, Group{Role: "prefill", Level: 0}), true, ""},
		"CompositePodGroup: a nested composite below the root's level is a set": {pod(), nestedBelow,
			withGroups(Policy{Required: true, Native: true, Level: 2, Source: compositeSource},
				Group{Role: "decode", Level: 0, Set: "r0", SetLevel: 1}, Group{Role: "prefill", Level: 0, Set: "r0", SetLevel: 1}), true, ""},
		"CompositePodGroup: two nested composites below the root's level are refused": {pod(), nestedTwice, Policy{}, false,
			"CompositePodGroup serve: PodGroup decode is in nested CompositePodGroup r0 (spec.schedulingConstraints.topology key network.kubenexus.io/tor) and in nested CompositePodGroup outer " +
				"(spec.schedulingConstraints.topology key network.kubenexus.io/rack), both below the composite's level: KubeNexus keeps a PodGroup in one nested CompositePodGroup below the composite's level; " +
				"require the outer one's level for the composite (spec.schedulingConstraints.topology)"},
		"CompositePodGroup without a key: children anywhere": {pod(), compositeLoose,
			withGroups(Policy{Native: true, Level: 3, Source: compositeSource}, Group{Role: "decode", Level: 0}, Group{Role: "prefill", Level: 0}), true, ""},
		"CompositePodGroup: a child's key of no level": {pod(), compositeUnknown, Policy{}, false,
			`CompositePodGroup serve: child PodGroup prefill: spec.schedulingConstraints.topology key "cloud.example.com/pod" is the node label of no topology level; the levels are nvlink, tor, rack, zone`},
		"CompositePodGroup: a child's key above the composite's": {pod(), compositeWide, Policy{}, false,
			"CompositePodGroup serve: child PodGroup decode: spec.schedulingConstraints.topology key topology.kubernetes.io/zone is above the composite's (network.kubenexus.io/rack): a child must fit in the composite's domain"},
		"native PodGroup topology: required rack": {pod(v1alpha1.AnnotationKueuePreferredTopology, v1alpha1.LabelTopologyZone), native,
			Policy{Required: true, Native: true, Level: 2, Source: "PodGroup g spec.schedulingConstraints.topology"}, true, ""},
		"native PodGroup topology key of no level: a level of its own": {pod(), nativeBad,
			Policy{Required: true, Native: true, Level: 4, Label: "cloud.example.com/block", Source: "PodGroup g spec.schedulingConstraints.topology"}, true, ""},
		"PodGroup sub-groups": {pod(), grouped, withGroups(Policy{Required: true, Level: 2, Source: "PodGroup g spec.networkTopology"}, Group{Role: "prefill", Level: 0}, Group{Role: "decode", Level: 0}), true, ""},
		"PodGroup sub-group above the gang's level": {pod(), groupedWide, Policy{}, false,
			"spec.networkTopology.subGroups[1].level zone is above spec.networkTopology.level (rack): a sub-group must fit in the gang's domain"},
		"PodGroup slices": {pod(), pg, withSlices(Policy{Required: true, Level: 3, Source: "PodGroup g spec.networkTopology"}, Slice{2, 48}, Slice{0, 16}), true, ""},
		"PodGroup slice level unknown": {pod(), badPG, Policy{}, false,
			`spec.networkTopology.slices[1].level "spine" is not a topology level; the levels are nvlink, tor, rack, zone`},
		"PodGroup slice not dividing minMember": {pod(), unevenPG, Policy{}, false, "spec.networkTopology.slices[0].size 48 must divide the gang's 100 members"},
		"Kueue required zone, multi-layer": {pod(v1alpha1.AnnotationKueueRequiredTopology, v1alpha1.LabelTopologyZone, v1alpha1.AnnotationKueueSliceConstraints, multi), nil,
			withSlices(Policy{Required: true, Level: 3, Source: v1alpha1.AnnotationKueueRequiredTopology}, Slice{2, 48}, Slice{0, 16}), true, ""},
		"Kueue one slice layer, no whole domain": {pod(v1alpha1.AnnotationKueueSliceRequiredTopology, v1alpha1.LabelGPUClique, v1alpha1.AnnotationKueueSliceSize, "16"), nil,
			withSlices(Policy{Level: 3, Source: v1alpha1.AnnotationKueueSliceRequiredTopology}, Slice{0, 16}), true, ""},
		"Kueue unconstrained with slices": {pod(v1alpha1.AnnotationKueueUnconstrainedTopology, "true", v1alpha1.AnnotationKueueSliceRequiredTopology, v1alpha1.LabelRack, v1alpha1.AnnotationKueueSliceSize, "8"), nil,
			withSlices(Policy{Level: 3, Source: v1alpha1.AnnotationKueueSliceRequiredTopology}, Slice{2, 8}), true, ""},
		"Kueue unconstrained alone":  {pod(v1alpha1.AnnotationKueueUnconstrainedTopology, "true"), nil, Policy{}, false, ""},
		"Kueue unconstrained typo":   {pod(v1alpha1.AnnotationKueueUnconstrainedTopology, "yes"), nil, Policy{}, false, `podset-unconstrained-topology="yes": must be true or false`},
		"slice size missing":         {pod(v1alpha1.AnnotationKueueSliceRequiredTopology, v1alpha1.LabelRack), nil, Policy{}, false, "podset-slice-required-topology is set without kueue.x-k8s.io/podset-slice-size"},
		"slice size alone":           {pod(v1alpha1.AnnotationKueueSliceSize, "4"), nil, Policy{}, false, "podset-slice-size is set without kueue.x-k8s.io/podset-slice-required-topology"},
		"slice size not a number":    {pod(v1alpha1.AnnotationKueueSliceRequiredTopology, v1alpha1.LabelRack, v1alpha1.AnnotationKueueSliceSize, "-3"), nil, Policy{}, false, `podset-slice-size="-3": must be a whole number from 1 to 100000`},
		"slice label unknown":        {pod(v1alpha1.AnnotationKueueSliceRequiredTopology, "cloud.example.com/block", v1alpha1.AnnotationKueueSliceSize, "4"), nil, Policy{}, false, `podset-slice-required-topology="cloud.example.com/block": not the node label of a topology level`},
		"both forms":                 {pod(v1alpha1.AnnotationKueueSliceConstraints, multi, v1alpha1.AnnotationKueueSliceSize, "4"), nil, Policy{}, false, "set one or the other, not both"},
		"multi-layer not JSON":       {pod(v1alpha1.AnnotationKueueSliceConstraints, `[{"topology": "x", "size": 4},]`), nil, Policy{}, false, "not a JSON list of"},
		"multi-layer unknown field":  {pod(v1alpha1.AnnotationKueueSliceConstraints, `[{"topology": "`+v1alpha1.LabelRack+`", "sizes": [1, 3]}]`), nil, Policy{}, false, "not a JSON list of"},
		"multi-layer four layers":    {pod(v1alpha1.AnnotationKueueSliceConstraints, `[{},{},{},{}]`), nil, Policy{}, false, "4 layers; 1 to 3 are allowed"},
		"multi-layer bad size":       {pod(v1alpha1.AnnotationKueueSliceConstraints, `[{"topology": "`+v1alpha1.LabelRack+`", "size": 0}]`), nil, Policy{}, false, "layer 0: size 0: must be a whole number from 1 to 100000"},
		"multi-layer inverted":       {pod(v1alpha1.AnnotationKueueSliceConstraints, `[{"topology": "`+v1alpha1.LabelGPUClique+`", "size": 16}, {"topology": "`+v1alpha1.LabelRack+`", "size": 8}]`), nil, Policy{}, false, "slices[1].level rack must be below slices[0].level (nvlink)"},
		"slice above required level": {pod(v1alpha1.AnnotationKueueRequiredTopology, v1alpha1.LabelRack, v1alpha1.AnnotationKueueSliceRequiredTopology, v1alpha1.LabelTopologyZone, v1alpha1.AnnotationKueueSliceSize, "8"), nil, Policy{}, false, "slices[0].level zone is above the level that holds the whole gang (rack)"},
	}
	runPolicyCases(t, tests)
}

func TestValidateSlices(t *testing.T) {
	levels := []Level{{Name: "nvlink"}, {Name: "block"}, {Name: "zone"}}
	tests := []struct {
		slices  []Slice
		outer   int
		members int
		want    string
	}{
		{[]Slice{{1, 48}, {0, 16}}, 2, 96, ""},
		{[]Slice{{1, 48}, {0, 16}}, 2, 100, "slices[0].size 48 must divide the gang's 100 members"},
		{[]Slice{{1, 48}, {0, 20}}, 2, 96, "slices[1].size 20 must divide slices[0].size (48)"},
		{[]Slice{{0, 16}, {1, 8}}, 2, 96, "slices[1].level block must be below slices[0].level (nvlink)"},
		{[]Slice{{2, 16}}, 1, 96, "slices[0].level zone is above the level that holds the whole gang (block): a slice must fit in it"},
		{[]Slice{{0, 0}}, 2, 96, "slices[0].size 0: must be at least 1"},
	}
	for _, tt := range tests {
		err := ValidateSlices(tt.slices, tt.outer, tt.members, levels)
		if got := fmt.Sprint(err); (tt.want == "" && err != nil) || (tt.want != "" && got != tt.want) {
			t.Errorf("ValidateSlices(%v) = %v, want %q", tt.slices, err, tt.want)
		}
	}
}
