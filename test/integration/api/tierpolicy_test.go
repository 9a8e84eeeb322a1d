package api_test

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/controllers"
	"github.com/kube-nexus/kubenexus/test/util/testenv"
)

// The chart's tenant-tier policy, as Helm renders it, on a real API server: a user
// who may create and label namespaces but holds no tier permission cannot make a
// namespace gold.
var _ = Describe("Tenant tier policy (the chart's ValidatingAdmissionPolicy)", func() {
	It("lets only users allowed to set a tier set, change or remove a namespace's tier label", func() {
		for _, obj := range renderTierPolicy() {
			Expect(k8sClient.Create(ctx, obj)).To(Succeed())
			DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, obj))).To(Succeed()) })
		}
		// A namespace admin: may create, read and label namespaces, nothing more.
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "namespace-admin"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"create", "get", "update", "patch"}}}}
		Expect(k8sClient.Create(ctx, role)).To(Succeed())
		bind := func(name, user, clusterRole string) {
			b := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
			Expect(k8sClient.Create(ctx, b)).To(Succeed())
		}
		bind("tenant-admin-namespaces", "tenant-admin", "namespace-admin")
		as := func(user string) client.Client {
			cfg := rest.CopyConfig(testEnv.Config)
			cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
			c, err := client.New(cfg, client.Options{Scheme: controllers.NewScheme()})
			Expect(err).NotTo(HaveOccurred())
			return c
		}
		tenantAdmin := as("tenant-admin")
		withTier := func(name, tier string) *corev1.Namespace {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
			if tier != "" {
				ns.Labels = map[string]string{v1alpha1.LabelTenantTier: tier}
			}
			return ns
		}
		// The policy is in force once the API server has loaded it (a probe admitted
		// before that is deleted, and the next one gets another name).
		Eventually(func() error {
			probe := withTier("", "gold")
			probe.GenerateName = "probe-gold-"
			err := tenantAdmin.Create(ctx, probe)
			if err == nil {
				Expect(k8sClient.Delete(ctx, probe)).To(Succeed())
				return fmt.Errorf("namespace %s admitted: the policy is not in force yet", probe.Name)
			}
			return err
		}).WithTimeout(30 * time.Second).Should(
			MatchError(ContainSubstring("the label tenant.kubenexus.io/tier set to gold: user tenant-admin may not set that tenant tier")))
		err := tenantAdmin.Create(ctx, withTier("team-web", "gold"))
		Expect(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)

		// Without a tier label it may create the namespace, and label it otherwise.
		Expect(tenantAdmin.Create(ctx, withTier("team-web", ""))).To(Succeed())
		ns := &corev1.Namespace{}
		Expect(tenantAdmin.Get(ctx, client.ObjectKey{Name: "team-web"}, ns)).To(Succeed())
		ns.Labels["owner"] = "web"
		Expect(tenantAdmin.Update(ctx, ns)).To(Succeed())
		ns.Labels[v1alpha1.LabelTenantTier] = "gold"
		Expect(tenantAdmin.Update(ctx, ns)).To(MatchError(ContainSubstring("may not set that tenant tier")))
		Expect(k8sClient.Get(ctx, client.ObjectKey{Name: "team-web"}, ns)).To(Succeed())
		Expect(ns.Labels).NotTo(HaveKey(v1alpha1.LabelTenantTier))

		// A cluster admin sets it; the namespace admin can neither change nor remove it.
		ns.Labels[v1alpha1.LabelTenantTier] = "bronze"
		Expect(k8sClient.Update(ctx, ns)).To(Succeed())
		Expect(tenantAdmin.Get(ctx, client.ObjectKey{Name: "team-web"}, ns)).To(Succeed())
		ns.Labels[v1alpha1.LabelTenantTier] = "gold"
		Expect(tenantAdmin.Update(ctx, ns)).To(MatchError(ContainSubstring("changed from bronze to gold")))
		delete(ns.Labels, v1alpha1.LabelTenantTier)
		Expect(tenantAdmin.Update(ctx, ns)).To(MatchError(ContainSubstring("removed (was bronze)")))
		// Other labels still change freely while the tier stays.
		Expect(tenantAdmin.Get(ctx, client.ObjectKey{Name: "team-web"}, ns)).To(Succeed())
		ns.Labels["owner"] = "web-2"
		Expect(tenantAdmin.Update(ctx, ns)).To(Succeed())

		// Allowed to set bronze only (resourceNames), it may create bronze namespaces
		// and no gold one.
		Expect(k8sClient.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "bronze-tier-setter"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"scheduling.kubenexus.io"}, Resources: []string{"tenanttiers"}, ResourceNames: []string{"bronze"}, Verbs: []string{"set"}}}})).To(Succeed())
		bind("tenant-admin-bronze", "tenant-admin", "bronze-tier-setter")
		// (once the RBAC authorizer's cache has the new binding)
		Eventually(func() error { return tenantAdmin.Create(ctx, withTier("team-batch", "bronze")) }).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(tenantAdmin.Create(ctx, withTier("team-ml", "gold"))).To(MatchError(ContainSubstring("may not set that tenant tier")))
		// The chart's tier admin role lets it set any tier.
		bind("tenant-admin-tiers", "tenant-admin", "kubenexus-tenant-tier-admin")
		Eventually(func() error { return tenantAdmin.Create(ctx, withTier("team-ml", "gold")) }).WithTimeout(30 * time.Second).Should(Succeed())
	})
})

// renderTierPolicy renders the chart's tenant-tier policy template with its default
// values, as helm template does.
func renderTierPolicy() []*unstructured.Unstructured {
	GinkgoHelper()
	c, err := loader.Load(filepath.Join(testenv.RepoRoot(), "charts", "kubenexus"))
	Expect(err).NotTo(HaveOccurred())
	vals, err := chartutil.ToRenderValues(c, map[string]any{}, chartutil.ReleaseOptions{Name: "kubenexus", Namespace: "kubenexus-system", IsInstall: true}, chartutil.DefaultCapabilities.Copy())
	Expect(err).NotTo(HaveOccurred())
	files, err := engine.Render(c, vals)
	Expect(err).NotTo(HaveOccurred())
	rendered, ok := files["kubenexus/templates/tenant-tier-policy.yaml"]
	Expect(ok).To(BeTrue(), "the chart has no templates/tenant-tier-policy.yaml")
	var out []*unstructured.Unstructured
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(rendered, -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		u := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal([]byte(doc), &u.Object)).To(Succeed())
		if u.GetKind() != "" {
			out = append(out, u)
		}
	}
	Expect(out).To(HaveLen(3))
	return out
}
