package render

import (
	"encoding/json"
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	coordinationv1ac "k8s.io/client-go/applyconfigurations/coordination/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"

	schedconfig "github.com/kube-nexus/kubenexus/scheduler/apis/config"
)

// Names of the objects the operator applies. They are fixed (not derived from the
// scheduler name) so that the chart's RBAC can name them and a rename never
// orphans the previous set.
const (
	// Name is the scheduler's Deployment, ConfigMap, ServiceAccount and (with more
	// than one replica) PodDisruptionBudget. The
	// ServiceAccount and its role bindings are installed with KubeNexus
	// (config/rbac/scheduler, the chart, the bundle), not by the operator: granting
	// roles at run time would need the RBAC bind verb.
	Name = "kubenexus-scheduler"
	// MetricsServiceName is the Service in front of the scheduler's secure port.
	MetricsServiceName = "kubenexus-scheduler-metrics"
	// ConfigKey is the ConfigMap key holding the KubeSchedulerConfiguration.
	ConfigKey = "config.yaml"
	// ConfigHashAnnotation on the pod template rolls the scheduler when the rendered
	// configuration changes, and only then.
	ConfigHashAnnotation = "scheduling.kubenexus.io/config-hash"
	// ManagedBy is the app.kubernetes.io/managed-by label of every rendered object
	// and the operator's server-side apply field manager.
	ManagedBy = "kubenexus-manager"
	// SecurePort serves the scheduler's health, readiness and metrics over HTTPS.
	SecurePort = 10259

	configDir = "/etc/kubenexus-scheduler"
	// servingCertDir holds spec.scheduler.servingCertSecretName's certificate.
	servingCertDir = "/etc/kubenexus-scheduler-tls"
)

// Options are the installation facts the KubeNexusConfig does not carry.
type Options struct {
	// Namespace is where the scheduler runs (the operator's namespace).
	Namespace string
	// DefaultImage is the scheduler image when spec.scheduler.image is unset.
	DefaultImage string
	// APIServerMinor is the API server's minor version (1.x; 0: unknown). Against an
	// older server than the scheduler's release, features that need an API it does
	// not serve are turned off (schedconfig.FeatureGatesForAPIServer).
	APIServerMinor int
}

// Objects is everything the operator applies for one KubeNexusConfig.
type Objects struct {
	// Config is the KubeSchedulerConfiguration file and Hash its hash.
	Config []byte
	Hash   string

	ConfigMap *corev1ac.ConfigMapApplyConfiguration
	// Lease is the scheduler's leader-election Lease (with leader election on),
	// owned by the KubeNexusConfig so that it goes with it: only its metadata is
	// applied, the scheduler writes its spec.
	Lease      *coordinationv1ac.LeaseApplyConfiguration
	Deployment *appsv1ac.DeploymentApplyConfiguration
	Service    *corev1ac.ServiceApplyConfiguration
	// PodDisruptionBudget keeps one scheduler pod through voluntary disruptions
	// (a node drain) when there is more than one replica; nil with one, where a
	// budget of one would block every drain of its node.
	PodDisruptionBudget *policyv1ac.PodDisruptionBudgetApplyConfiguration
}

// All returns the objects in the order they are applied: the configuration before
// the Deployment reading it.
func (o *Objects) All() []runtime.ApplyConfiguration {
	all := []runtime.ApplyConfiguration{o.ConfigMap}
	if o.Lease != nil {
		all = append(all, o.Lease)
	}
	all = append(all, o.Deployment, o.Service)
	if o.PodDisruptionBudget != nil {
		all = append(all, o.PodDisruptionBudget)
	}
	return all
}

// Labels are the labels of every rendered object; Selector selects the scheduler pods.
func Labels() map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":       Name,
		"app.kubernetes.io/component":  "scheduler",
		"app.kubernetes.io/part-of":    "kubenexus",
		"app.kubernetes.io/managed-by": ManagedBy,
	}
}

func selector() map[string]string {
	return map[string]string{"app.kubernetes.io/name": Name, "app.kubernetes.io/component": "scheduler"}
}

