// Command bundle generates bundle/, the OLM registry+v1 bundle, from config/: the
// ClusterServiceVersion (the manager Deployment, its RBAC and webhooks, the owned
// CRDs and the samples as alm-examples; the scheduler's permissions) and the CRDs.
// `make bundle` runs it and `make verify` fails when its output is stale. It is a module
// of its own (with its offline validation test, bundle_test.go) so that
// operator-framework/api's dependencies do not move the versions the main module
// shares with hack/tools.
package main

import (
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/lib/version"
)

const (
	pkgName = "kubenexus"
	// Version is the bundle's version; keep it equal to charts/kubenexus appVersion.
	bundleVersion = "0.1.0"
	channel       = "candidate"
	managerImage  = "ghcr.io/kube-nexus/kubenexus-manager:v" + bundleVersion
	schedImage    = "ghcr.io/kube-nexus/kubenexus-scheduler:v" + bundleVersion
	// OLM mounts the webhook serving certificate it issues here.
	olmCertDir = "/tmp/k8s-webhook-server/serving-certs"
)

// An icon of our own: a small hexagon.
const iconSVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64"><polygon points="32,4 58,18 58,46 32,60 6,46 6,18" fill="#2b6cb0"/><circle cx="32" cy="32" r="10" fill="#fff"/></svg>`

func main() {
	root := flag.String("root", ".", "repository root")
	flag.Parse()
	if err := run(*root); err != nil {
		log.Fatal(err)
	}
}

func docs(root, rel string) ([][]byte, error) {
	data, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for _, part := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
		if strings.TrimSpace(stripComments(part)) != "" {
			out = append(out, []byte(part))
		}
	}
	return out, nil
}

