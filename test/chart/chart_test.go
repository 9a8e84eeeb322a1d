// Package chart_test renders charts/kubenexus with the Helm SDK across a matrix of
// values and checks what a cluster admin reviewing it would check: it lints, every
// pod passes the restricted Pod Security profile, the RBAC is least-privilege, the
// CRDs are config/'s, and values the schema forbids are refused.
package chart_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/yaml"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/controllers/chartconfig"
	"github.com/kube-nexus/kubenexus/controllers/kubenexusconfig/render"
	"github.com/kube-nexus/kubenexus/test/util/testenv"

	schedconfig "github.com/kube-nexus/kubenexus/scheduler/apis/config"
)

const releaseNS = "kubenexus-system"

var chartDir = filepath.Join(testenv.RepoRoot(), "charts", "kubenexus")

// object is one rendered manifest.
type object struct {
	file string
	raw  []byte
	meta struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Metadata   metav1.ObjectMeta `json:"metadata"`
	}
}

func (o object) id() string { return o.meta.Kind + "/" + o.meta.Metadata.Name }

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// renderChart renders the chart as `helm template` would, schema validation included,
// for a cluster that serves apiVersions besides the built-in ones (helm template's
// --api-versions).
func renderChart(c *chart.Chart, values map[string]any, apiVersions ...string) ([]object, error) {
	own, err := clone(values)
	if err != nil {
		return nil, err
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.APIVersions = append(caps.APIVersions, apiVersions...)
	vals, err := chartutil.ToRenderValues(c, own, chartutil.ReleaseOptions{Name: "kubenexus", Namespace: releaseNS, IsInstall: true}, caps)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(c, vals)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []object
	sep := regexp.MustCompile(`(?m)^---\s*$`)
	for _, n := range names {
		if strings.HasSuffix(n, "NOTES.txt") {
			continue
		}
		for _, doc := range sep.Split(files[n], -1) {
			if strings.TrimSpace(doc) == "" || isComment(doc) {
				continue
			}
			o := object{file: n, raw: []byte(doc)}
			if err := yaml.Unmarshal(o.raw, &o.meta); err != nil {
				return nil, err
			}
			if o.meta.Kind == "" {
				return nil, &parseError{n, doc}
			}
			out = append(out, o)
		}
	}
	return out, nil
}

// clone deep-copies values: Helm merges its defaults into the map it is given.
func clone(values map[string]any) (map[string]any, error) {
	raw, err := json.Marshal(values)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	return out, json.Unmarshal(raw, &out)
}

type parseError struct{ file, doc string }

func (e *parseError) Error() string { return e.file + ": document without kind:\n" + e.doc }

func isComment(doc string) bool {
	for _, l := range strings.Split(doc, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

// matrix is the values combinations every check runs on.
var matrix = map[string]map[string]any{
	"defaults":        {},
	"manager HA":      {"manager": map[string]any{"replicas": 3}},
	"out-of-cluster":  {"manager": map[string]any{"enabled": false}, "webhook": map[string]any{"url": "https://127.0.0.1:9443", "caBundle": "Y2E="}},
	"no webhooks":     {"webhook": map[string]any{"enabled": false}},
	"CRDs elsewhere":  {"crds": map[string]any{"install": false}},
	"no default":      {"config": map[string]any{"create": false}},
	"service monitor": {"metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true, "interval": "15s"}}},
	"service monitor, cert-manager": {"metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true}},
		"webhook": map[string]any{"certManager": map[string]any{"enabled": true}}},
	"pinned images":  {"manager": map[string]any{"image": map[string]any{"repository": "registry.example.com/kn/manager", "tag": "v9.9.9", "pullPolicy": "Always"}}, "scheduler": map[string]any{"image": map[string]any{"repository": "registry.example.com/kn/scheduler", "tag": "v9.9.9"}}},
	"HA scheduler":   {"config": map[string]any{"schedulerReplicas": 3, "schedulerName": "gpu-scheduler", "defaultTier": "gold", "autoGang": []any{"spark", "job"}}},
	"tier admins":    {"tenantTierPolicy": map[string]any{"subjects": []any{map[string]any{"kind": "Group", "name": "platform-admins", "apiGroup": "rbac.authorization.k8s.io"}}}},
	"no tier policy": {"tenantTierPolicy": map[string]any{"enabled": false}},
	// The image references themselves: TestImageReferences.
	"mirror, pinned digest": {"imageRegistry": "mirror.example.com:5000/ghcr", "manager": map[string]any{"image": map[string]any{
		"digest": "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}}},
	"placement": {
		"manager": map[string]any{"nodeSelector": map[string]any{"node-role.kubernetes.io/control-plane": ""}, "tolerations": []any{map[string]any{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule", "operator": "Exists"}}, "resources": map[string]any{"requests": map[string]any{"cpu": "1"}},
			"affinity":          map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "kubernetes.io/arch", "operator": "In", "values": []any{"arm64"}}}}}}}},
			"priorityClassName": "system-cluster-critical"},
		"scheduler": map[string]any{"nodeSelector": map[string]any{"pool": "system"}, "tolerations": []any{map[string]any{"key": "dedicated", "value": "system", "effect": "NoSchedule", "operator": "Equal"}},
			"affinity":          map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "kubernetes.io/arch", "operator": "In", "values": []any{"arm64"}}}}}}}},
			"priorityClassName": "system-cluster-critical"},
		"imagePullSecrets": []any{map[string]any{"name": "regcred"}},
		"config":           map[string]any{"schedulerReplicas": 2},
	},
	"only CRDs":    {"manager": map[string]any{"enabled": false}, "webhook": map[string]any{"enabled": false}, "config": map[string]any{"create": false}},
	"cert-manager": {"webhook": map[string]any{"certManager": map[string]any{"enabled": true}}},
	"cert-manager with a ClusterIssuer": {"webhook": map[string]any{"certManager": map[string]any{"enabled": true,
		"issuerRef": map[string]any{"name": "corp-ca", "kind": "ClusterIssuer"}, "duration": "720h", "renewBefore": "240h"}}},
	"network policy": {"webhook": map[string]any{"networkPolicy": map[string]any{"enabled": true,
		"from": []any{map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.0/24"}}, map[string]any{"ipBlock": map[string]any{"cidr": "192.168.10.5/32"}}}}}},
	"network policy, any source": {"webhook": map[string]any{"networkPolicy": map[string]any{"enabled": true}}},
	"kueue admission check":      {"kueue": map[string]any{"admissionCheck": map[string]any{"enabled": true, "name": "gpu-placement"}}},
	"multikueue dispatcher":      {"kueue": map[string]any{"multiKueue": map[string]any{"dispatcher": map[string]any{"enabled": true}, "kueueNamespace": "kueue"}}},
	"own scope": {"config": map[string]any{"schedulerName": "gpu-scheduler", "namespaceSelector": map[string]any{
		"matchLabels": map[string]any{"team": "ml", "kubenexus.io/enabled": nil},
		"matchExpressions": []any{
			map[string]any{"key": "env", "operator": "NotIn", "values": []any{"dev", "ci"}},
			map[string]any{"key": "gpu-quota", "operator": "Exists"},
			map[string]any{"key": "legacy", "operator": "DoesNotExist"},
		}}}},
	"every namespace": {"config": map[string]any{"namespaceSelector": map[string]any{"matchLabels": nil}}},
}

// certManager reports whether values turn on cert-manager.
func certManager(values map[string]any) bool {
	return get(values, "webhook", "certManager", "enabled") == true
}

func TestLint(t *testing.T) {
	for name, values := range matrix {
		own, err := clone(values)
		if err != nil {
			t.Fatal(err)
		}
		linter := lint.All(chartDir, own, releaseNS, false)
		for _, m := range linter.Messages {
			if m.Severity >= support.WarningSev {
				t.Errorf("%s: helm lint: %s", name, m.Error())
			}
		}
	}
}

func TestRenderMatrix(t *testing.T) {
	c := loadChart(t)
	for name, values := range matrix {
		t.Run(name, func(t *testing.T) {
			objs, err := renderChart(c, values)
			if err != nil {
				t.Fatal(err)
			}
			kinds := map[string]int{}
			for _, o := range objs {
				kinds[o.meta.Kind]++
			}
			want := func(kind string, n int) {
				t.Helper()
				if kinds[kind] != n {
					t.Errorf("%d %s, want %d (all: %v)", kinds[kind], kind, n, kinds)
				}
			}
			managerOn := get(values, "manager", "enabled") != false
			webhookOn := get(values, "webhook", "enabled") != false
			want("CustomResourceDefinition", map[bool]int{true: 4, false: 0}[get(values, "crds", "install") != false])
			want("Deployment", map[bool]int{true: 1, false: 0}[managerOn])
			want("ValidatingWebhookConfiguration", map[bool]int{true: 1, false: 0}[webhookOn])
			want("MutatingWebhookConfiguration", map[bool]int{true: 1, false: 0}[webhookOn])
			// The KubeNexusConfig comes in a ConfigMap the manager applies (chartconfig):
			// Helm v4 would create it before the manager that validates it runs.
			want("KubeNexusConfig", 0)
			configs := 0
			for _, o := range objs {
				if o.id() == "ConfigMap/"+chartconfig.ConfigMapName {
					configs++
					checkChartConfig(t, o, objs, values)
				}
			}
			if want := map[bool]int{true: 1, false: 0}[get(values, "config", "create") != false]; configs != want {
				t.Errorf("%d ConfigMaps %s, want %d", configs, chartconfig.ConfigMapName, want)
			}
			// One for the scheduler, one for the manager when it runs in the cluster.
			if get(values, "metrics", "serviceMonitor", "enabled") == true {
				want("ServiceMonitor", map[bool]int{true: 2, false: 1}[managerOn])
				checkServiceMonitors(t, objs, values)
			} else {
				want("ServiceMonitor", 0)
			}
			manyManagers := false
			if r, ok := get(values, "manager", "replicas").(int); ok && r > 1 {
				manyManagers = true
			}
			want("PodDisruptionBudget", map[bool]int{true: 1, false: 0}[managerOn && manyManagers])
			want("NetworkPolicy", map[bool]int{true: 1, false: 0}[managerOn && webhookOn && get(values, "webhook", "networkPolicy", "enabled") == true])
			want("AdmissionCheck", map[bool]int{true: 1, false: 0}[get(values, "kueue", "admissionCheck", "enabled") == true])
			// The webhook certificate: the manager's rotator fills an empty Secret, or
			// cert-manager issues it (with a self-signed Issuer unless one is named),
			// and the scheduler's serving certificate too.
			want("Secret", map[bool]int{true: 1, false: 0}[managerOn && !certManager(values)])
			want("Certificate", map[bool]int{true: 1, false: 0}[managerOn && certManager(values)]+map[bool]int{true: 1, false: 0}[certManager(values)])
			want("Issuer", map[bool]int{true: 1, false: 0}[certManager(values) && get(values, "webhook", "certManager", "issuerRef", "name") == nil])
			if certManager(values) {
				checkCertificate(t, objs, values)
			}
			// Who may set a tenant tier: the policy, its binding and the tier admins'
			// ClusterRole, bound to the subjects named.
			tierPolicy := get(values, "tenantTierPolicy", "enabled") != false
			tierAdmins := tierPolicy && get(values, "tenantTierPolicy", "subjects") != nil
			want("ValidatingAdmissionPolicy", map[bool]int{true: 1, false: 0}[tierPolicy])
			want("ValidatingAdmissionPolicyBinding", map[bool]int{true: 1, false: 0}[tierPolicy])
			// The manager's, the scheduler's (KubeNexus's and kube-scheduler's less
			// the default scheduler's lease), the metrics reader's and kubectl
			// kubenexus' two (cluster-wide and one namespace's), always; the tier
			// admins' with the policy.
			want("ClusterRole", 6+map[bool]int{true: 1, false: 0}[tierPolicy])
			// The manager's and the scheduler's identities and bindings, always (the
			// manager cannot grant roles).
			want("ServiceAccount", 2)
			want("ClusterRoleBinding", 4+map[bool]int{true: 1, false: 0}[tierAdmins])
			checkSchedulerIdentity(t, objs)

			for _, o := range objs {
				ns := o.meta.Metadata.Namespace
				switch {
				case ns == "kube-system" && o.id() == "RoleBinding/kubenexus-scheduler-authentication-reader":
					continue // outside the release namespace: kube-scheduler's reader
				case strings.HasSuffix(o.id(), "/kubenexus-multikueue-dispatcher") && ns == get(values, "kueue", "multiKueue", "kueueNamespace"):
					continue // Kueue's namespace: TestMultiKueueDispatcher
				}
				if ns != "" && ns != releaseNS {
					t.Errorf("%s in namespace %q, want the release namespace", o.id(), ns)
				}
				switch o.meta.Kind {
				case "Role":
					// Secrets are read and written only by the manager's certificate
					// rotator: with cert-manager the manager has no rule on them.
					if o.meta.Metadata.Name == "kubenexus-manager" {
						var role rbacv1.Role
						if err := yaml.Unmarshal(o.raw, &role); err != nil {
							t.Fatal(err)
						}
						secrets := slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, "secrets") })
						if want := !certManager(values); secrets != want {
							t.Errorf("Role kubenexus-manager has a rule on Secrets: %v, want %v (cert-manager: %v)", secrets, want, certManager(values))
						}
						// It may write its certificate's Secret and no other (Helm keeps
						// its releases in Secrets of this namespace).
						for _, r := range role.Rules {
							if slices.Contains(r.Resources, "secrets") && slices.ContainsFunc(r.Verbs, func(v string) bool { return v != "list" && v != "watch" }) &&
								!slices.Equal(r.ResourceNames, []string{"kubenexus-webhook-server-cert"}) {
								t.Errorf("Role kubenexus-manager may %v Secrets %v, want only kubenexus-webhook-server-cert", r.Verbs, r.ResourceNames)
							}
						}
					}
				case "Deployment":
					checkDeployment(t, o, values)
				case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration":
					checkWebhooks(t, o, values)
				case "NetworkPolicy":
					checkNetworkPolicy(t, o, objs, values)
				case "AdmissionCheck":
					// The controller the manager runs, under the name ClusterQueues use.
					var ac struct {
						Spec struct{ ControllerName string } `json:"spec"`
					}
					if err := yaml.Unmarshal(o.raw, &ac); err != nil || ac.Spec.ControllerName != "kubenexus.io/placement-feasibility" || o.meta.Metadata.Name != get(values, "kueue", "admissionCheck", "name") {
						t.Errorf("AdmissionCheck %s: controllerName %q (%v)", o.meta.Metadata.Name, ac.Spec.ControllerName, err)
					}
				}
			}
			auditRBAC(t, objs)
		})
	}
}

