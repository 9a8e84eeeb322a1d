package operator_test

import (
	"context"
	"os"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/controllers/kubenexusconfig/render"
	schedconfig "github.com/kube-nexus/kubenexus/scheduler/apis/config"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/names"
	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/schedulertest"
	"github.com/kube-nexus/kubenexus/webhooks"
)

func key(name string) client.ObjectKey { return client.ObjectKey{Namespace: namespace, Name: name} }

func getKNC(name string) *v1alpha1.KubeNexusConfig {
	knc := &v1alpha1.KubeNexusConfig{}
	ExpectWithOffset(1, k8sClient.Get(suiteCtx, client.ObjectKey{Name: name}, knc)).To(Succeed())
	return knc
}

// updateKNC changes the stored KubeNexusConfig, retrying when the operator's status
// writes got there first; any other error (a refusal) is returned.
func updateKNC(name string, mutate func(*v1alpha1.KubeNexusConfig)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		knc := getKNC(name)
		mutate(knc)
		return k8sClient.Update(suiteCtx, knc)
	})
}

func condition(name, typ string) func() *metav1.Condition {
	return func() *metav1.Condition {
		return meta.FindStatusCondition(getKNC(name).Status.Conditions, typ)
	}
}

func hasReason(status metav1.ConditionStatus, reason string) OmegaMatcher {
	return And(Not(BeNil()), HaveField("Status", status), HaveField("Reason", reason))
}

// The scheduler's configuration as the operator stored it.
func storedConfig() (string, error) {
	cm := &corev1.ConfigMap{}
	if err := k8sClient.Get(suiteCtx, key(render.Name), cm); err != nil {
		return "", err
	}
	return cm.Data[render.ConfigKey], nil
}

func mustStoredConfig() string {
	cfg, err := storedConfig()
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return cfg
}

// expectTestProfileIsRendered checks that the profile the scheduler suite and the
// benchmarks run (schedulertest.KubeNexusProfile) is the one the operator rendered
// into cfg: the same plugins at the same extension points and weights, and the same
// plugin args once each plugin's defaults are applied (the test profile leaves them
// to the defaults, the operator writes them out), Coscheduling's timings (which the
// tests choose) aside.
func expectTestProfileIsRendered(cfg string) {
	GinkgoHelper()
	profileOf := func(doc string) configv1.KubeSchedulerProfile {
		c := &configv1.KubeSchedulerConfiguration{}
		Expect(yaml.UnmarshalStrict([]byte(doc), c)).To(Succeed(), doc)
		Expect(c.Profiles).To(HaveLen(1))
		return c.Profiles[0]
	}
	decoders := map[string]func(runtime.Object) (any, error){
		names.ProfileClassifier:     func(o runtime.Object) (any, error) { return schedconfig.DecodeProfileClassifierArgs(o) },
		names.WorkloadAware:         func(o runtime.Object) (any, error) { return schedconfig.DecodeWorkloadAwareArgs(o) },
		names.TopologyAware:         func(o runtime.Object) (any, error) { return schedconfig.DecodeTopologyAwareArgs(o) },
		names.NetworkFabric:         func(o runtime.Object) (any, error) { return schedconfig.DecodeNetworkFabricArgs(o) },
		names.ResourceFragmentation: func(o runtime.Object) (any, error) { return schedconfig.DecodeResourceFragmentationArgs(o) },
		names.TenantHardware:        func(o runtime.Object) (any, error) { return schedconfig.DecodeTenantHardwareArgs(o) },
		names.NUMATopology:          func(o runtime.Object) (any, error) { return schedconfig.DecodeNUMATopologyArgs(o) },
		names.VRAM:                  func(o runtime.Object) (any, error) { return schedconfig.DecodeVRAMArgs(o) },
		names.ResourceReservation:   func(o runtime.Object) (any, error) { return schedconfig.DecodeResourceReservationArgs(o) },
		names.Backfill:              func(o runtime.Object) (any, error) { return schedconfig.DecodeBackfillArgs(o) },
		names.GangPreemption:        func(o runtime.Object) (any, error) { return schedconfig.DecodeGangPreemptionArgs(o) },
		names.BindingBackpressure:   func(o runtime.Object) (any, error) { return schedconfig.DecodeBindingBackpressureArgs(o) },
	}
	argsOf := func(p configv1.KubeSchedulerProfile) map[string]any {
		raw := map[string][]byte{}
		for _, pc := range p.PluginConfig {
			raw[pc.Name] = pc.Args.Raw
		}
		out := map[string]any{}
		for name, decode := range decoders {
			var obj runtime.Object
			if r, ok := raw[name]; ok && len(r) > 0 {
				j, err := yaml.YAMLToJSON(r)
				Expect(err).NotTo(HaveOccurred())
				obj = &runtime.Unknown{Raw: j}
			}
			args, err := decode(obj)
			Expect(err).NotTo(HaveOccurred(), "%s args", name)
			out[name] = args
		}
		// kube-scheduler's own plugins: compared as written.
		for name, r := range raw {
			if _, ours := decoders[name]; !ours && name != names.Coscheduling {
				j, err := yaml.YAMLToJSON(r)
				Expect(err).NotTo(HaveOccurred())
				out[name] = string(j)
			}
		}
		return out
	}
	rendered := profileOf(cfg)
	test := profileOf("profiles:\n" + schedulertest.KubeNexusProfile(*rendered.SchedulerName, 1, 1))
	Expect(test.Plugins).To(Equal(rendered.Plugins))
	Expect(argsOf(test)).To(Equal(argsOf(rendered)))
}