// roles decodes the ClusterRoles and Roles of a file under root (a Role decodes
// into the same shape; Kind tells them apart).
func roles(root, rel string) ([]rbacv1.ClusterRole, error) {
	ds, err := docs(root, rel)
	if err != nil {
		return nil, err
	}
	out := make([]rbacv1.ClusterRole, 0, len(ds))
	for _, d := range ds {
		var r rbacv1.ClusterRole
		if err := yaml.Unmarshal(d, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", rel, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func stripComments(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// csvDescription is the CSV's description: what KubeNexus is, how to start, and
// how OLM scopes the pod webhook.
const csvDescription = "KubeNexus deploys and configures kubenexus-scheduler, a Kubernetes Scheduler Framework " +
	"scheduler with all-or-nothing gang scheduling, and classifies pods of Spark, Kubeflow, MPI, Ray, " +
	"JobSet and LeaderWorkerSet into gangs with a mutating webhook.\n\n" +
	"Create the KubeNexusConfig named `default` to deploy the scheduler, label a namespace " +
	"`kubenexus.io/enabled=true` to opt its pods in.\n\n" +
	"Under OLM the pod webhook's scope is the OperatorGroup's target namespaces (OLM sets the " +
	"webhook's namespace selector from them): install into an OperatorGroup that targets the " +
	"namespaces whose pods KubeNexus schedules (SingleNamespace or MultiNamespace), not the " +
	"operator's own namespace. In those namespaces the webhook fails closed, as the chart's does " +
	"for opted-in namespaces; pods elsewhere that name kubenexus-scheduler are classified by the " +
	"scheduler itself. AllNamespaces is not offered: OLM cannot keep a cluster-wide pod webhook " +
	"away from kube-system and the operator's own pods."

func run(root string) error {
	out := filepath.Join(root, "bundle")
	if err := os.RemoveAll(filepath.Join(out, "manifests")); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(out, "manifests"), 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(out, "metadata"), 0o755); err != nil {
		return err
	}

	owned, err := ownedCRDs(root, out)
	if err != nil {
		return err
	}

	clusterRules, nsRules, schedulerRules, err := permissions(root)
	if err != nil {
		return err
	}

	dep, err := managerDeployment(root)
	if err != nil {
		return err
	}
	hooks, err := webhookDefinitions(root)
	if err != nil {
		return err
	}
	examples, err := almExamples(root)
	if err != nil {
		return err
	}

	csv := operatorsv1alpha1.ClusterServiceVersion{
		TypeMeta: metav1.TypeMeta{APIVersion: operatorsv1alpha1.SchemeGroupVersion.String(), Kind: operatorsv1alpha1.ClusterServiceVersionKind},
		ObjectMeta: metav1.ObjectMeta{
			Name: pkgName + ".v" + bundleVersion,
			Annotations: map[string]string{
				"alm-examples":                           examples,
				"capabilities":                           "Basic Install",
				"categories":                             "AI/Machine Learning,Developer Tools",
				"containerImage":                         managerImage,
				"createdAt":                              "2026-11-22T00:00:00Z",
				"description":                            "Gang, topology, GPU and tenant-aware scheduling for clusters where services and batch / AI jobs share nodes.",
				"repository":                             "https://github.com/kube-nexus/kubenexus",
				"support":                                "KubeNexus",
				"operators.operatorframework.io/builder": "hack/bundle",
			},
		},
		Spec: operatorsv1alpha1.ClusterServiceVersionSpec{
			DisplayName:    "KubeNexus",
			Description:    csvDescription,
			Version:        version.OperatorVersion{Version: semver.MustParse(bundleVersion)},
			Maturity:       "alpha",
			MinKubeVersion: "1.35.0", // the oldest kube-apiserver make test-skew runs (README: Supported Kubernetes versions)
			Keywords:       []string{"scheduler", "gang scheduling", "batch", "gpu", "spark", "pytorch", "ray"},
			Provider:       operatorsv1alpha1.AppLink{Name: "KubeNexus"},
			Maintainers:    []operatorsv1alpha1.Maintainer{{Name: "KubeNexus maintainers", Email: "maintainers@kubenexus.io"}},
			Links:          []operatorsv1alpha1.AppLink{{Name: "Source", URL: "https://github.com/kube-nexus/kubenexus"}},
			Icon:           []operatorsv1alpha1.Icon{{Data: base64.StdEncoding.EncodeToString([]byte(iconSVG)), MediaType: "image/svg+xml"}},
			InstallModes: []operatorsv1alpha1.InstallMode{
				// The pod webhook's namespaces are the OperatorGroup's targets (see
				// webhookDefinitions): never every namespace, never the operator's own.
				{Type: operatorsv1alpha1.InstallModeTypeOwnNamespace, Supported: false},
				{Type: operatorsv1alpha1.InstallModeTypeSingleNamespace, Supported: true},
				{Type: operatorsv1alpha1.InstallModeTypeMultiNamespace, Supported: true},
				{Type: operatorsv1alpha1.InstallModeTypeAllNamespaces, Supported: false},
			},
			CustomResourceDefinitions: operatorsv1alpha1.CustomResourceDefinitions{Owned: owned},
			InstallStrategy: operatorsv1alpha1.NamedInstallStrategy{
				StrategyName: operatorsv1alpha1.InstallStrategyNameDeployment,
				StrategySpec: operatorsv1alpha1.StrategyDetailsDeployment{
					ClusterPermissions: []operatorsv1alpha1.StrategyDeploymentPermissions{
						{ServiceAccountName: "kubenexus-manager", Rules: clusterRules},
						{ServiceAccountName: "kubenexus-scheduler", Rules: schedulerRules},
					},
					Permissions:     []operatorsv1alpha1.StrategyDeploymentPermissions{{ServiceAccountName: "kubenexus-manager", Rules: nsRules}},
					DeploymentSpecs: []operatorsv1alpha1.StrategyDeploymentSpec{{Name: dep.Name, Label: dep.Labels, Spec: dep.Spec}},
				},
			},
			WebhookDefinitions: hooks,
			RelatedImages: []operatorsv1alpha1.RelatedImage{
				{Name: "manager", Image: managerImage},
				{Name: "scheduler", Image: schedImage},
			},
		},
	}
	if err := writeYAML(filepath.Join(out, "manifests", pkgName+".clusterserviceversion.yaml"), csv); err != nil {
		return err
	}
	annotations := map[string]map[string]string{"annotations": {
		"operators.operatorframework.io.bundle.mediatype.v1":       "registry+v1",
		"operators.operatorframework.io.bundle.manifests.v1":       "manifests/",
		"operators.operatorframework.io.bundle.metadata.v1":        "metadata/",
		"operators.operatorframework.io.bundle.package.v1":         pkgName,
		"operators.operatorframework.io.bundle.channels.v1":        channel,
		"operators.operatorframework.io.bundle.channel.default.v1": channel,
	}}
	return writeYAML(filepath.Join(out, "metadata", "annotations.yaml"), annotations)
}

// managerDeployment is config/'s manager Deployment, with OLM issuing the webhook
// certificate instead of the manager's rotator.
func managerDeployment(root string) (*appsv1.Deployment, error) {
	ds, err := docs(root, "config/manager/manager.yaml")
	if err != nil {
		return nil, err
	}
	for _, d := range ds {
		var dep appsv1.Deployment
		if err := yaml.Unmarshal(d, &dep); err != nil {
			return nil, err
		}
		if dep.Kind != "Deployment" {
			continue
		}
		pod := &dep.Spec.Template.Spec
		c := &pod.Containers[0]
		c.Image = managerImage
		for i, a := range c.Args {
			if strings.HasPrefix(a, "--scheduler-image=") {
				c.Args[i] = "--scheduler-image=" + schedImage
			}
			if strings.HasPrefix(a, "--leader-election-namespace=") {
				c.Args[i] = "" // the manager's own namespace (POD_NAMESPACE)
			}
		}
		c.Args = slices.DeleteFunc(append(c.Args, "--cert-rotation=false", "--webhook-cert-dir="+olmCertDir), func(s string) bool { return s == "" })
		pod.Volumes = slices.DeleteFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == "webhook-cert" })
		c.VolumeMounts = slices.DeleteFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == "webhook-cert" })
		return &dep, nil
	}
	return nil, fmt.Errorf("config/manager/manager.yaml: no Deployment")
}