func get(m map[string]any, path ...string) any {
	v, _, _ := unstructured.NestedFieldNoCopy(m, path...)
	return v
}

func checkDeployment(t *testing.T, o object, values map[string]any) {
	t.Helper()
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(o.raw, &d); err != nil {
		t.Fatalf("%s: %v", o.id(), err)
	}
	restricted(t, o.id(), d.Spec.Template)
	c := d.Spec.Template.Spec.Containers[0]
	wantImage := "ghcr.io/kube-nexus/kubenexus-manager:v0.1.0"
	if repo, ok := get(values, "manager", "image", "repository").(string); ok {
		wantImage = repo + ":" + get(values, "manager", "image", "tag").(string)
	}
	if get(values, "imageRegistry") == nil && c.Image != wantImage {
		t.Errorf("manager image %q, want %q", c.Image, wantImage)
	}
	if r, ok := get(values, "manager", "replicas").(int); ok && *d.Spec.Replicas != int32(r) {
		t.Errorf("replicas %d, want %d", *d.Spec.Replicas, r)
	}
	if !slices.Contains(c.Args, "--leader-election-namespace="+releaseNS) || !slices.Contains(c.Args, "--webhook-service=kubenexus-webhook-service") {
		t.Errorf("manager args %v", c.Args)
	}
	if want := fmt.Sprintf("--cert-rotation=%t", !certManager(values)); !slices.Contains(c.Args, want) {
		t.Errorf("manager args %v, want %s", c.Args, want)
	}
	checkPodPlacement(t, o.id(), d.Spec.Template.Spec, values, "manager")
	// More than one replica: the replicas prefer different nodes, unless the values
	// give an anti-affinity of their own.
	r, _ := get(values, "manager", "replicas").(int)
	aff := d.Spec.Template.Spec.Affinity
	spread := aff != nil && aff.PodAntiAffinity != nil && len(aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 1 &&
		aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.TopologyKey == corev1.LabelHostname &&
		labels.SelectorFromSet(aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.LabelSelector.MatchLabels).Matches(labels.Set(d.Spec.Template.Labels))
	if own := get(values, "manager", "affinity", "podAntiAffinity"); own == nil && spread != (r > 1) {
		t.Errorf("manager replicas %d: pod anti-affinity over hostnames %v, want %v (%+v)", r, spread, r > 1, aff)
	}
}

// checkServiceMonitors: each scrapes a Service that exists (the manager's from the
// chart, the scheduler's as the operator renders it) on a port of that name, over
// HTTPS with a bearer token, and the metrics reader role grants /metrics.
func checkServiceMonitors(t *testing.T, objs []object, values map[string]any) {
	t.Helper()
	knc := &v1alpha1.KubeNexusConfig{}
	knc.Name, knc.UID = v1alpha1.DefaultConfigName, "x"
	rendered, err := render.Render(knc, render.Options{Namespace: releaseNS, DefaultImage: "kubenexus-scheduler:test"})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(rendered.Service)
	var schedulerSvc corev1.Service
	if err := json.Unmarshal(raw, &schedulerSvc); err != nil {
		t.Fatal(err)
	}
	services := []corev1.Service{schedulerSvc}
	for _, o := range objs {
		if o.meta.Kind == "Service" {
			var svc corev1.Service
			if err := yaml.Unmarshal(o.raw, &svc); err != nil {
				t.Fatal(err)
			}
			services = append(services, svc)
		}
	}
	for _, o := range objs {
		if o.meta.Kind != "ServiceMonitor" {
			continue
		}
		var sm struct {
			Spec struct {
				Selector  metav1.LabelSelector
				Endpoints []struct {
					Port, Scheme, BearerTokenFile string
					TLSConfig                     struct {
						InsecureSkipVerify bool
						ServerName         string
						CA                 struct {
							Secret struct{ Name, Key string }
						}
					} `json:"tlsConfig"`
				}
			}
		}
		if err := yaml.Unmarshal(o.raw, &sm); err != nil {
			t.Fatal(err)
		}
		sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
		if err != nil || len(sm.Spec.Endpoints) != 1 {
			t.Fatalf("%s: selector %v (%v), %d endpoints", o.id(), sm.Spec.Selector, err, len(sm.Spec.Endpoints))
		}
		ep := sm.Spec.Endpoints[0]
		matched := 0
		for _, svc := range services {
			if !sel.Matches(labels.Set(svc.Labels)) {
				continue
			}
			matched++
			if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == ep.Port }) {
				t.Errorf("%s: Service %s has no port %q", o.id(), svc.Name, ep.Port)
			}
		}
		if matched != 1 || ep.Scheme != "https" || ep.BearerTokenFile == "" {
			t.Errorf("%s: matches %d Services, scheme %q, token %q; want one, https, a bearer token", o.id(), matched, ep.Scheme, ep.BearerTokenFile)
		}
		// With cert-manager both endpoints are verified: the CA of the
		// Certificate's Secret, for a name the Certificate is issued for, which the
		// component serves (the manager: --metrics-cert-dir where that Secret is
		// mounted; the scheduler: checkChartConfig).
		tc := ep.TLSConfig
		if o.id() == "ServiceMonitor/kubenexus-scheduler" && certManager(values) {
			cert := certificate(t, objs, "kubenexus-scheduler-serving-cert")
			if tc.InsecureSkipVerify || tc.CA.Secret.Name != cert.SecretName || tc.CA.Secret.Key != "ca.crt" ||
				!slices.Contains(cert.DNSNames, tc.ServerName) || !strings.HasPrefix(tc.ServerName, render.MetricsServiceName+".") {
				t.Errorf("%s: tlsConfig %+v, want the CA (ca.crt) of Secret %s and the metrics Service's name among %v", o.id(), tc, cert.SecretName, cert.DNSNames)
			}
		} else if o.id() == "ServiceMonitor/kubenexus-manager" && certManager(values) {
			cert, dep := certificate(t, objs, "kubenexus-webhook-cert"), deployment(t, objs, "kubenexus-manager")
			if tc.InsecureSkipVerify || tc.CA.Secret.Name != cert.SecretName || tc.CA.Secret.Key != "ca.crt" || !slices.Contains(cert.DNSNames, tc.ServerName) {
				t.Errorf("%s: tlsConfig %+v, want the CA (ca.crt) of Secret %s and a server name among %v", o.id(), tc, cert.SecretName, cert.DNSNames)
			}
			mounted := slices.ContainsFunc(dep.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
				return v.Secret != nil && v.Secret.SecretName == cert.SecretName && slices.ContainsFunc(dep.Spec.Template.Spec.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool {
					return m.Name == v.Name && slices.Contains(dep.Spec.Template.Spec.Containers[0].Args, "--metrics-cert-dir="+m.MountPath)
				})
			})
			if !mounted {
				t.Errorf("the manager does not serve metrics with the certificate's Secret %s (args %v)", cert.SecretName, dep.Spec.Template.Spec.Containers[0].Args)
			}
		} else if !tc.InsecureSkipVerify {
			t.Errorf("%s: tlsConfig %+v: a self-signed endpoint cannot be verified", o.id(), tc)
		}
	}
	for _, o := range objs {
		if o.id() == "ClusterRole/kubenexus-metrics-reader" {
			var role rbacv1.ClusterRole
			if err := yaml.Unmarshal(o.raw, &role); err != nil {
				t.Fatal(err)
			}
			if len(role.Rules) != 1 || !slices.Equal(role.Rules[0].NonResourceURLs, []string{"/metrics"}) || !slices.Equal(role.Rules[0].Verbs, []string{"get"}) {
				t.Errorf("ClusterRole kubenexus-metrics-reader: rules %+v, want get on /metrics only", role.Rules)
			}
		}
	}
}