// Render renders knc. knc must have a UID: every object is owned by it.
func Render(knc *v1alpha1.KubeNexusConfig, opts Options) (*Objects, error) {
	if opts.Namespace == "" {
		return nil, fmt.Errorf("render: no namespace for the scheduler")
	}
	config, hash, err := ConfigYAML(&knc.Spec, opts.Namespace)
	if err != nil {
		return nil, err
	}
	owner := metav1ac.OwnerReference().
		WithAPIVersion(v1alpha1.GroupVersion.String()).WithKind("KubeNexusConfig").
		WithName(knc.Name).WithUID(knc.UID).
		WithController(true).WithBlockOwnerDeletion(true)
	ns := opts.Namespace
	o := &Objects{Config: config, Hash: hash}

	o.ConfigMap = corev1ac.ConfigMap(Name, ns).
		WithLabels(Labels()).WithOwnerReferences(owner).
		WithData(map[string]string{ConfigKey: string(config)})

	if ptr.Deref(knc.Spec.Scheduler.LeaderElection.Enabled, true) {
		o.Lease = coordinationv1ac.Lease(LeaseName, ns).WithLabels(Labels()).WithOwnerReferences(owner)
	}

	dep, err := deployment(&knc.Spec.Scheduler, opts, hash)
	if err != nil {
		return nil, err
	}
	o.Deployment = dep.WithOwnerReferences(owner)

	o.Service = corev1ac.Service(MetricsServiceName, ns).
		WithLabels(Labels()).WithOwnerReferences(owner).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithSelector(selector()).
			WithPorts(corev1ac.ServicePort().WithName("https-metrics").WithProtocol(corev1.ProtocolTCP).
				WithPort(SecurePort).WithTargetPort(intstr.FromString("https"))))

	if replicas(&knc.Spec.Scheduler) > 1 {
		o.PodDisruptionBudget = policyv1ac.PodDisruptionBudget(Name, ns).
			WithLabels(Labels()).WithOwnerReferences(owner).
			WithSpec(policyv1ac.PodDisruptionBudgetSpec().
				WithMinAvailable(intstr.FromInt32(1)).
				WithSelector(metav1ac.LabelSelector().WithMatchLabels(selector())))
	}
	return o, nil
}

// replicas is the number of scheduler pods the spec asks for (unset: one).
func replicas(s *v1alpha1.SchedulerSpec) int32 {
	if s.Replicas == 0 {
		return 1
	}
	return s.Replicas
}

func deployment(s *v1alpha1.SchedulerSpec, opts Options, hash string) (*appsv1ac.DeploymentApplyConfiguration, error) {
	image := s.Image
	if image == "" {
		image = opts.DefaultImage
	}
	pullPolicy := s.ImagePullPolicy
	if pullPolicy == "" {
		pullPolicy = corev1.PullIfNotPresent
	}
	probe := func(path string, period, failures int32) *corev1ac.ProbeApplyConfiguration {
		return corev1ac.Probe().
			WithHTTPGet(corev1ac.HTTPGetAction().WithPath(path).WithPort(intstr.FromString("https")).WithScheme(corev1.URISchemeHTTPS)).
			WithPeriodSeconds(period).WithFailureThreshold(failures).WithTimeoutSeconds(5)
	}
	container := corev1ac.Container().
		WithName("scheduler").
		WithImage(image).
		WithImagePullPolicy(pullPolicy).
		WithArgs(schedulerArgs(s.Verbosity, opts.APIServerMinor)...).
		WithPorts(corev1ac.ContainerPort().WithName("https").WithContainerPort(SecurePort).WithProtocol(corev1.ProtocolTCP)).
		WithStartupProbe(probe("/livez", 5, 24)).
		WithLivenessProbe(probe("/livez", 10, 3)).
		WithReadinessProbe(probe("/readyz", 5, 3)).
		WithSecurityContext(corev1ac.SecurityContext().
			WithAllowPrivilegeEscalation(false).
			WithReadOnlyRootFilesystem(true).
			WithRunAsNonRoot(true).
			WithCapabilities(corev1ac.Capabilities().WithDrop("ALL")).
			WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName("config").WithMountPath(configDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName("tmp").WithMountPath("/tmp"),
		)
	if r := s.Resources; r != nil {
		res := corev1ac.ResourceRequirements()
		if len(r.Requests) > 0 {
			res.WithRequests(r.Requests.DeepCopy())
		}
		if len(r.Limits) > 0 {
			res.WithLimits(r.Limits.DeepCopy())
		}
		container.WithResources(res)
	}

	var servingCert []*corev1ac.VolumeApplyConfiguration
	if name := s.ServingCertSecretName; name != "" {
		container.WithArgs("--tls-cert-file="+servingCertDir+"/"+corev1.TLSCertKey, "--tls-private-key-file="+servingCertDir+"/"+corev1.TLSPrivateKeyKey).
			WithVolumeMounts(corev1ac.VolumeMount().WithName("serving-cert").WithMountPath(servingCertDir).WithReadOnly(true))
		servingCert = append(servingCert, corev1ac.Volume().WithName("serving-cert").WithSecret(corev1ac.SecretVolumeSource().WithSecretName(name)))
	}

	podLabels := Labels()
	pod := corev1ac.PodSpec().
		WithServiceAccountName(Name).
		WithSecurityContext(corev1ac.PodSecurityContext().
			WithRunAsNonRoot(true).
			WithRunAsUser(65532).WithRunAsGroup(65532).
			WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))).
		WithContainers(container).
		WithVolumes(
			corev1ac.Volume().WithName("config").WithConfigMap(corev1ac.ConfigMapVolumeSource().WithName(Name)),
			corev1ac.Volume().WithName("tmp").WithEmptyDir(corev1ac.EmptyDirVolumeSource()),
		).
		WithVolumes(servingCert...)
	if err := placePod(pod, s, replicas(s)); err != nil {
		return nil, err
	}
	return appsv1ac.Deployment(Name, opts.Namespace).
		WithLabels(Labels()).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(replicas(s)).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selector())).
			WithStrategy(appsv1ac.DeploymentStrategy().
				WithType(appsv1.RollingUpdateDeploymentStrategyType).
				WithRollingUpdate(appsv1ac.RollingUpdateDeployment().
					WithMaxUnavailable(intstr.FromInt32(0)).WithMaxSurge(intstr.FromInt32(1)))).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(maps.Clone(podLabels)).
				WithAnnotations(map[string]string{ConfigHashAnnotation: hash}).
				WithSpec(pod))), nil
}

