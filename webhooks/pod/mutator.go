// Package pod is the mutating pod webhook: in KubeNexus scope it writes each pod's
// class, role and tenant tier, points it at kubenexus-scheduler, and puts pods of
// recognised frameworks in a gang sized from their owning object.
package pod

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
)

// Path is where the webhook is served.
const Path = "/mutate-v1-pod"

// MaxRequestBytes bounds an AdmissionReview. A pod is at most ~1.5 MiB (etcd's
// request limit); a CREATE review carries it once.
const MaxRequestBytes = 3 << 20

// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.kubenexus.io,resources=kubenexusconfigs,verbs=get;list;watch
// The objects that size gangs are read with the rights their frameworks' folders
// give the manager (api/workload/frameworks/*).

// Mutator is the pod webhook's handler.
type Mutator struct {
	// Client reads namespaces and the KubeNexusConfig (from the manager's cache).
	Client client.Reader
	// Owners reads the objects that size gangs, as unstructured objects, so that
	// none of the frameworks' operators or CRDs needs to be installed.
	Owners client.Reader
	// Namespace is KubeNexus's own namespace: its pods are never touched.
	Namespace string
	Decoder   admission.Decoder
	// Recorder, when set, reports on the framework object why its pods were not
	// ganged (AutoGangSkipped); a dry-run request reports nothing.
	Recorder recorder.EventRecorder

	// owners keeps sizes read from owners for a few seconds, by owner UID.
	owners workload.GangSizeCache
	// badScope is the last unusable namespace selector reported in the log.
	badScope atomic.Pointer[string]
}

// settings is the part of the KubeNexusConfig the webhook uses.
type settings struct {
	schedulerName string
	scope         labels.Selector
	autoGang      []v1alpha1.Integration
	defaultTier   v1alpha1.TenantTier
	// volcanoScheduler is the scheduler name whose pods are sent to KubeNexus
	// (spec.volcano; "" when Volcano compatibility is off).
	volcanoScheduler string
	// tierFromQueue: pods Kueue admitted take their tier from the admitting
	// ClusterQueue's label (spec.kueue.tenantTierFrom), as the scheduler does.
	tierFromQueue bool
}

func (m *Mutator) settings(ctx context.Context) (settings, error) {
	s := settings{
		schedulerName: v1alpha1.DefaultSchedulerName,
		scope:         v1alpha1.DefaultWebhookScope(),
		autoGang:      v1alpha1.DefaultAutoGang,
		defaultTier:   v1alpha1.TenantTierBronze,
	}
	knc := &v1alpha1.KubeNexusConfig{}
	if err := m.Client.Get(ctx, types.NamespacedName{Name: v1alpha1.DefaultConfigName}, knc); err != nil {
		if apierrors.IsNotFound(err) {
			return s, nil
		}
		return s, err
	}
	w := knc.Spec.Webhook
	if n := knc.Spec.Scheduler.SchedulerName; n != "" {
		s.schedulerName = n
	}
	// Admission refuses a selector the webhook cannot use; one stored anyway (before
	// the validating webhook ran, or while it was down) must not turn into an outage
	// of every KubeNexus pod. The webhook keeps the default scope, and the
	// KubeNexusConfig reports Degraded / InvalidWebhookScope.
	if sel, err := w.NamespaceScope(); err != nil {
		msg := err.Error()
		if old := m.badScope.Swap(&msg); old == nil || *old != msg { // logged once per bad selector, not per pod
			logf.FromContext(ctx).Error(err, "Ignoring the KubeNexusConfig's namespace selector; using the default scope", "scope", s.scope.String())
		}
	} else {
		s.scope = sel
	}
	if w.AutoGang != nil {
		s.autoGang = w.AutoGang
	}
	if w.DefaultTier != "" {
		s.defaultTier = w.DefaultTier
	}
	s.tierFromQueue = knc.Spec.Kueue.TenantTierFrom == v1alpha1.TenantTierFromClusterQueue
	if v := knc.Spec.Volcano; v.Enabled != nil && *v.Enabled {
		s.volcanoScheduler = v.SchedulerName
		if s.volcanoScheduler == "" {
			s.volcanoScheduler = "volcano"
		}
	}
	return s, nil
}