// checkPodPlacement: the pod spec has the pull secrets, and the node selector,
// tolerations, affinity and priority class of values' component (manager or
// scheduler), compared by their JSON form.
func checkPodPlacement(t *testing.T, what string, pod corev1.PodSpec, values map[string]any, component string) {
	t.Helper()
	// Compared as JSON values (key order and empty lists aside).
	canonical := func(v any) any {
		raw, _ := json.Marshal(v)
		var out any
		_ = json.Unmarshal(raw, &out)
		if l, ok := out.([]any); ok && len(l) == 0 {
			return nil
		}
		return out
	}
	same := func(field string, got, want any) {
		t.Helper()
		if g, w := canonical(got), canonical(want); !reflect.DeepEqual(g, w) {
			t.Errorf("%s %s: %v, want %v from the values", what, field, g, w)
		}
	}
	orEmpty := func(v, empty any) any {
		if v == nil {
			return empty
		}
		return v
	}
	var secrets []corev1.LocalObjectReference
	for _, s := range orEmpty(get(values, "imagePullSecrets"), []any{}).([]any) {
		secrets = append(secrets, corev1.LocalObjectReference{Name: s.(map[string]any)["name"].(string)})
	}
	same("imagePullSecrets", pod.ImagePullSecrets, secrets)
	if ns, ok := get(values, component, "nodeSelector").(map[string]any); ok {
		same("nodeSelector", pod.NodeSelector, ns)
	}
	if tol, ok := get(values, component, "tolerations").([]any); ok {
		same("tolerations", pod.Tolerations, tol)
	}
	if aff, ok := get(values, component, "affinity").(map[string]any); ok {
		if pod.Affinity == nil || pod.Affinity.NodeAffinity == nil {
			t.Errorf("%s: affinity %v, want the values' node affinity", what, pod.Affinity)
		} else {
			same("affinity.nodeAffinity", pod.Affinity.NodeAffinity, aff["nodeAffinity"])
		}
	}
	// The scheduler is cluster-critical unless the values say otherwise, as
	// kube-scheduler is; the manager has no class unless given one.
	defaultClass := map[string]string{"scheduler": "system-cluster-critical"}[component]
	same("priorityClassName", pod.PriorityClassName, orEmpty(get(values, component, "priorityClassName"), defaultClass))
}

