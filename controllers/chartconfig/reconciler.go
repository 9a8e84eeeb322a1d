// Package chartconfig applies the KubeNexusConfig that the Helm chart renders.
//
// The chart does not create the KubeNexusConfig itself: the manager validates
// KubeNexusConfigs with a webhook that the same release installs, and Helm v4
// creates webhook configurations before custom resources, so the object would reach
// a webhook whose manager is not running yet and the install would fail. The chart
// renders it into a ConfigMap instead (ConfigMapName, in the manager's namespace),
// and the manager applies it once its webhook serves, and again whenever the
// ConfigMap changes (helm upgrade) or the KubeNexusConfig is deleted, with server-side apply under its own field
// manager, so fields set by others are kept. The KubeNexusConfig is owned by the
// ClusterRole that the ConfigMap's OwnerAnnotation names (the release's manager
// role), so `helm uninstall` takes it, and with it the scheduler, away.
package chartconfig

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	"sigs.k8s.io/controller-runtime/pkg/source"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

const (
	// ConfigMapName is the ConfigMap, in the manager's namespace, holding the
	// KubeNexusConfig the chart rendered, under DataKey.
	ConfigMapName = "kubenexus-config"
	DataKey       = "kubenexusconfig.yaml"
	// OwnerAnnotation on the ConfigMap names the ClusterRole that owns the applied
	// KubeNexusConfig.
	OwnerAnnotation = "scheduling.kubenexus.io/owner-clusterrole"
	// FieldManager is the field manager of the fields the chart sets.
	FieldManager = "kubenexus-chart"
)

// +kubebuilder:rbac:groups=scheduling.kubenexus.io,resources=kubenexusconfigs,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=get,resourceNames=kubenexus-manager

// Reconciler applies the chart's KubeNexusConfig.
type Reconciler struct {
	// Reader reads the ConfigMap (a cache of that one object); Client writes.
	Reader client.Reader
	Client client.Client
	// APIReader reads the owner ClusterRole from the API server: the manager may get
	// that one role by name, not list or watch roles.
	APIReader client.Reader
	Recorder  recorder.EventRecorder
}

// Reconcile applies the ConfigMap's KubeNexusConfig. A ConfigMap that does not hold
// a valid one, or a KubeNexusConfig the API server refuses, is reported as a
// Warning event on the ConfigMap and retried when the ConfigMap changes; the
// KubeNexusConfig stored before stays as it was. A deleted ConfigMap (the chart's
// config.create turned off) leaves the KubeNexusConfig to whoever edits it next.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cm := &corev1.ConfigMap{}
	if err := r.Reader.Get(ctx, req.NamespacedName, cm); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	obj, err := Decode(cm)
	if err != nil {
		r.Recorder.Eventf(cm, nil, corev1.EventTypeWarning, "InvalidKubeNexusConfig", "Apply", "%s", err.Error())
		return ctrl.Result{}, nil
	}
	if name := cm.Annotations[OwnerAnnotation]; name != "" {
		role := &rbacv1.ClusterRole{}
		if err := r.APIReader.Get(ctx, client.ObjectKey{Name: name}, role); err != nil {
			return ctrl.Result{}, fmt.Errorf("reading ClusterRole %s, the owner %s names: %w", name, OwnerAnnotation, err)
		}
		obj.SetOwnerReferences([]metav1.OwnerReference{{
			APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole", Name: role.Name, UID: role.UID,
		}})
	}
	err = r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(FieldManager), client.ForceOwnership)
	switch {
	case apierrors.IsInvalid(err), apierrors.IsForbidden(err), apierrors.IsBadRequest(err):
		// Refused by validation (the schema, or the webhook): retrying the same object
		// cannot help.
		r.Recorder.Eventf(cm, nil, corev1.EventTypeWarning, "InvalidKubeNexusConfig", "Apply", "KubeNexusConfig %s was refused: %s", obj.GetName(), err.Error())
		return ctrl.Result{}, nil
	case err != nil:
		// The webhook may not answer yet (the manager's own pod is not ready): retry.
		return ctrl.Result{}, fmt.Errorf("applying KubeNexusConfig %s from ConfigMap %s: %w", obj.GetName(), ConfigMapName, err)
	}
	log.FromContext(ctx).Info("Applied the chart's KubeNexusConfig", "name", obj.GetName())
	return ctrl.Result{}, nil
}

// Decode reads the KubeNexusConfig the ConfigMap holds: exactly one object, of the
// KubeNexusConfig kind, named default, whose fields all exist in the API (checked
// by a strict decode into the typed object). What is applied is the object as
// written, so that only the fields the chart sets are owned by FieldManager.
func Decode(cm *corev1.ConfigMap) (*unstructured.Unstructured, error) {
	data, ok := cm.Data[DataKey]
	if !ok {
		return nil, fmt.Errorf("ConfigMap %s/%s has no key %s", cm.Namespace, cm.Name, DataKey)
	}
	raw := bytes.TrimPrefix(bytes.TrimSpace([]byte(data)), []byte("---"))
	if bytes.Contains(raw, []byte("\n---")) {
		return nil, fmt.Errorf("%s: holds more than one YAML document; it must hold one KubeNexusConfig", DataKey)
	}
	j, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: not YAML: %w", DataKey, err)
	}
	var typed v1alpha1.KubeNexusConfig
	strict, err := kjson.UnmarshalStrict(j, &typed, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return nil, fmt.Errorf("%s: not a KubeNexusConfig: %w", DataKey, err)
	}
	if len(strict) > 0 {
		return nil, fmt.Errorf("%s: %w", DataKey, errors.Join(strict...))
	}
	if typed.APIVersion != v1alpha1.GroupVersion.String() || typed.Kind != "KubeNexusConfig" {
		return nil, fmt.Errorf("%s: apiVersion %q, kind %q; want %s, KubeNexusConfig", DataKey, typed.APIVersion, typed.Kind, v1alpha1.GroupVersion)
	}
	if typed.Name != v1alpha1.DefaultConfigName {
		return nil, fmt.Errorf("%s: metadata.name %q; the operator acts only on %q", DataKey, typed.Name, v1alpha1.DefaultConfigName)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		return nil, err
	}
	unstructured.RemoveNestedField(u.Object, "status")
	return u, nil
}

// SetupWithManager watches the one ConfigMap, in namespace, through a cache of its
// own (the manager's cache holds only the ConfigMaps the operator renders).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, namespace string) error {
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{&corev1.ConfigMap{}: {
			Namespaces: map[string]cache.Config{namespace: {}},
			Field:      fields.OneTermEqualSelector("metadata.name", ConfigMapName),
		}},
	})
	if err != nil {
		return err
	}
	if err := mgr.Add(c); err != nil {
		return err
	}
	r.Reader = c
	// A deleted KubeNexusConfig default is applied again while the ConfigMap holds it
	// (helm upgrade from a chart that created it itself deletes it).
	again := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
		if obj.GetName() != v1alpha1.DefaultConfigName {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: namespace, Name: ConfigMapName}}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("chartconfig").
		WatchesRawSource(source.Kind(c, &corev1.ConfigMap{}, &handler.TypedEnqueueRequestForObject[*corev1.ConfigMap]{})).
		Watches(&v1alpha1.KubeNexusConfig{}, again, builder.WithPredicates(predicate.Funcs{
			CreateFunc:  func(event.CreateEvent) bool { return false },
			UpdateFunc:  func(event.UpdateEvent) bool { return false },
			GenericFunc: func(event.GenericEvent) bool { return false },
		})).
		Complete(r)
}