// placePod sets where the scheduler's pods may run and how they are pulled, from
// the SchedulerSpec: pull secrets, node selector, tolerations, priority class and
// affinity, with replicas on different nodes when there are several and the spec
// gives no pod anti-affinity of its own, so that losing one node never loses the
// leader and its standby.
func placePod(pod *corev1ac.PodSpecApplyConfiguration, s *v1alpha1.SchedulerSpec, replicas int32) error {
	for _, ref := range s.ImagePullSecrets {
		pod.WithImagePullSecrets(corev1ac.LocalObjectReference().WithName(ref.Name))
	}
	if len(s.NodeSelector) > 0 {
		pod.WithNodeSelector(maps.Clone(s.NodeSelector))
	}
	if len(s.Tolerations) > 0 {
		var tolerations []corev1ac.TolerationApplyConfiguration
		if err := convert(s.Tolerations, &tolerations); err != nil {
			return fmt.Errorf("spec.scheduler.tolerations: %w", err)
		}
		for i := range tolerations {
			pod.WithTolerations(&tolerations[i])
		}
	}
	if s.PriorityClassName != "" {
		pod.WithPriorityClassName(s.PriorityClassName)
	}
	affinity := corev1ac.Affinity()
	if s.Affinity != nil {
		if err := convert(s.Affinity, affinity); err != nil {
			return fmt.Errorf("spec.scheduler.affinity: %w", err)
		}
	}
	if replicas > 1 && affinity.PodAntiAffinity == nil {
		affinity.WithPodAntiAffinity(corev1ac.PodAntiAffinity().
			WithPreferredDuringSchedulingIgnoredDuringExecution(corev1ac.WeightedPodAffinityTerm().
				WithWeight(100).
				WithPodAffinityTerm(corev1ac.PodAffinityTerm().
					WithTopologyKey(corev1.LabelHostname).
					WithLabelSelector(metav1ac.LabelSelector().WithMatchLabels(selector())))))
	}
	if affinity.NodeAffinity != nil || affinity.PodAffinity != nil || affinity.PodAntiAffinity != nil {
		pod.WithAffinity(affinity)
	}
	return nil
}

// convert turns an API object into its apply configuration: both have the same
// JSON form.
func convert(from, to any) error {
	raw, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, to)
}

// schedulerArgs are the scheduler container's arguments.
func schedulerArgs(verbosity int32, apiServerMinor int) []string {
	args := []string{"--config=" + configDir + "/" + ConfigKey, fmt.Sprintf("--v=%d", verbosity)}
	if apiServerMinor > 0 {
		if gates := schedconfig.FeatureGatesFlag(schedconfig.FeatureGatesForAPIServer(apiServerMinor)); gates != "" {
			args = append(args, "--feature-gates="+gates)
		}
	}
	return args
}