// restricted checks a pod template against the restricted Pod Security profile,
// with the evaluator the API server's admission plugin uses.
func restricted(t *testing.T, what string, tmpl corev1.PodTemplateSpec) {
	t.Helper()
	ev, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range ev.EvaluatePod(psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}, &tmpl.ObjectMeta, &tmpl.Spec) {
		if !r.Allowed {
			t.Errorf("%s violates Pod Security restricted: %s: %s", what, r.ForbiddenReason, r.ForbiddenDetail)
		}
	}
}

func checkWebhooks(t *testing.T, o object, values map[string]any) {
	t.Helper()
	var cfg struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Webhooks []struct {
			Name         string `json:"name"`
			ClientConfig struct {
				URL      string `json:"url"`
				CABundle string `json:"caBundle"`
				Service  *struct {
					Name, Namespace, Path string
				} `json:"service"`
			} `json:"clientConfig"`
			FailurePolicy     string                `json:"failurePolicy"`
			NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector"`
			TimeoutSeconds    *int32                `json:"timeoutSeconds"`
		} `json:"webhooks"`
	}
	if err := yaml.Unmarshal(o.raw, &cfg); err != nil {
		t.Fatal(err)
	}
	url, _ := get(values, "webhook", "url").(string)
	inject := cfg.Metadata.Annotations["cert-manager.io/inject-ca-from"]
	if want := map[bool]string{true: releaseNS + "/kubenexus-webhook-cert"}[certManager(values)]; inject != want {
		t.Errorf("%s: cert-manager.io/inject-ca-from %q, want %q", o.id(), inject, want)
	}
	for _, w := range cfg.Webhooks {
		// An explicit timeout on every webhook: the API server's default (10 s) is
		// also the longest it allows, and a slow webhook holds up every write it sees.
		if w.TimeoutSeconds == nil || *w.TimeoutSeconds < 1 || *w.TimeoutSeconds > 10 {
			t.Errorf("%s %s: timeoutSeconds %v, want 1–10 set explicitly", o.id(), w.Name, w.TimeoutSeconds)
		}
		cc := w.ClientConfig
		switch {
		case url != "" && (!strings.HasPrefix(cc.URL, url+"/") || cc.CABundle == "" || cc.Service != nil):
			t.Errorf("%s %s: want url under %s with a caBundle, got %+v", o.id(), w.Name, url, cc)
		case url == "" && (cc.Service == nil || cc.Service.Namespace != releaseNS || cc.Service.Name != "kubenexus-webhook-service" || cc.URL != ""):
			t.Errorf("%s %s: want the in-cluster service, got %+v", o.id(), w.Name, cc)
		}
		if o.meta.Kind == "MutatingWebhookConfiguration" {
			// The pod webhook fails closed, so it must never see the release's own
			// namespace or kube-system (checkPodScope tries it).
			excluded := false
			for _, e := range w.NamespaceSelector.MatchExpressions {
				if e.Key == corev1.LabelMetadataName && e.Operator == metav1.LabelSelectorOpNotIn &&
					slices.Contains(e.Values, releaseNS) && slices.Contains(e.Values, "kube-system") {
					excluded = true
				}
			}
			if !excluded || w.FailurePolicy != "Fail" {
				t.Errorf("%s %s: namespaceSelector %+v, failurePolicy %s", o.id(), w.Name, w.NamespaceSelector, w.FailurePolicy)
			}
		}
	}
	if o.meta.Kind == "MutatingWebhookConfiguration" {
		checkPodScope(t, o, values)
	}
}

// checkPodScope checks the pod webhook against config.namespaceSelector and
// config.schedulerName as the API server would apply it: over every combination of
// the labels the selector names (absent, each value it lists, another value), a pod
// in a selected namespace reaches exactly the opted-in entry; elsewhere a pod that
// names the scheduler reaches exactly one entry and one that does not reaches none;
// kube-system and the release namespace reach none.
func checkPodScope(t *testing.T, o object, values map[string]any) {
	t.Helper()
	var cfg admissionregistrationv1.MutatingWebhookConfiguration
	if err := yaml.UnmarshalStrict(o.raw, &cfg); err != nil {
		t.Fatalf("%s: %v", o.id(), err)
	}
	// The scope the values ask for, read as the KubeNexusConfig's selector is.
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"kubenexus.io/enabled": "true"}}
	if v, ok := get(values, "config", "namespaceSelector").(map[string]any); ok {
		selector = &metav1.LabelSelector{}
		if ml, ok := v["matchLabels"].(map[string]any); ok {
			selector.MatchLabels = map[string]string{}
			for k, val := range ml {
				if val != nil {
					selector.MatchLabels[k] = val.(string)
				}
			}
		} else if _, set := v["matchLabels"]; !set {
			selector.MatchLabels = map[string]string{"kubenexus.io/enabled": "true"} // Helm keeps the default
		}
		raw, _ := json.Marshal(v["matchExpressions"])
		if err := json.Unmarshal(raw, &selector.MatchExpressions); err != nil {
			t.Fatal(err)
		}
	}
	want, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		t.Fatal(err)
	}
	scheduler := "kubenexus-scheduler"
	if n, ok := get(values, "config", "schedulerName").(string); ok {
		scheduler = n
	}
	type hook struct {
		name  string
		scope labels.Selector
		named bool // only pods that name the scheduler
	}
	var hooks []hook
	for _, w := range cfg.Webhooks {
		sel, err := metav1.LabelSelectorAsSelector(w.NamespaceSelector)
		if err != nil {
			t.Fatalf("%s %s: %v", o.id(), w.Name, err)
		}
		h := hook{name: w.Name, scope: sel}
		for _, mc := range w.MatchConditions {
			if mc.Expression != "object.spec.schedulerName == '"+scheduler+"'" {
				t.Errorf("%s %s: matchCondition %q, want one naming %s", o.id(), w.Name, mc.Expression, scheduler)
			}
			h.named = true
		}
		hooks = append(hooks, h)
	}
	// Every label the selector names, with the values worth trying.
	options := map[string][]string{}
	add := func(key string, vals ...string) {
		options[key] = append(options[key], vals...)
	}
	for k, v := range selector.MatchLabels {
		add(k, v)
	}
	for _, e := range selector.MatchExpressions {
		add(e.Key, e.Values...)
	}
	keys := make([]string, 0, len(options))
	for k := range options {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	namespaces := []map[string]string{{}}
	for _, k := range keys {
		var next []map[string]string
		for _, ns := range namespaces {
			next = append(next, ns) // label absent
			for _, v := range append(slices.Compact(slices.Sorted(slices.Values(options[k]))), "other") {
				with := maps.Clone(ns)
				with[k] = v
				next = append(next, with)
			}
		}
		namespaces = next
	}
	for _, nsLabels := range namespaces {
		for _, name := range []string{"team-a", "kube-system", releaseNS} {
			ls := maps.Clone(nsLabels)
			ls[corev1.LabelMetadataName] = name
			system := name != "team-a"
			for _, names := range []bool{true, false} {
				var reached []string
				for _, h := range hooks {
					if h.scope.Matches(labels.Set(ls)) && (!h.named || names) {
						reached = append(reached, h.name)
					}
				}
				wantN := 0
				if !system && (want.Matches(labels.Set(ls)) || names) {
					wantN = 1
				}
				if len(reached) != wantN || (wantN == 1 && want.Matches(labels.Set(ls)) && reached[0] != "opted-in-namespaces.pods.scheduling.kubenexus.io") {
					t.Errorf("%s: a pod (naming %s: %v) in namespace %v reaches %v, want %d entry (selected: %v)",
						o.id(), scheduler, names, ls, reached, wantN, want.Matches(labels.Set(ls)))
				}
			}
		}
	}
}