func deployment() *appsv1.Deployment {
	d := &appsv1.Deployment{}
	ExpectWithOffset(1, k8sClient.Get(suiteCtx, key(render.Name), d)).To(Succeed())
	return d
}

var _ = Describe("KubeNexusConfig", Ordered, func() {
	BeforeAll(func() {
		knc := testutil.MakeKubeNexusConfig(v1alpha1.DefaultConfigName).
			Scheduler(func(s *v1alpha1.SchedulerSpec) {
				s.Replicas = 2
				s.Resources = &corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("750m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
				}
				s.ClientConnection = v1alpha1.ClientConnectionSpec{QPS: 400, Burst: 800}
				s.PercentageOfNodesToScore = 40
			}).
			Plugins(func(p *v1alpha1.PluginsSpec) { p.Coscheduling.BackoffSeconds = 12 }).Obj()
		Expect(k8sClient.Create(suiteCtx, knc)).To(Succeed())
	})

	It("deploys the scheduler: ConfigMap, Deployment, Service; reports a missing ServiceAccount", func() {
		// The hash is reported once every object is applied.
		Eventually(func() string { return getKNC("default").Status.ConfigHash }).WithTimeout(20 * time.Second).ShouldNot(BeEmpty())
		cfg := mustStoredConfig()
		Expect(cfg).To(ContainSubstring("schedulerName: kubenexus-scheduler"))
		Expect(cfg).To(ContainSubstring("backoffSeconds: 12"))
		Expect(cfg).To(ContainSubstring("qps: 400"))
		Expect(cfg).To(ContainSubstring("percentageOfNodesToScore: 40"))
		Expect(cfg).To(ContainSubstring("resourceNamespace: " + namespace))
		expectTestProfileIsRendered(cfg)

		d := deployment()
		Expect(*d.Spec.Replicas).To(Equal(int32(2)))
		Expect(d.OwnerReferences).To(ConsistOf(HaveField("Name", v1alpha1.DefaultConfigName)))
		pod := d.Spec.Template.Spec
		Expect(pod.ServiceAccountName).To(Equal(render.Name))
		Expect(pod.SecurityContext.RunAsNonRoot).To(Equal(ptr.To(true)))
		c := pod.Containers[0]
		Expect(c.Image).To(Equal(schedulerImage))
		Expect(c.Args).To(ContainElement("--config=/etc/kubenexus-scheduler/config.yaml"))
		Expect(c.Resources.Requests.Cpu().String()).To(Equal("750m"))
		Expect(*c.SecurityContext.AllowPrivilegeEscalation).To(BeFalse())
		Expect(c.SecurityContext.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")))
		Expect(c.ReadinessProbe.HTTPGet.Path).To(Equal("/readyz"))
		hash := d.Spec.Template.Annotations[render.ConfigHashAnnotation]
		Expect(hash).NotTo(BeEmpty())

		svc := &corev1.Service{}
		Expect(k8sClient.Get(suiteCtx, key(render.MetricsServiceName), svc)).To(Succeed())
		Expect(svc.Spec.Ports).To(ConsistOf(HaveField("Port", int32(render.SecurePort))))
		Expect(svc.Spec.Selector).To(Equal(d.Spec.Selector.MatchLabels))
		// The operator grants no roles: the ServiceAccount and its bindings come with
		// the installation (the chart), and until they exist the status says so.
		Expect(apierrors.IsNotFound(k8sClient.Get(suiteCtx, key(render.Name), &corev1.ServiceAccount{}))).To(BeTrue())
		Expect(apierrors.IsNotFound(k8sClient.Get(suiteCtx, client.ObjectKey{Name: render.Name + "-kube-scheduler"}, &rbacv1.ClusterRoleBinding{}))).To(BeTrue())
		Eventually(condition("default", v1alpha1.ConditionDegraded)).Should(And(hasReason(metav1.ConditionTrue, "ServiceAccountMissing"),
			HaveField("Message", ContainSubstring("ServiceAccount "+namespace+"/kubenexus-scheduler does not exist"))))
		Expect(k8sClient.Create(suiteCtx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: render.Name, Namespace: namespace}})).To(Succeed())
		Eventually(condition("default", v1alpha1.ConditionDegraded)).WithTimeout(20 * time.Second).Should(hasReason(metav1.ConditionFalse, "AsExpected"))

		knc := getKNC("default")
		Expect(knc.Status.ConfigHash).To(Equal(hash))
		Expect(knc.Status.ObservedGeneration).To(Equal(knc.Generation))
		// No Deployment controller runs here: nothing is available yet.
		Expect(meta.FindStatusCondition(knc.Status.Conditions, v1alpha1.ConditionAvailable)).To(hasReason(metav1.ConditionFalse, "NoReadyReplicas"))
	})

	It("reports the Deployment's rollout in Available and Progressing", func() {
		d := deployment()
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}
		Expect(k8sClient.Status().Update(suiteCtx, d)).To(Succeed())
		Eventually(condition("default", v1alpha1.ConditionAvailable)).Should(hasReason(metav1.ConditionTrue, "MinimumReplicasAvailable"))
		Expect(condition("default", v1alpha1.ConditionProgressing)()).To(hasReason(metav1.ConditionFalse, "RolloutComplete"))
		Expect(getKNC("default").Status.ReadyReplicas).To(Equal(int32(2)))
	})

	It("rolls the Deployment when the rendered configuration changes, and only then", func() {
		before := deployment()
		oldHash := before.Spec.Template.Annotations[render.ConfigHashAnnotation]

		// A label on the KubeNexusConfig changes nothing the scheduler sees.
		Expect(updateKNC("default", func(knc *v1alpha1.KubeNexusConfig) { knc.Labels = map[string]string{"team": "platform"} })).To(Succeed())
		Consistently(func() int64 { return deployment().Generation }).WithTimeout(3 * time.Second).Should(Equal(before.Generation))

		// A Coscheduling argument does.
		Expect(updateKNC("default", func(knc *v1alpha1.KubeNexusConfig) { knc.Spec.Plugins.Coscheduling.BackoffSeconds = 20 })).To(Succeed())
		Eventually(storedConfig).Should(ContainSubstring("backoffSeconds: 20"))
		Eventually(func() string { return deployment().Spec.Template.Annotations[render.ConfigHashAnnotation] }).ShouldNot(Equal(oldHash))
		newHash := deployment().Spec.Template.Annotations[render.ConfigHashAnnotation]
		Eventually(func() string { return getKNC("default").Status.ConfigHash }).Should(Equal(newHash))
		Expect(deployment().Generation).To(Equal(before.Generation + 1))
		Eventually(condition("default", v1alpha1.ConditionProgressing)).Should(hasReason(metav1.ConditionTrue, "RollingOut"))
	})

	It("restores a deleted ConfigMap and a drifted Deployment", func() {
		want := mustStoredConfig()
		cm := &corev1.ConfigMap{}
		Expect(k8sClient.Get(suiteCtx, key(render.Name), cm)).To(Succeed())
		Expect(k8sClient.Delete(suiteCtx, cm)).To(Succeed())
		// A new object (new UID) with the same content.
		Eventually(func() (string, error) {
			got := &corev1.ConfigMap{}
			if err := k8sClient.Get(suiteCtx, key(render.Name), got); err != nil || got.UID == cm.UID {
				return "", err
			}
			return got.Data[render.ConfigKey], nil
		}).WithTimeout(20 * time.Second).Should(Equal(want))

		d := deployment()
		d.Spec.Replicas = ptr.To[int32](7)
		Expect(k8sClient.Update(suiteCtx, d)).To(Succeed())
		Eventually(func() int32 { return *deployment().Spec.Replicas }).WithTimeout(20 * time.Second).Should(Equal(int32(2)))
	})

	It("keeps a PodDisruptionBudget of one scheduler pod while there is more than one, and removes it with the second", func() {
		budget := func() (*policyv1.PodDisruptionBudget, error) {
			pdb := &policyv1.PodDisruptionBudget{}
			return pdb, k8sClient.Get(suiteCtx, key(render.Name), pdb)
		}
		pdb, err := budget()
		Expect(err).NotTo(HaveOccurred())
		Expect(pdb.Spec.MinAvailable.IntValue()).To(Equal(1))
		Expect(pdb.Spec.Selector.MatchLabels).To(Equal(deployment().Spec.Selector.MatchLabels))
		Expect(pdb.OwnerReferences).To(ConsistOf(HaveField("Name", v1alpha1.DefaultConfigName)))

		// One replica: a budget of one would block every drain of its node.
		Expect(updateKNC("default", func(knc *v1alpha1.KubeNexusConfig) { knc.Spec.Scheduler.Replicas = 1 })).To(Succeed())
		Eventually(func() bool { _, err := budget(); return apierrors.IsNotFound(err) }).WithTimeout(20 * time.Second).Should(BeTrue())
		Expect(*deployment().Spec.Replicas).To(Equal(int32(1)))

		// A budget of that name that the operator does not control is left alone.
		foreign := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: render.Name, Namespace: namespace, Labels: render.Labels()},
			Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1)), Selector: pdb.Spec.Selector}}
		Expect(k8sClient.Create(suiteCtx, foreign)).To(Succeed())
		Expect(updateKNC("default", func(knc *v1alpha1.KubeNexusConfig) { knc.Spec.Plugins.Coscheduling.BackoffSeconds = 21 })).To(Succeed())
		Eventually(storedConfig).Should(ContainSubstring("backoffSeconds: 21"))
		Consistently(func() error { _, err := budget(); return err }).WithTimeout(2 * time.Second).Should(Succeed())
		Expect(k8sClient.Delete(suiteCtx, foreign)).To(Succeed())

		Expect(updateKNC("default", func(knc *v1alpha1.KubeNexusConfig) { knc.Spec.Scheduler.Replicas = 2 })).To(Succeed())
		Eventually(func() (int, error) {
			pdb, err := budget()
			if err != nil || pdb.Spec.MinAvailable == nil {
				return 0, err
			}
			return pdb.Spec.MinAvailable.IntValue(), nil
		}).WithTimeout(20 * time.Second).Should(Equal(1))
		Eventually(func() int32 { return *deployment().Spec.Replicas }).Should(Equal(int32(2)))
	})

	It("refuses, with the field path, a configuration the scheduler would reject", func() {
		// retryPeriodSeconds < renewDeadlineSeconds satisfies the CRD schema, but the
		// scheduler's leader elector refuses a deadline within 1.2 × the retry period.
		bad := testutil.MakeKubeNexusConfig("bad-timing").Scheduler(func(s *v1alpha1.SchedulerSpec) {
			s.LeaderElection = v1alpha1.LeaderElectionSpec{Enabled: ptr.To(true), LeaseDurationSeconds: 15, RenewDeadlineSeconds: 10, RetryPeriodSeconds: 9}
		}).Obj()
		err := k8sClient.Create(suiteCtx, bad)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring("spec.scheduler.leaderElection.renewDeadlineSeconds"))
		Expect(err.Error()).To(ContainSubstring("retryPeriodSeconds"))

		// The same edit to the stored default is refused and leaves it as it was.
		before := getKNC("default").Spec.DeepCopy()
		err = updateKNC("default", func(knc *v1alpha1.KubeNexusConfig) {
			knc.Spec.Scheduler.LeaderElection = bad.Spec.Scheduler.LeaderElection
		})
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("spec.scheduler.leaderElection.renewDeadlineSeconds"))
		Expect(getKNC("default").Spec).To(Equal(*before))

		// An out-of-range argument is already refused by the schema, naming the field.
		err = k8sClient.Create(suiteCtx, testutil.MakeKubeNexusConfig("bad-arg").Plugins(func(p *v1alpha1.PluginsSpec) {
			p.Coscheduling.BackoffSeconds = 7200
		}).Obj())
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("spec.plugins.coscheduling.backoffSeconds"))
	})

	It("refuses a webhook scope the webhook cannot use and scheduler resources the API server would refuse, naming the field", func() {
		before := getKNC("default").Spec.DeepCopy()
		for _, tc := range []struct {
			mutate func(*v1alpha1.KubeNexusConfig)
			field  string
		}{
			{func(k *v1alpha1.KubeNexusConfig) {
				k.Spec.Webhook.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Equals", Values: []string{"a"}}}}
			}, "spec.webhook.namespaceSelector.matchExpressions[0].operator"},
			{func(k *v1alpha1.KubeNexusConfig) {
				k.Spec.Webhook.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpIn}}}
			}, "spec.webhook.namespaceSelector.matchExpressions[0].values"},
			{func(k *v1alpha1.KubeNexusConfig) {
				k.Spec.Scheduler.Resources = &corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
				}
			}, "spec.scheduler.resources.requests"},
		} {
			err := updateKNC("default", tc.mutate)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
			Expect(err.Error()).To(ContainSubstring(tc.field))
		}
		Expect(getKNC("default").Spec).To(Equal(*before))
	})

	It("keeps admitting pods when an unusable webhook scope was stored anyway, and reports Degraded", func() {
		// Store a bad selector past admission, as a config stored before the
		// validating webhook existed (or while it was down) would be.
		vwc := &admissionregv1.ValidatingWebhookConfiguration{}
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: webhooks.ValidatingConfigName}, vwc)).To(Succeed())
		Expect(k8sClient.Delete(suiteCtx, vwc)).To(Succeed())
		DeferCleanup(func() {
			restored := vwc.DeepCopy()
			restored.ObjectMeta = metav1.ObjectMeta{Name: vwc.Name, Labels: vwc.Labels, Annotations: vwc.Annotations}
			Expect(k8sClient.Create(suiteCtx, restored)).To(Succeed())
		})
		before := getKNC("default").Spec.Webhook.DeepCopy()
		Expect(updateKNC("default", func(k *v1alpha1.KubeNexusConfig) {
			k.Spec.Webhook.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Equals", Values: []string{"a"}}}}
		})).To(Succeed())
		DeferCleanup(func() {
			Expect(updateKNC("default", func(k *v1alpha1.KubeNexusConfig) { k.Spec.Webhook = *before })).To(Succeed())
		})
		Eventually(condition("default", v1alpha1.ConditionDegraded)).WithTimeout(testutil.Timeout).Should(And(
			hasReason(metav1.ConditionTrue, "InvalidWebhookScope"),
			HaveField("Message", ContainSubstring("kubenexus.io/enabled=true"))))

		// The pod webhook uses its default scope: an opted-in namespace's pod is
		// admitted and classified, not refused.
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "scope-", Labels: map[string]string{v1alpha1.LabelNamespaceEnabled: "true"}}}
		Expect(k8sClient.Create(suiteCtx, ns)).To(Succeed())
		pod := testutil.MakePod("after-bad-scope", ns.Name).Obj()
		Expect(k8sClient.Create(suiteCtx, pod)).To(Succeed())
		Expect(pod.Labels).To(HaveKeyWithValue(v1alpha1.LabelWorkloadType, "service"))
		Expect(pod.Spec.SchedulerName).To(Equal(v1alpha1.DefaultSchedulerName))
	})

	It("sends pods that name the volcano scheduler to kubenexus-scheduler only while spec.volcano.enabled is set", func() {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "volcano-jobs-", Labels: map[string]string{v1alpha1.LabelNamespaceEnabled: "true"}}}
		Expect(k8sClient.Create(suiteCtx, ns)).To(Succeed())
		off := testutil.MakePod("before", ns.Name).SchedulerName("volcano").Obj()
		Expect(k8sClient.Create(suiteCtx, off)).To(Succeed())
		Expect(off.Spec.SchedulerName).To(Equal("volcano"))

		Expect(updateKNC("default", func(k *v1alpha1.KubeNexusConfig) { k.Spec.Volcano.Enabled = ptr.To(true) })).To(Succeed())
		DeferCleanup(func() {
			Expect(updateKNC("default", func(k *v1alpha1.KubeNexusConfig) { k.Spec.Volcano.Enabled = ptr.To(false) })).To(Succeed())
		})
		Eventually(func() string {
			p := testutil.MakePod("", ns.Name).SchedulerName("volcano").Annotation(v1alpha1.AnnotationVolcanoGroupName, "vj").Obj()
			p.GenerateName, p.Name = "after-", ""
			Expect(k8sClient.Create(suiteCtx, p)).To(Succeed())
			return p.Spec.SchedulerName
		}).WithTimeout(testutil.Timeout).Should(Equal(v1alpha1.DefaultSchedulerName))
		// Outside the webhook's namespaces nothing changes.
		plain := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "not-opted-"}}
		Expect(k8sClient.Create(suiteCtx, plain)).To(Succeed())
		other := testutil.MakePod("elsewhere", plain.Name).SchedulerName("volcano").Obj()
		Expect(k8sClient.Create(suiteCtx, other)).To(Succeed())
		Expect(other.Spec.SchedulerName).To(Equal("volcano"))
	})

	It("reports a second KubeNexusConfig as ignored and deploys nothing for it", func() {
		other := testutil.MakeKubeNexusConfig("staging").Scheduler(func(s *v1alpha1.SchedulerSpec) { s.Replicas = 3 }).Obj()
		Expect(k8sClient.Create(suiteCtx, other)).To(Succeed())
		Eventually(condition("staging", v1alpha1.ConditionAvailable)).WithTimeout(20 * time.Second).Should(hasReason(metav1.ConditionFalse, v1alpha1.ReasonIgnored))
		Expect(condition("staging", v1alpha1.ConditionAvailable)().Message).To(ContainSubstring(`named "default"`))
		Expect(*deployment().Spec.Replicas).To(Equal(int32(2)))
	})

	It("renders a ConfigMap that kubenexus-scheduler runs with and schedules by", func() {
		node := testutil.MakeNode("node-a").Capacity("cpu", "8", "memory", "32Gi").Obj()
		Expect(k8sClient.Create(suiteCtx, node)).To(Succeed())
		// No kubelet lifts the not-ready taint TaintNodesByCondition puts on new nodes.
		node.Spec.Taints = nil
		Expect(k8sClient.Update(suiteCtx, node)).To(Succeed())
		dir, err := os.MkdirTemp("", "kubenexus-operator-")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(os.RemoveAll, dir)
		ctx, cancel := context.WithCancel(suiteCtx)
		DeferCleanup(cancel)
		_, err = schedulertest.StartSchedulerWithConfig(ctx, dir, adminConfig, []byte(mustStoredConfig()))
		Expect(err).NotTo(HaveOccurred())

		pod := testutil.MakePod("hello", "default").SchedulerName(v1alpha1.DefaultSchedulerName).Req("cpu", "1").Obj()
		Expect(k8sClient.Create(suiteCtx, pod)).To(Succeed())
		Eventually(func() string {
			got := &corev1.Pod{}
			Expect(k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(pod), got)).To(Succeed())
			return got.Spec.NodeName
		}).WithTimeout(30 * time.Second).Should(Equal("node-a"))
	})
})