// Handle mutates pods in scope; others are allowed untouched.
func (m *Mutator) Handle(ctx context.Context, req admission.Request) admission.Response {
	pod := &corev1.Pod{}
	if err := m.Decoder.Decode(req, pod); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if pod.Namespace == "" {
		pod.Namespace = req.Namespace
	}
	if pod.Namespace == m.Namespace || pod.Namespace == metav1.NamespaceSystem {
		return admission.Allowed("KubeNexus does not manage pods in its own or the system namespace")
	}
	cfg, err := m.settings(ctx)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	ns := &corev1.Namespace{}
	if err := m.Client.Get(ctx, types.NamespacedName{Name: pod.Namespace}, ns); err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("reading namespace %s: %w", pod.Namespace, err))
	}
	if !cfg.scope.Matches(labels.Set(ns.Labels)) && pod.Spec.SchedulerName != cfg.schedulerName {
		return admission.Allowed("outside KubeNexus scope")
	}
	// What a pod declares of its checkpoints weighs it as a preemption victim; a
	// malformed declaration is refused here rather than read as none.
	if _, err := workload.CheckpointingOf(pod); err != nil {
		return admission.Denied(err.Error())
	}
	mutated := pod.DeepCopy()
	if skipped := m.mutate(ctx, mutated, ns, cfg); skipped != nil && m.Recorder != nil && (req.DryRun == nil || !*req.DryRun) {
		m.Recorder.Eventf(skipped.owner(), nil, corev1.EventTypeWarning, v1alpha1.EventReasonAutoGangSkipped, "Admit", "%s",
			v1alpha1.EventNote(fmt.Sprintf("Pods of %s %s are not ganged: %s", skipped.src.GVK.Kind, skipped.src.Name, skipped.err.Error())))
	}
	raw, err := json.Marshal(mutated)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, raw)
}

// tierSource returns the labels that carry the pod's tenant tier: its namespace's,
// or — with spec.kueue.tenantTierFrom ClusterQueue — those of the ClusterQueue that
// admitted its controller's Kueue Workload, when that queue has a tier label. A
// cluster without Kueue, or a pod Kueue did not admit, reads the namespace.
func (m *Mutator) tierSource(ctx context.Context, pod *corev1.Pod, ns *corev1.Namespace, cfg settings) map[string]string {
	ref := metav1.GetControllerOfNoCopy(pod)
	if !cfg.tierFromQueue || ref == nil {
		return ns.Labels
	}
	var wls kueue.WorkloadList
	if err := m.Client.List(ctx, &wls, client.InNamespace(pod.Namespace)); err != nil {
		return ns.Labels
	}
	for i := range wls.Items {
		wl := &wls.Items[i]
		if wl.Status.Admission == nil || !slices.ContainsFunc(wl.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == ref.UID }) {
			continue
		}
		cq := &kueue.ClusterQueue{}
		if err := m.Client.Get(ctx, types.NamespacedName{Name: string(wl.Status.Admission.ClusterQueue)}, cq); err == nil && workload.HasTier(cq.Labels) {
			return cq.Labels
		}
	}
	return ns.Labels
}

// skip is why a framework pod was not ganged, and the object that sizes its gang.
type skip struct {
	src workload.GangSource
	err error
}

// owner is the framework object the event is about, as its reference names it.
func (s *skip) owner() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(s.src.GVK)
	u.SetNamespace(s.src.Namespace)
	u.SetName(s.src.Name)
	u.SetUID(s.src.UID)
	return u
}

