// The bundle is validated offline with operator-framework/api's
// validators, as `operator-sdk bundle validate` does, and checks that it carries
// config/'s CRDs and the manager as config/ defines it.
package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/api/pkg/validation"
	"github.com/operator-framework/api/pkg/validation/errors"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// repoRoot is the repository root, from this module's directory (hack/bundle).
var repoRoot = filepath.Join("..", "..")

var bundleDir = filepath.Join(repoRoot, "bundle")

func TestBundleValidates(t *testing.T) {
	b, err := manifests.GetBundleFromDir(bundleDir)
	if err != nil {
		t.Fatal(err)
	}
	validators := validation.DefaultBundleValidators.WithValidators(
		validation.OperatorHubV2Validator,
		validation.StandardCapabilitiesValidator,
		validation.StandardCategoriesValidator,
		validation.ObjectValidator,
		validation.GoodPracticesValidator,
		validation.AlphaDeprecatedAPIsValidator,
	)
	objs := append(b.ObjectsToValidate(), map[string]string{"k8s-version": "1.37"})
	for _, res := range validators.Validate(objs...) {
		for _, e := range res.Errors {
			t.Errorf("%s: %v", res.Name, e)
		}
		for _, w := range res.Warnings {
			if w.Level == errors.LevelWarn && !onlyVersionlessRBAC(w.Error()) {
				t.Errorf("%s: warning: %v", res.Name, w)
			}
		}
	}
	if b.CSV == nil || len(b.V1CRDs) != 4 {
		t.Fatalf("bundle has CSV %v and %d CRDs, want a CSV and 4", b.CSV != nil, len(b.V1CRDs))
	}
	dep := b.CSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0]
	args := dep.Spec.Template.Spec.Containers[0].Args
	if !slices.Contains(args, "--cert-rotation=false") {
		t.Errorf("under OLM the manager must leave certificates to OLM; args %v", args)
	}
	if got := len(b.CSV.Spec.WebhookDefinitions); got != 5 {
		t.Errorf("%d webhook definitions, want 5 (4 validating: KubeNexusConfig, PodGroup, ResourceReservation, HardwareTier; 1 pod)", got)
	}
	// The pod webhook fails closed like the chart's opted-in one, so OLM must scope
	// it: only to target namespaces, never every namespace or the operator's own.
	for _, w := range b.CSV.Spec.WebhookDefinitions {
		if slices.ContainsFunc(w.Rules, func(r admissionregv1.RuleWithOperations) bool { return slices.Contains(r.Resources, "pods") }) &&
			(w.FailurePolicy == nil || *w.FailurePolicy != admissionregv1.Fail) {
			t.Errorf("pod webhook %s has failure policy %v, want Fail", w.GenerateName, w.FailurePolicy)
		}
	}
	for _, m := range b.CSV.Spec.InstallModes {
		want := m.Type == operatorsv1alpha1.InstallModeTypeSingleNamespace || m.Type == operatorsv1alpha1.InstallModeTypeMultiNamespace
		if m.Supported != want {
			t.Errorf("install mode %s supported: %v, want %v", m.Type, m.Supported, want)
		}
	}
}

// onlyVersionlessRBAC: the deprecated-API check flags RBAC rules by resource name, and
// RBAC rules carry no API version. It flags "events" (the rules grant core/v1 and
// events.k8s.io/v1 Events, both GA) and "poddisruptionbudgets" (kube-scheduler's
// bootstrap role reads policy/v1 PodDisruptionBudgets, GA). Any other resource it
// names is a real finding.
func onlyVersionlessRBAC(warning string) bool {
	const prefix = "Migrate the API(s) for "
	i := strings.Index(warning, prefix)
	if i < 0 {
		return false
	}
	for _, m := range regexp.MustCompile(`(\w+): \(\[`).FindAllStringSubmatch(warning[i+len(prefix):], -1) {
		if m[1] != "events" && m[1] != "poddisruptionbudgets" {
			return false
		}
	}
	return true
}

// Under OLM the scheduler's account gets the rules of the roles the chart binds, and
// nobody gets bind, escalate, impersonate, a wildcard or any write to role bindings.
func TestBundlePermissions(t *testing.T) {
	b, err := manifests.GetBundleFromDir(bundleDir)
	if err != nil {
		t.Fatal(err)
	}
	spec := b.CSV.Spec.InstallStrategy.StrategySpec
	rules := map[string][]rbacv1.PolicyRule{}
	for _, p := range append(append([]operatorsv1alpha1.StrategyDeploymentPermissions{}, spec.ClusterPermissions...), spec.Permissions...) {
		rules[p.ServiceAccountName] = append(rules[p.ServiceAccountName], p.Rules...)
	}
	for sa, rs := range rules {
		for _, r := range rs {
			for _, v := range append(append(append([]string{}, r.Verbs...), r.Resources...), r.APIGroups...) {
				if v == "*" || v == "bind" || v == "escalate" || v == "impersonate" {
					t.Errorf("%s: %q in %+v", sa, v, r)
				}
			}
			if slices.Contains(r.APIGroups, "rbac.authorization.k8s.io") && slices.ContainsFunc(r.Verbs, func(v string) bool { return v != "get" && v != "list" && v != "watch" }) {
				t.Errorf("%s may write RBAC objects: %+v", sa, r)
			}
			// The default scheduler's leader election is not kubenexus-scheduler's.
			if slices.Contains(r.Resources, "leases") && slices.Contains(r.ResourceNames, "kube-scheduler") {
				t.Errorf("%s may write the default scheduler's lease: %+v", sa, r)
			}
		}
	}
	allows := func(sa, group, resource, verb string) bool {
		return slices.ContainsFunc(rules[sa], func(r rbacv1.PolicyRule) bool {
			return slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb)
		})
	}
	for _, want := range []struct{ sa, group, resource, verb string }{
		{"kubenexus-scheduler", "", "pods/binding", "create"},                    // system:kube-scheduler
		{"kubenexus-scheduler", "", "persistentvolumes", "update"},               // system:volume-scheduler
		{"kubenexus-scheduler", "scheduling.kubenexus.io", "podgroups", "watch"}, // kubenexus-scheduler
		{"kubenexus-scheduler", "", "configmaps", "get"},                         // the client CA
		{"kubenexus-manager", "apps", "deployments", "patch"},                    // it applies the scheduler
		{"kubenexus-manager", "", "serviceaccounts", "get"},                      // and checks its account
	} {
		if !allows(want.sa, want.group, want.resource, want.verb) {
			t.Errorf("%s may not %s %s in group %q", want.sa, want.verb, want.resource, want.group)
		}
	}
}

// The bundle's CRDs are config/'s.
func TestBundleCRDsMatchConfig(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(repoRoot, "config", "crd", "bases", "*.yaml"))
	for _, f := range files {
		var want apiextensionsv1.CustomResourceDefinition
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(data, &want); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(bundleDir, "manifests", want.Spec.Group+"_"+want.Spec.Names.Plural+".yaml"))
		if err != nil {
			t.Fatalf("%s missing from the bundle (run make bundle): %v", want.Name, err)
		}
		if string(got) != string(data) {
			t.Errorf("%s differs from config/ (run make bundle)", want.Name)
		}
	}
}
