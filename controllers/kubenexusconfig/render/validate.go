package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/leaderelection"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	"k8s.io/kubernetes/pkg/apis/apps"
	appsdefaults "k8s.io/kubernetes/pkg/apis/apps/v1"
	appsvalidation "k8s.io/kubernetes/pkg/apis/apps/validation"
	schedulerapi "k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedulerscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	schedulervalidation "k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
	intree "k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	"k8s.io/utils/ptr"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	schedconfig "github.com/kube-nexus/kubenexus/scheduler/apis/config"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/names"
)

// Validate renders spec and puts the result through what kubenexus-scheduler does
// at start-up: the scheduler's strict configuration decoding and defaulting, its
// configuration validation, the leader elector's timing rules, the check that every
// enabled plugin is registered, and each KubeNexus plugin's args validation; and
// the rendered Deployment through the API server's Deployment validation. Errors
// name the KubeNexusConfig field the offending setting came from, so that a config
// the scheduler (or the API server) would reject is refused at admission instead of
// crash-looping the scheduler or failing to apply. The webhook's settings are
// checked by ValidateWebhook.
func Validate(spec *v1alpha1.KubeNexusConfigSpec, namespace string) field.ErrorList {
	return append(validateScheduler(spec, namespace), validateDeployment(spec, namespace)...)
}

func validateScheduler(spec *v1alpha1.KubeNexusConfigSpec, namespace string) field.ErrorList {
	specPath := field.NewPath("spec")
	data, _, err := ConfigYAML(spec, namespace)
	if err != nil {
		return field.ErrorList{field.InternalError(specPath, err)}
	}
	obj, _, err := schedulerscheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return field.ErrorList{field.Invalid(specPath, field.OmitValueType{}, fmt.Sprintf("the scheduler cannot decode the rendered configuration: %v", err))}
	}
	cfg, ok := obj.(*schedulerapi.KubeSchedulerConfiguration)
	if !ok {
		return field.ErrorList{field.InternalError(specPath, fmt.Errorf("rendered configuration decoded as %T", obj))}
	}

	var errs field.ErrorList
	if agg := schedulervalidation.ValidateKubeSchedulerConfiguration(cfg); agg != nil {
		for _, e := range agg.Errors() {
			errs = append(errs, toSpecError(e))
		}
	}
	errs = append(errs, validateLeaderElectionTiming(cfg)...)
	// TenantHardware reads the tenant tier ProfileClassifier computes.
	if p := &spec.Plugins; ptr.Deref(p.TenantHardware.Enabled, true) && !ptr.Deref(p.ProfileClassifier.Enabled, true) {
		errs = append(errs, field.Invalid(specPath.Child("plugins", "tenantHardware", "enabled"), true,
			"tenantHardware needs spec.plugins.profileClassifier.enabled: true (it reads the tenant tier ProfileClassifier computes); turn both on or tenantHardware off"))
	}

	// NetworkFabric plans gangs from the members Coscheduling indexes.
	if p := &spec.Plugins; ptr.Deref(p.NetworkFabric.Enabled, true) && !ptr.Deref(p.Coscheduling.Enabled, true) {
		errs = append(errs, field.Invalid(specPath.Child("plugins", "networkFabric", "enabled"), true,
			"networkFabric needs spec.plugins.coscheduling.enabled: true (it plans the gangs Coscheduling tracks); turn both on or networkFabric off"))
	}

	known := intree.NewInTreeRegistry()
	for i := range cfg.Profiles {
		profile := &cfg.Profiles[i]
		for _, p := range profile.Plugins.MultiPoint.Enabled {
			if _, inTree := known[p.Name]; !inTree && !slices.Contains(names.Implemented, p.Name) {
				errs = append(errs, field.NotSupported(specPath.Child("plugins"), p.Name, names.Implemented))
			}
		}
		for _, pc := range profile.PluginConfig {
			switch pc.Name {
			case names.Coscheduling:
				_, argErrs := schedconfig.CheckCoschedulingArgs(pc.Args, specPath.Child("plugins", "coscheduling"))
				errs = append(errs, argErrs...)
			case names.NetworkFabric:
				_, argErrs := schedconfig.CheckNetworkFabricArgs(pc.Args, specPath.Child("topology"))
				errs = append(errs, argErrs...)
			case names.ResourceFragmentation:
				// Its levels are spec.topology's, which NetworkFabric's args carry too:
				// each error once.
				_, argErrs := schedconfig.CheckResourceFragmentationArgs(pc.Args, specPath.Child("plugins", "resourceFragmentation"), specPath.Child("topology"))
				for _, e := range argErrs {
					if !slices.ContainsFunc(errs, func(x *field.Error) bool { return x.Error() == e.Error() }) {
						errs = append(errs, e)
					}
				}
			case names.WorkloadAware:
				_, argErrs := schedconfig.CheckWorkloadAwareArgs(pc.Args, specPath.Child("plugins", "workloadAware"))
				errs = append(errs, argErrs...)
			}
		}
	}
	return errs
}