// mutate writes class, role, tier, scheduler and gang onto pod; it returns why a
// pod auto-ganging applies to was not ganged (nil otherwise).
func (m *Mutator) mutate(ctx context.Context, pod *corev1.Pod, ns *corev1.Namespace, cfg settings) *skip {
	p := workload.Classify(pod, workload.Namespace{Labels: m.tierSource(ctx, pod, ns, cfg)}, cfg.defaultTier)
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[v1alpha1.LabelWorkloadType] = string(p.Class)
	if p.Role != "" {
		pod.Labels[v1alpha1.LabelWorkloadRole] = string(p.Role)
	} else {
		delete(pod.Labels, v1alpha1.LabelWorkloadRole)
	}
	// The namespace (or the admitting ClusterQueue) decides the tier; whatever the
	// pod claimed is overwritten.
	pod.Labels[v1alpha1.LabelTenantTier] = string(p.Tier)
	// With Volcano compatibility on, pods written for Volcano are scheduled by
	// KubeNexus (their scheduling.k8s.io/group-name annotation names their gang).
	if pod.Spec.SchedulerName == "" || pod.Spec.SchedulerName == corev1.DefaultSchedulerName ||
		(cfg.volcanoScheduler != "" && pod.Spec.SchedulerName == cfg.volcanoScheduler) {
		pod.Spec.SchedulerName = cfg.schedulerName
	}

	if p.Gang != nil || p.GangError != nil || p.Framework == "" || !slices.Contains(cfg.autoGang, p.Framework) ||
		pod.Annotations[v1alpha1.AnnotationAutoGang] == "false" {
		return nil // already grouped (or wrongly: the scheduler reports that), or not ours to group
	}
	src, ok := workload.GangSourceOf(pod, p)
	if !ok {
		return nil
	}
	size, err := m.size(ctx, pod, src)
	if err != nil {
		logf.FromContext(ctx).V(1).Info("Not grouping pod", "pod", pod.Name, "reason", err.Error())
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[v1alpha1.AnnotationAutoGangSkipped] = err.Error()
		return &skip{src: src, err: err}
	}
	if size.ExcludesRole != "" && p.Role == size.ExcludesRole {
		return nil
	}
	delete(pod.Annotations, v1alpha1.AnnotationAutoGangSkipped)
	gangName := src.Gang
	if size.Gang != "" {
		gangName = size.Gang // a later stage of its owner
	}
	pod.Labels[v1alpha1.LabelKubeNexusGangName] = gangName
	pod.Labels[v1alpha1.LabelKubeNexusGangMinAvailable] = strconv.Itoa(int(size.MinMember))
	return nil
}

// size is the gang size: the user's annotation, else the owning object's spec, read
// at the version the pod's owner reference names (src.GVK).
func (m *Mutator) size(ctx context.Context, pod *corev1.Pod, src workload.GangSource) (workload.GangSize, error) {
	if v, set := pod.Annotations[v1alpha1.AnnotationGangMinMember]; set {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > gang.MaxMinMember {
			return workload.GangSize{}, fmt.Errorf("annotation %s=%q: must be an integer from 1 to %d", v1alpha1.AnnotationGangMinMember, v, gang.MaxMinMember)
		}
		return workload.GangSize{MinMember: int32(n)}, nil
	}
	return m.owners.Size(src, func() (*unstructured.Unstructured, error) {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(src.GVK)
		if err := m.Owners.Get(ctx, types.NamespacedName{Namespace: src.Namespace, Name: src.Name}, obj); err != nil {
			switch {
			case apierrors.IsNotFound(err):
				return nil, fmt.Errorf("%s %s not found (read as %s): set %s to group its pods", src.GVK.Kind, src.Name, src.GVK.GroupVersion(), v1alpha1.AnnotationGangMinMember)
			case meta.IsNoMatchError(err):
				return nil, fmt.Errorf("%s is not installed in this cluster (version %s): set %s to group its pods", src.GVK.GroupKind(), src.GVK.Version, v1alpha1.AnnotationGangMinMember)
			}
			return nil, fmt.Errorf("reading %s %s: %w", src.GVK.Kind, src.Name, err)
		}
		return obj, nil
	})
}