// checkNetworkPolicy checks that the policy selects the manager's pods, lets
// webhook.networkPolicy.from (any source when empty) reach the webhook port and
// any source the metrics port, and nothing else.
func checkNetworkPolicy(t *testing.T, o object, objs []object, values map[string]any) {
	t.Helper()
	var np networkingv1.NetworkPolicy
	if err := yaml.UnmarshalStrict(o.raw, &np); err != nil {
		t.Fatalf("%s: %v", o.id(), err)
	}
	for _, d := range objs {
		if d.meta.Kind != "Deployment" {
			continue
		}
		var dep appsv1.Deployment
		if err := yaml.Unmarshal(d.raw, &dep); err != nil {
			t.Fatal(err)
		}
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		if err != nil || np.Spec.PodSelector.Size() == 0 || !sel.Matches(labels.Set(dep.Spec.Template.Labels)) {
			t.Errorf("%s: podSelector %v does not select %s's pods %v", o.id(), np.Spec.PodSelector, d.id(), dep.Spec.Template.Labels)
		}
	}
	if !reflect.DeepEqual(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
		t.Errorf("%s: policyTypes %v, want Ingress", o.id(), np.Spec.PolicyTypes)
	}
	from, _ := get(values, "webhook", "networkPolicy", "from").([]any)
	ports := map[int32][]networkingv1.NetworkPolicyPeer{}
	for _, r := range np.Spec.Ingress {
		if len(r.Ports) != 1 || r.Ports[0].Port == nil {
			t.Fatalf("%s: rule %+v, want one port per rule", o.id(), r)
		}
		ports[r.Ports[0].Port.IntVal] = r.From
	}
	if len(ports) != 2 || len(ports[9443]) != len(from) || len(ports[8443]) != 0 {
		t.Errorf("%s: ingress %+v, want 9443 from %v and 8443 from anywhere", o.id(), np.Spec.Ingress, from)
	}
	for i, p := range ports[9443] {
		if p.IPBlock == nil || p.IPBlock.CIDR != get(from[i].(map[string]any), "ipBlock", "cidr") {
			t.Errorf("%s: webhook peer %d is %+v, want %v", o.id(), i, p, from[i])
		}
	}
}

// checkChartConfig reads the chart's KubeNexusConfig as the manager does
// (chartconfig.Decode) and checks that the ClusterRole it names as owner is the
// release's.
func checkChartConfig(t *testing.T, o object, objs []object, values map[string]any) {
	t.Helper()
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict(o.raw, &cm); err != nil {
		t.Fatal(err)
	}
	u, err := chartconfig.Decode(&cm)
	if err != nil {
		t.Fatalf("the manager would not apply the chart's KubeNexusConfig: %v", err)
	}
	owner := cm.Annotations[chartconfig.OwnerAnnotation]
	if !slices.ContainsFunc(objs, func(o object) bool { return o.id() == "ClusterRole/"+owner }) {
		t.Errorf("ConfigMap %s: owner ClusterRole %q is not one of the release's", cm.Name, owner)
	}
	var knc v1alpha1.KubeNexusConfig
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &knc); err != nil {
		t.Fatal(err)
	}
	if errs := render.Validate(&knc.Spec, releaseNS); len(errs) > 0 {
		t.Errorf("the scheduler would reject the chart's KubeNexusConfig: %v", errs.ToAggregate())
	}
	// The scheduler the operator renders from it must be restricted too.
	knc.UID = "x"
	rendered, err := render.Render(&knc, render.Options{Namespace: releaseNS, DefaultImage: "kubenexus-scheduler:test"})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := yaml.Marshal(rendered.Deployment.Spec.Template)
	var tmpl corev1.PodTemplateSpec
	if err := yaml.Unmarshal(raw, &tmpl); err != nil {
		t.Fatal(err)
	}
	restricted(t, "scheduler Deployment rendered from the chart's KubeNexusConfig", tmpl)
	// With cert-manager the scheduler serves the certificate issued for its
	// metrics Service (the ServiceMonitor verifies it: checkServiceMonitors).
	if certManager(values) {
		cert := certificate(t, objs, "kubenexus-scheduler-serving-cert")
		c := tmpl.Spec.Containers[0]
		served := slices.ContainsFunc(tmpl.Spec.Volumes, func(v corev1.Volume) bool {
			return v.Secret != nil && v.Secret.SecretName == cert.SecretName && slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
				return m.Name == v.Name && slices.Contains(c.Args, "--tls-cert-file="+m.MountPath+"/tls.crt") &&
					slices.Contains(c.Args, "--tls-private-key-file="+m.MountPath+"/tls.key")
			})
		})
		if !served || !slices.Contains(cert.DNSNames, render.MetricsServiceName+"."+releaseNS+".svc") {
			t.Errorf("the scheduler does not serve the Certificate's Secret %s for %v (args %v)", cert.SecretName, cert.DNSNames, c.Args)
		}
	} else if knc.Spec.Scheduler.ServingCertSecretName != "" {
		t.Errorf("servingCertSecretName %q without cert-manager: no Secret would ever exist", knc.Spec.Scheduler.ServingCertSecretName)
	}
	checkPodPlacement(t, "scheduler Deployment rendered from the chart's KubeNexusConfig", tmpl.Spec, values, "scheduler")
	if n, ok := get(values, "config", "schedulerName").(string); ok && knc.Spec.Scheduler.SchedulerName != n {
		t.Errorf("schedulerName %q, want %q", knc.Spec.Scheduler.SchedulerName, n)
	}
	want, _ := get(values, "config", "autoGang").([]any)
	if fmt.Sprint(want) != fmt.Sprint(knc.Spec.Webhook.AutoGang) && (len(want) > 0 || len(knc.Spec.Webhook.AutoGang) > 0) {
		t.Errorf("spec.webhook.autoGang %v, want config.autoGang %v", knc.Spec.Webhook.AutoGang, want)
	}
}