// validateLeaderElectionTiming applies the rule client-go's leader elector checks
// when the scheduler starts (and exits on): renewDeadline must exceed retryPeriod
// times its jitter factor.
func validateLeaderElectionTiming(cfg *schedulerapi.KubeSchedulerConfiguration) field.ErrorList {
	le := cfg.LeaderElection
	if !le.LeaderElect {
		return nil
	}
	floor := time.Duration(leaderelection.JitterFactor * float64(le.RetryPeriod.Duration))
	if le.RenewDeadline.Duration <= floor {
		return field.ErrorList{field.Invalid(
			field.NewPath("spec", "scheduler", "leaderElection", "renewDeadlineSeconds"),
			int64(le.RenewDeadline.Seconds()),
			fmt.Sprintf("must be greater than %.1f × retryPeriodSeconds (%s), or the scheduler's leader election refuses to start", leaderelection.JitterFactor, floor))}
	}
	return nil
}

// specFields maps the scheduler configuration's field paths to the KubeNexusConfig
// fields they are rendered from, most specific first.
var specFields = []struct{ scheduler, spec string }{
	{"leaderElection.leaseDuration", "spec.scheduler.leaderElection.leaseDurationSeconds"},
	{"leaderElection.renewDeadline", "spec.scheduler.leaderElection.renewDeadlineSeconds"},
	{"leaderElection.retryPeriod", "spec.scheduler.leaderElection.retryPeriodSeconds"},
	{"leaderElection", "spec.scheduler.leaderElection"},
	{"clientConnection.qps", "spec.scheduler.clientConnection.qps"},
	{"clientConnection.burst", "spec.scheduler.clientConnection.burst"},
	{"clientConnection", "spec.scheduler.clientConnection"},
	{"percentageOfNodesToScore", "spec.scheduler.percentageOfNodesToScore"},
	{"profiles[0].schedulerName", "spec.scheduler.schedulerName"},
	{"profiles", "spec.plugins"},
}

// toSpecError re-addresses a scheduler validation error to the KubeNexusConfig
// field it came from, keeping its type, value and detail.
func toSpecError(err error) *field.Error {
	var fe *field.Error
	if !errors.As(err, &fe) {
		return field.Invalid(field.NewPath("spec"), field.OmitValueType{}, err.Error())
	}
	out := *fe
	out.Field = "spec"
	for _, m := range specFields {
		if fe.Field == m.scheduler || strings.HasPrefix(fe.Field, m.scheduler+".") || strings.HasPrefix(fe.Field, m.scheduler+"[") {
			out.Field = m.spec
			break
		}
	}
	if out.Field == "spec" || out.Field == "spec.plugins" {
		// Keep the scheduler's own path in the message when it has no exact counterpart.
		out.Detail = fmt.Sprintf("%s (scheduler configuration field %s)", out.Detail, fe.Field)
	}
	return &out
}