// webhookDefinitions are config/'s webhooks for OLM. OLM sets namespaceSelectors
// itself, from the OperatorGroup's target namespaces, and has no matchConditions:
// the pod webhook becomes config/'s opted-in entry alone (its failure policy
// included), scoped by the install modes to the target namespaces.
func webhookDefinitions(root string) ([]operatorsv1alpha1.WebhookDescription, error) {
	var out []operatorsv1alpha1.WebhookDescription
	for _, rel := range []string{"config/webhook/manifests.yaml", "config/webhook/pod_webhook.yaml"} {
		ds, err := docs(root, rel)
		if err != nil {
			return nil, err
		}
		for _, d := range ds {
			var kind struct{ Kind string }
			if err := yaml.Unmarshal(d, &kind); err != nil {
				return nil, err
			}
			switch kind.Kind {
			case "ValidatingWebhookConfiguration":
				var cfg admissionregv1.ValidatingWebhookConfiguration
				if err := yaml.Unmarshal(d, &cfg); err != nil {
					return nil, err
				}
				for _, w := range cfg.Webhooks {
					out = append(out, describe(operatorsv1alpha1.ValidatingAdmissionWebhook, w.Name, w.ClientConfig, w.Rules, w.FailurePolicy, w.SideEffects, w.TimeoutSeconds, w.AdmissionReviewVersions, nil))
				}
			case "MutatingWebhookConfiguration":
				var cfg admissionregv1.MutatingWebhookConfiguration
				if err := yaml.Unmarshal(d, &cfg); err != nil {
					return nil, err
				}
				w := cfg.Webhooks[0]
				out = append(out, describe(operatorsv1alpha1.MutatingAdmissionWebhook, "pods.scheduling.kubenexus.io", w.ClientConfig, w.Rules,
					w.FailurePolicy, w.SideEffects, w.TimeoutSeconds, w.AdmissionReviewVersions, w.ReinvocationPolicy))
			}
		}
	}
	return out, nil
}