// auditRBAC: no wildcards, no bind, escalate or impersonate, no writes to RBAC
// objects, writes to leases and webhook configurations only by name, and Secrets
// only through a namespaced Role.
func auditRBAC(t *testing.T, objs []object) {
	t.Helper()
	for _, o := range objs {
		if o.meta.Kind == "ClusterRoleBinding" || o.meta.Kind == "RoleBinding" {
			var b rbacv1.RoleBinding
			if err := yaml.Unmarshal(o.raw, &b); err != nil {
				t.Fatal(err)
			}
			if b.RoleRef.Name == "kubenexus-metrics-reader" || strings.HasPrefix(b.RoleRef.Name, "kubenexus-explain") {
				t.Errorf("%s binds %s: that is the user's to grant", o.id(), b.RoleRef.Name)
			}
		}
	}
	for _, o := range objs {
		if o.meta.Kind != "ClusterRole" && o.meta.Kind != "Role" {
			continue
		}
		var role rbacv1.ClusterRole
		if err := yaml.Unmarshal(o.raw, &role); err != nil {
			t.Fatal(err)
		}
		for _, r := range role.Rules {
			// kubectl kubenexus needs to read, and nothing else.
			if strings.HasPrefix(o.id(), "ClusterRole/kubenexus-explain") && slices.ContainsFunc(r.Verbs, func(v string) bool { return v != "get" && v != "list" }) {
				t.Errorf("%s: %+v grants more than get and list", o.id(), r)
			}
			// The tenant's variant, bound in one namespace, names only what lives in
			// a namespace, and of Namespaces only get (its own).
			if o.id() == "ClusterRole/kubenexus-explain-namespace" {
				for _, res := range r.Resources {
					switch res {
					case "pods", "podgroups", "compositepodgroups", "workloads", "rayclusters":
					case "namespaces":
						if !slices.Equal(r.Verbs, []string{"get"}) {
							t.Errorf("%s: %+v may list namespaces", o.id(), r)
						}
					default:
						t.Errorf("%s: %+v names %s, which a tenant's namespace view does not read", o.id(), r, res)
					}
				}
			}
			all := append(append(append([]string{}, r.APIGroups...), r.Resources...), r.Verbs...)
			// The one non-resource rule: get /metrics, in the role users bind to
			// their scraper (the release binds it to nothing).
			metricsReader := o.id() == "ClusterRole/kubenexus-metrics-reader" && slices.Equal(r.NonResourceURLs, []string{"/metrics"}) && slices.Equal(r.Verbs, []string{"get"}) && len(r.Resources) == 0
			if slices.Contains(all, "*") || len(r.NonResourceURLs) > 0 && !metricsReader {
				t.Errorf("%s: wildcard or non-resource rule %+v", o.id(), r)
			}
			for _, v := range r.Verbs {
				switch v {
				case "bind", "escalate", "impersonate":
					t.Errorf("%s grants %s: %+v", o.id(), v, r)
				case "create", "update", "patch", "delete", "deletecollection":
					if slices.Contains(r.APIGroups, rbacv1.GroupName) {
						t.Errorf("%s may %s RBAC objects: %+v", o.id(), v, r)
					}
				}
				switch v {
				case "update", "patch", "delete":
					for _, res := range r.Resources {
						if (res == "leases" || strings.HasSuffix(res, "webhookconfigurations")) && len(r.ResourceNames) == 0 {
							t.Errorf("%s may %s any %s", o.id(), v, res)
						}
						// Another component's lease: kubenexus-scheduler taking the
						// default scheduler's (or the manager's) leadership.
						if res == "leases" && slices.ContainsFunc(r.ResourceNames, func(n string) bool {
							return n != "kubenexus-scheduler" && n != "kubenexus-manager.scheduling.kubenexus.io"
						}) {
							t.Errorf("%s may %s the leases %v", o.id(), v, r.ResourceNames)
						}
					}
				}
			}
			if o.meta.Kind == "ClusterRole" && slices.Contains(r.Resources, "secrets") {
				t.Errorf("%s grants Secrets cluster-wide: %+v", o.id(), r)
			}
			// The manager writes the scheduler's objects in its own namespace only.
			if o.id() == "ClusterRole/kubenexus-manager" && slices.ContainsFunc(r.Verbs, func(v string) bool { return v != "get" && v != "list" && v != "watch" }) &&
				slices.ContainsFunc(r.Resources, func(res string) bool {
					return res == "configmaps" || res == "services" || res == "deployments" || res == "poddisruptionbudgets"
				}) {
				t.Errorf("%s may write %v cluster-wide: %+v", o.id(), r.Resources, r)
			}
		}
	}
}

// checkCertificate: cert-manager's Certificate covers the webhook Service, writes the
// Secret the manager mounts, and is signed by the named issuer or the chart's
// self-signed one.
func checkCertificate(t *testing.T, objs []object, values map[string]any) {
	t.Helper()
	for _, o := range objs {
		if o.meta.Kind != "Certificate" {
			continue
		}
		var cert struct {
			APIVersion string         `json:"apiVersion"`
			Kind       string         `json:"kind"`
			Metadata   map[string]any `json:"metadata"`
			Spec       struct {
				SecretName  string   `json:"secretName"`
				DNSNames    []string `json:"dnsNames"`
				Duration    string   `json:"duration"`
				RenewBefore string   `json:"renewBefore"`
				IssuerRef   struct{ Name, Kind, Group string }
				PrivateKey  struct {
					RotationPolicy string `json:"rotationPolicy"`
				} `json:"privateKey"`
			} `json:"spec"`
		}
		if err := yaml.UnmarshalStrict(o.raw, &cert); err != nil {
			t.Fatalf("%s: %v", o.id(), err)
		}
		sp := cert.Spec
		if cert.APIVersion != "cert-manager.io/v1" {
			t.Errorf("%s: apiVersion %q, want cert-manager.io/v1", o.id(), cert.APIVersion)
		}
		secret, host := "kubenexus-webhook-server-cert", "kubenexus-webhook-service."+releaseNS+".svc"
		if o.id() == "Certificate/kubenexus-scheduler-serving-cert" {
			secret, host = "kubenexus-scheduler-serving-cert", render.MetricsServiceName+"."+releaseNS+".svc"
		}
		if sp.SecretName != secret || !slices.Contains(sp.DNSNames, host) {
			t.Errorf("%s: secret %q, dnsNames %v, want %s for %s", o.id(), sp.SecretName, sp.DNSNames, secret, host)
		}
		wantIssuer := "Issuer kubenexus-selfsigned"
		if n, ok := get(values, "webhook", "certManager", "issuerRef", "name").(string); ok {
			wantIssuer = get(values, "webhook", "certManager", "issuerRef", "kind").(string) + " " + n
		}
		if got := sp.IssuerRef.Kind + " " + sp.IssuerRef.Name; got != wantIssuer || sp.IssuerRef.Group != "cert-manager.io" {
			t.Errorf("%s: issuer %s (group %q), want %s", o.id(), got, sp.IssuerRef.Group, wantIssuer)
		}
		if d, ok := get(values, "webhook", "certManager", "duration").(string); ok && sp.Duration != d {
			t.Errorf("%s: duration %q, want %q", o.id(), sp.Duration, d)
		}
		if sp.PrivateKey.RotationPolicy != "Always" {
			t.Errorf("%s: private key rotation %q, want Always", o.id(), sp.PrivateKey.RotationPolicy)
		}
	}
}

// checkSchedulerIdentity: the scheduler's ServiceAccount is bound to kube-scheduler's
// roles, its own ClusterRole and, in kube-system, the authentication reader.
func checkSchedulerIdentity(t *testing.T, objs []object) {
	t.Helper()
	want := map[string]string{
		"ClusterRoleBinding/kubenexus-scheduler-kube-scheduler":   "ClusterRole kubenexus-kube-scheduler",
		"ClusterRoleBinding/kubenexus-scheduler-volume-scheduler": "ClusterRole system:volume-scheduler",
		"ClusterRoleBinding/kubenexus-scheduler":                  "ClusterRole kubenexus-scheduler",
		"RoleBinding/kubenexus-scheduler-authentication-reader":   "Role extension-apiserver-authentication-reader",
		"ServiceAccount/kubenexus-scheduler":                      "",
	}
	wantNS := map[string]string{"RoleBinding": "kube-system", "ServiceAccount": releaseNS}
	for _, o := range objs {
		role, ok := want[o.id()]
		if !ok {
			continue
		}
		delete(want, o.id())
		if o.meta.Metadata.Namespace != wantNS[o.meta.Kind] {
			t.Errorf("%s in namespace %q, want %q", o.id(), o.meta.Metadata.Namespace, wantNS[o.meta.Kind])
		}
		if role == "" {
			continue
		}
		var b rbacv1.RoleBinding
		if err := yaml.Unmarshal(o.raw, &b); err != nil {
			t.Fatal(err)
		}
		if got := b.RoleRef.Kind + " " + b.RoleRef.Name; got != role {
			t.Errorf("%s binds %s, want %s", o.id(), got, role)
		}
		if len(b.Subjects) != 1 || b.Subjects[0].Kind != "ServiceAccount" || b.Subjects[0].Name != "kubenexus-scheduler" || b.Subjects[0].Namespace != releaseNS {
			t.Errorf("%s subjects %+v, want the scheduler's ServiceAccount in %s", o.id(), b.Subjects, releaseNS)
		}
	}
	for id := range want {
		t.Errorf("%s is missing", id)
	}
}