// validateDeployment renders the scheduler Deployment from spec and puts it through
// the API server's own Deployment validation (defaults applied first, as the API
// server does), so that a spec whose Deployment the API server would refuse — limits
// below requests, an unusable image reference — is refused at admission instead of
// failing at apply time. Errors name the KubeNexusConfig field they come from.
func validateDeployment(spec *v1alpha1.KubeNexusConfigSpec, namespace string) field.ErrorList {
	specPath := field.NewPath("spec", "scheduler")
	// The image only matters when the spec names one; the operator's default is valid.
	ac, err := deployment(&spec.Scheduler, Options{Namespace: namespace, DefaultImage: "kubenexus-scheduler"}, "validation")
	if err != nil {
		return field.ErrorList{field.Invalid(specPath, field.OmitValueType{}, err.Error())}
	}
	data, err := json.Marshal(ac)
	if err != nil {
		return field.ErrorList{field.InternalError(specPath, err)}
	}
	dep := &appsv1.Deployment{}
	if err := json.Unmarshal(data, dep); err != nil {
		return field.ErrorList{field.InternalError(specPath, err)}
	}
	appsdefaults.SetObjectDefaults_Deployment(dep)
	internal := &apps.Deployment{}
	if err := appsdefaults.Convert_v1_Deployment_To_apps_Deployment(dep, internal, nil); err != nil {
		return field.ErrorList{field.InternalError(specPath, err)}
	}
	var errs field.ErrorList
	for _, e := range appsvalidation.ValidateDeployment(internal, podutil.GetValidationOptionsFromPodTemplate(&internal.Spec.Template, nil)) {
		errs = append(errs, toSchedulerSpecError(e))
	}
	return errs
}

// deploymentFields maps the rendered Deployment's field paths to the
// KubeNexusConfig fields they are rendered from.
var deploymentFields = []struct{ deployment, spec string }{
	{"spec.template.spec.containers[0].resources", "spec.scheduler.resources"},
	{"spec.template.spec.containers[0].imagePullPolicy", "spec.scheduler.imagePullPolicy"},
	{"spec.template.spec.containers[0].image", "spec.scheduler.image"},
	{"spec.replicas", "spec.scheduler.replicas"},
	{"spec.template.spec.imagePullSecrets", "spec.scheduler.imagePullSecrets"},
	{"spec.template.spec.nodeSelector", "spec.scheduler.nodeSelector"},
	{"spec.template.spec.tolerations", "spec.scheduler.tolerations"},
	{"spec.template.spec.affinity", "spec.scheduler.affinity"},
	{"spec.template.spec.priorityClassName", "spec.scheduler.priorityClassName"},
}

// toSchedulerSpecError re-addresses a Deployment validation error to the
// KubeNexusConfig field it came from. The rest of the path is kept: for resources,
// ".requests" / ".limits[cpu]" say which entry is wrong.
func toSchedulerSpecError(fe *field.Error) *field.Error {
	out := *fe
	for _, m := range deploymentFields {
		if fe.Field == m.deployment || strings.HasPrefix(fe.Field, m.deployment+".") || strings.HasPrefix(fe.Field, m.deployment+"[") {
			out.Field = m.spec + strings.TrimPrefix(fe.Field, m.deployment)
			return &out
		}
	}
	out.Field = "spec.scheduler"
	out.Detail = fmt.Sprintf("%s (rendered scheduler Deployment field %s)", out.Detail, fe.Field)
	return &out
}

// ValidateWebhook checks the pod webhook's settings with the conversion the webhook
// itself uses (v1alpha1.WebhookSpec.NamespaceScope), plus the API server's own label
// selector validation for a precise field path. A selector the webhook cannot use
// would otherwise make it fall back to its default scope.
func ValidateWebhook(w *v1alpha1.WebhookSpec) field.ErrorList {
	path := field.NewPath("spec", "webhook", "namespaceSelector")
	if w.NamespaceSelector == nil {
		return nil
	}
	errs := metav1validation.ValidateLabelSelector(w.NamespaceSelector, metav1validation.LabelSelectorValidationOptions{}, path)
	if _, err := w.NamespaceScope(); err != nil && len(errs) == 0 {
		errs = append(errs, field.Invalid(path, field.OmitValueType{}, err.Error()))
	}
	return errs
}