func describe(typ operatorsv1alpha1.WebhookAdmissionType, name string, cc admissionregv1.WebhookClientConfig, rules []admissionregv1.RuleWithOperations,
	fp *admissionregv1.FailurePolicyType, se *admissionregv1.SideEffectClass, timeout *int32, versions []string, reinvoke *admissionregv1.ReinvocationPolicyType,
) operatorsv1alpha1.WebhookDescription {
	return operatorsv1alpha1.WebhookDescription{
		GenerateName: name, Type: typ, DeploymentName: "kubenexus-manager",
		ContainerPort: 443, TargetPort: ptr.To(intstr.FromInt32(9443)),
		Rules: rules, FailurePolicy: fp, SideEffects: se, TimeoutSeconds: timeout,
		AdmissionReviewVersions: versions, ReinvocationPolicy: reinvoke, WebhookPath: cc.Service.Path,
	}
}

// almExamples are the samples of config/samples, one per kind, as OLM shows them.
func almExamples(root string) (string, error) {
	files, _ := filepath.Glob(filepath.Join(root, "config", "samples", "scheduling_v1alpha1_*.yaml"))
	sort.Strings(files)
	seen := map[string]bool{}
	var objs []map[string]any
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		var m map[string]any
		if err := yaml.Unmarshal(data, &m); err != nil {
			return "", err
		}
		if k := fmt.Sprint(m["kind"]); !seen[k] {
			seen[k] = true
			objs = append(objs, m)
		}
	}
	b, err := json.MarshalIndent(objs, "", "  ")
	return string(b), err
}

func writeYAML(path string, v any) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte("# Generated by hack/bundle from config/. DO NOT EDIT.\n"), b...), 0o644)
}

func displayName(kind string) string {
	var b strings.Builder
	for i, r := range kind {
		if i > 0 && r >= 'A' && r <= 'Z' && (kind[i-1] < 'A' || kind[i-1] > 'Z') {
			b.WriteRune(' ')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func firstSentence(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if i := strings.Index(s, ". "); i > 0 {
		return s[:i+1]
	}
	return s
}

// ownedCRDs copies config/'s CRDs into the bundle's manifests and describes them
// for the CSV.
func ownedCRDs(root, out string) ([]operatorsv1alpha1.CRDDescription, error) {
	crdFiles, _ := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
	var owned []operatorsv1alpha1.CRDDescription
	for _, f := range crdFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &crd); err != nil {
			return nil, err
		}
		v := crd.Spec.Versions[0]
		owned = append(owned, operatorsv1alpha1.CRDDescription{
			Name: crd.Name, Version: v.Name, Kind: crd.Spec.Names.Kind,
			DisplayName: displayName(crd.Spec.Names.Kind),
			Description: firstSentence(v.Schema.OpenAPIV3Schema.Description),
		})
		if err := os.WriteFile(filepath.Join(out, "manifests", crd.Spec.Group+"_"+crd.Spec.Names.Plural+".yaml"), data, 0o644); err != nil {
			return nil, err
		}
	}
	sort.Slice(owned, func(i, j int) bool { return owned[i].Name < owned[j].Name })
	return owned, nil
}

// permissions are the CSV's rules. The manager's ClusterRole and Role become its
// permissions; the scheduler's ServiceAccount gets, as rules (OLM grants rules, not
// role references), what the chart binds: its own ClusterRole, kube-scheduler's
// bootstrap roles, and the API server's client CA for delegated authentication.
func permissions(root string) (clusterRules, nsRules, schedulerRules []rbacv1.PolicyRule, err error) {
	managerRoles, err := roles(root, "config/rbac/role.yaml")
	if err != nil {
		return nil, nil, nil, err
	}
	for _, r := range managerRoles {
		switch r.Kind {
		case "ClusterRole":
			clusterRules = r.Rules
		case "Role":
			nsRules = r.Rules
		}
	}
	schedulerRules = []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"},
		ResourceNames: []string{"extension-apiserver-authentication"},
	}}
	for _, f := range []string{"config/rbac/scheduler/role.yaml", "config/rbac/scheduler/kube_scheduler_role.yaml", "config/rbac/scheduler/bootstrap_roles.yaml"} {
		rs, err := roles(root, f)
		if err != nil {
			return nil, nil, nil, err
		}
		for _, r := range rs {
			// kubenexus-kube-scheduler stands for system:kube-scheduler (without the
			// default scheduler's lease).
			if r.Name == "system:kube-scheduler" {
				continue
			}
			schedulerRules = append(schedulerRules, r.Rules...)
		}
	}
	return clusterRules, nsRules, schedulerRules, nil
}