// The chart's CRDs are config/'s, byte for byte apart from the keep annotation.
// The chart's AdmissionCheck is written in the newest version of Kueue's API the
// cluster serves: v1beta2 from Kueue 0.15 on, v1beta1 before.
func TestAdmissionCheckFollowsKueuesAPI(t *testing.T) {
	values := map[string]any{"kueue": map[string]any{"admissionCheck": map[string]any{"enabled": true}}}
	for _, tc := range []struct {
		served []string
		want   string
	}{
		{[]string{"kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta1/AdmissionCheck"}, "kueue.x-k8s.io/v1beta1"},
		{[]string{"kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta2", "kueue.x-k8s.io/v1beta2/AdmissionCheck"}, "kueue.x-k8s.io/v1beta2"},
	} {
		objs, err := renderChart(loadChart(t), values, tc.served...)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, o := range objs {
			if o.meta.Kind == "AdmissionCheck" {
				got = append(got, o.meta.APIVersion)
			}
		}
		if len(got) != 1 || got[0] != tc.want {
			t.Errorf("serving %v: AdmissionChecks of %v, want one of %s", tc.served, got, tc.want)
		}
	}
}

// The MultiKueue dispatcher: the manager is told to run it and where Kueue keeps
// the kubeconfig Secrets, and may get Secrets there only.
func TestMultiKueueDispatcher(t *testing.T) {
	for _, on := range []bool{false, true} {
		values := map[string]any{"kueue": map[string]any{"multiKueue": map[string]any{"dispatcher": map[string]any{"enabled": on}, "kueueNamespace": "kueue"}}}
		objs, err := renderChart(loadChart(t), values)
		if err != nil {
			t.Fatal(err)
		}
		var args []string
		var rules []rbacv1.PolicyRule
		var subjects []rbacv1.Subject
		for _, o := range objs {
			switch o.id() {
			case "Deployment/kubenexus-manager":
				var d appsv1.Deployment
				if err := yaml.Unmarshal(o.raw, &d); err != nil {
					t.Fatal(err)
				}
				args = d.Spec.Template.Spec.Containers[0].Args
			case "Role/kubenexus-multikueue-dispatcher", "RoleBinding/kubenexus-multikueue-dispatcher":
				if o.meta.Metadata.Namespace != "kueue" {
					t.Errorf("%s in namespace %q, want kueue", o.id(), o.meta.Metadata.Namespace)
				}
				var b rbacv1.RoleBinding
				var r rbacv1.Role
				if err := yaml.Unmarshal(o.raw, &b); err != nil {
					t.Fatal(err)
				}
				if err := yaml.Unmarshal(o.raw, &r); err != nil {
					t.Fatal(err)
				}
				rules, subjects = append(rules, r.Rules...), append(subjects, b.Subjects...)
			}
		}
		for _, want := range []string{fmt.Sprintf("--multikueue-dispatcher=%t", on), "--kueue-namespace=kueue"} {
			if !slices.Contains(args, want) {
				t.Errorf("dispatcher %t: manager args %v lack %s", on, args, want)
			}
		}
		wantRules, wantSubjects := []rbacv1.PolicyRule(nil), []rbacv1.Subject(nil)
		if on {
			wantRules = []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}
			wantSubjects = []rbacv1.Subject{{Kind: "ServiceAccount", Name: "kubenexus-manager", Namespace: releaseNS}}
		}
		if fmt.Sprint(rules) != fmt.Sprint(wantRules) || fmt.Sprint(subjects) != fmt.Sprint(wantSubjects) {
			t.Errorf("dispatcher %t: Role rules %+v bound to %+v; want %+v bound to %+v", on, rules, subjects, wantRules, wantSubjects)
		}
	}
}

func TestCRDsMatchConfig(t *testing.T) {
	objs, err := renderChart(loadChart(t), map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, o := range objs {
		if o.meta.Kind != "CustomResourceDefinition" {
			continue
		}
		n++
		var fromChart map[string]any
		if err := yaml.Unmarshal(o.raw, &fromChart); err != nil {
			t.Fatal(err)
		}
		md := fromChart["metadata"].(map[string]any)
		if md["annotations"].(map[string]any)["helm.sh/resource-policy"] != "keep" {
			t.Errorf("%s: CRDs must survive helm uninstall", o.id())
		}
		delete(md["annotations"].(map[string]any), "helm.sh/resource-policy")
		if len(md["annotations"].(map[string]any)) == 0 {
			delete(md, "annotations")
		}
		delete(md, "labels")
		name := o.meta.Metadata.Name
		parts := strings.SplitN(name, ".", 2)
		data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "crd", "bases", parts[1]+"_"+parts[0]+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var fromConfig map[string]any
		if err := yaml.Unmarshal(data, &fromConfig); err != nil {
			t.Fatal(err)
		}
		if cm := fromConfig["metadata"].(map[string]any); cm["annotations"] != nil {
			delete(cm["annotations"].(map[string]any), "controller-gen.kubebuilder.io/version")
			if len(cm["annotations"].(map[string]any)) == 0 {
				delete(cm, "annotations")
			}
		}
		if ann, ok := md["annotations"].(map[string]any); ok {
			delete(ann, "controller-gen.kubebuilder.io/version")
			if len(ann) == 0 {
				delete(md, "annotations")
			}
		}
		if !reflect.DeepEqual(fromChart, fromConfig) {
			t.Errorf("%s differs from config/crd/bases (run make chart)", name)
		}
	}
	if n != 4 {
		t.Errorf("%d CRDs in the chart, want 4", n)
	}
}

func TestSchemaRefusesBadValues(t *testing.T) {
	c := loadChart(t)
	cases := map[string]struct {
		values map[string]any
		want   string
	}{
		"zero replicas":          {map[string]any{"manager": map[string]any{"replicas": 0}}, "/manager/replicas"},
		"plain-http webhook":     {map[string]any{"webhook": map[string]any{"url": "http://127.0.0.1:9443", "caBundle": "x"}}, "/webhook/url"},
		"unknown key":            {map[string]any{"manger": map[string]any{}}, "manger"},
		"unknown tier":           {map[string]any{"config": map[string]any{"defaultTier": "platinum"}}, "/config/defaultTier"},
		"unknown integration":    {map[string]any{"config": map[string]any{"autoGang": []any{"job", "dask"}}}, "/config/autoGang/1"},
		"url without a CA":       {map[string]any{"webhook": map[string]any{"url": "https://127.0.0.1:9443"}}, "webhook.caBundle is required"},
		"scheduler name invalid": {map[string]any{"config": map[string]any{"schedulerName": "Gpu_Scheduler"}}, "/config/schedulerName"},
		"cert-manager with a url": {map[string]any{"webhook": map[string]any{"url": "https://127.0.0.1:9443", "caBundle": "x", "certManager": map[string]any{"enabled": true}}},
			"webhook.certManager.enabled and webhook.url exclude each other"},
		"unknown issuer kind": {map[string]any{"webhook": map[string]any{"certManager": map[string]any{"enabled": true, "issuerRef": map[string]any{"name": "x", "kind": "Vault"}}}},
			"/webhook/certManager/issuerRef/kind"},
		"bad duration": {map[string]any{"webhook": map[string]any{"certManager": map[string]any{"duration": "90d"}}}, "/webhook/certManager/duration"},
		"selector operator": {map[string]any{"config": map[string]any{"namespaceSelector": map[string]any{"matchExpressions": []any{map[string]any{"key": "team", "operator": "Equals", "values": []any{"ml"}}}}}},
			"/config/namespaceSelector/matchExpressions/0"},
		"In without values": {map[string]any{"config": map[string]any{"namespaceSelector": map[string]any{"matchExpressions": []any{map[string]any{"key": "team", "operator": "In"}}}}},
			"/config/namespaceSelector/matchExpressions/0"},
		"label value not a string": {map[string]any{"config": map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubenexus.io/enabled": true}}}},
			"/config/namespaceSelector/matchLabels/kubenexus.io~1enabled"},
		"digest not sha256":      {map[string]any{"manager": map[string]any{"image": map[string]any{"digest": "latest"}}}, "/manager/image/digest"},
		"registry with a scheme": {map[string]any{"imageRegistry": "https://mirror.example.com"}, "/imageRegistry"},
		"empty network peer": {map[string]any{"webhook": map[string]any{"networkPolicy": map[string]any{"enabled": true, "from": []any{map[string]any{}}}}},
			"/webhook/networkPolicy/from/0"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := renderChart(c, tc.values)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

// The images the manager runs and deploys, as a registry mirror, a pinned digest or
// a repository without a registry name them.
func TestImageReferences(t *testing.T) {
	c := loadChart(t)
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	cases := map[string]struct {
		values             map[string]any
		manager, scheduler string
	}{
		"defaults": {map[string]any{},
			"ghcr.io/kube-nexus/kubenexus-manager:v0.1.0", "ghcr.io/kube-nexus/kubenexus-scheduler:v0.1.0"},
		"a mirror": {map[string]any{"imageRegistry": "mirror.example.com:5000"},
			"mirror.example.com:5000/kube-nexus/kubenexus-manager:v0.1.0", "mirror.example.com:5000/kube-nexus/kubenexus-scheduler:v0.1.0"},
		"a mirror with a path, pinned digest": {map[string]any{"imageRegistry": "registry.corp/ghcr-proxy/",
			"manager": map[string]any{"image": map[string]any{"digest": digest, "tag": "ignored"}}},
			"registry.corp/ghcr-proxy/kube-nexus/kubenexus-manager@" + digest, "registry.corp/ghcr-proxy/kube-nexus/kubenexus-scheduler:v0.1.0"},
		"a repository without a registry": {map[string]any{"imageRegistry": "localhost:5001",
			"manager":   map[string]any{"image": map[string]any{"repository": "kubenexus/manager", "tag": "dev"}},
			"scheduler": map[string]any{"image": map[string]any{"repository": "localhost/kubenexus-scheduler", "digest": digest}}},
			"localhost:5001/kubenexus/manager:dev", "localhost:5001/kubenexus-scheduler@" + digest},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs, err := renderChart(c, tc.values)
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(objs, func(o object) bool { return o.id() == "Deployment/kubenexus-manager" })
			if i < 0 {
				t.Fatal("no manager Deployment")
			}
			var d appsv1.Deployment
			if err := yaml.UnmarshalStrict(objs[i].raw, &d); err != nil {
				t.Fatal(err)
			}
			ctr := d.Spec.Template.Spec.Containers[0]
			if ctr.Image != tc.manager {
				t.Errorf("manager image %q, want %q", ctr.Image, tc.manager)
			}
			if want := "--scheduler-image=" + tc.scheduler; !slices.Contains(ctr.Args, want) {
				t.Errorf("manager args %v, want %s", ctr.Args, want)
			}
		})
	}
}

// The chart installs on the kube-apiserver versions make test-skew proves.
func TestKubeVersionIsTheTestedRange(t *testing.T) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ch.Metadata.KubeVersion, schedconfig.KubeVersionRange(); got != want {
		t.Errorf("Chart.yaml kubeVersion %q, want %q (scheduler/apis/config MinAPIServerMinor..MaxAPIServerMinor)", got, want)
	}
	for v, ok := range map[string]bool{"v1.34.9": false, "v1.35.0": true, "v1.37.2-eks-1": true, "v1.38.0": false} {
		if got := chartutil.IsCompatibleRange(ch.Metadata.KubeVersion, v); got != ok {
			t.Errorf("kube-apiserver %s admitted: %v, want %v", v, got, ok)
		}
	}
}

// The Grafana dashboard ships as a ConfigMap for the dashboard sidecar only when asked
// for, in the namespace and with the label the values name, holding the dashboard
// file whole.
func TestDashboardConfigMap(t *testing.T) {
	c := loadChart(t)
	objs, err := renderChart(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(objs, func(o object) bool { return o.id() == "ConfigMap/kubenexus-dashboard" }) {
		t.Error("the dashboard ConfigMap is rendered with metrics.dashboard.enabled unset")
	}
	objs, err = renderChart(c, map[string]any{"metrics": map[string]any{"dashboard": map[string]any{"enabled": true, "namespace": "monitoring"}}})
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(chartDir, "dashboards", "kubenexus.json"))
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(objs, func(o object) bool { return o.id() == "ConfigMap/kubenexus-dashboard" })
	if i < 0 {
		t.Fatal("no ConfigMap kubenexus-dashboard with metrics.dashboard.enabled")
	}
	var cm corev1.ConfigMap
	if err := yaml.Unmarshal(objs[i].raw, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Namespace != "monitoring" || cm.Labels["grafana_dashboard"] != "1" {
		t.Errorf("dashboard ConfigMap in %q with labels %v, want monitoring and grafana_dashboard=1", cm.Namespace, cm.Labels)
	}
	if got := cm.Data["kubenexus.json"]; strings.TrimSpace(got) != strings.TrimSpace(string(want)) {
		t.Errorf("the ConfigMap's kubenexus.json (%d bytes) is not dashboards/kubenexus.json (%d bytes)", len(got), len(want))
	}
	var dash struct {
		UID    string `json:"uid"`
		Panels []struct {
			Title string `json:"title"`
		} `json:"panels"`
	}
	if err := json.Unmarshal([]byte(cm.Data["kubenexus.json"]), &dash); err != nil || dash.UID != "kubenexus" || len(dash.Panels) == 0 {
		t.Errorf("dashboard: uid %q, %d panels, %v", dash.UID, len(dash.Panels), err)
	}
}

// certificate is the release's cert-manager Certificate.
func certificate(t *testing.T, objs []object, name string) (spec struct {
	SecretName string   `json:"secretName"`
	DNSNames   []string `json:"dnsNames"`
}) {
	t.Helper()
	for _, o := range objs {
		if o.id() == "Certificate/"+name {
			var c struct {
				Spec struct {
					SecretName string   `json:"secretName"`
					DNSNames   []string `json:"dnsNames"`
				} `json:"spec"`
			}
			if err := yaml.Unmarshal(o.raw, &c); err != nil {
				t.Fatal(err)
			}
			return c.Spec
		}
	}
	t.Fatalf("no Certificate %s", name)
	return spec
}

// deployment is the rendered Deployment of that name.
func deployment(t *testing.T, objs []object, name string) appsv1.Deployment {
	t.Helper()
	var d appsv1.Deployment
	for _, o := range objs {
		if o.id() == "Deployment/"+name {
			if err := yaml.Unmarshal(o.raw, &d); err != nil {
				t.Fatal(err)
			}
			return d
		}
	}
	t.Fatalf("no Deployment %s", name)
	return d
}
