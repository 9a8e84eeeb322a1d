package podgroup

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=podgroups,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=podgroups/status,verbs=get;update;patch

// NativeReconciler keeps the PodGroupInitiallyScheduled condition of Kubernetes'
// own PodGroups (scheduling.k8s.io/v1beta1) whose members kubenexus-scheduler
// places, as kube-scheduler keeps it for the groups it places: the workload
// controllers that create these groups read it. Computed by the same ComputeStatus
// as KubeNexus PodGroups (v1alpha1.NativePodGroupStatus maps it). It is set up
// only when the API server serves the API; it never creates or deletes PodGroups,
// and it leaves a group none of whose members asks for kubenexus-scheduler alone.
type NativeReconciler struct {
	Client client.Client
	// Now is the clock (tests replace it).
	Now func() time.Time
}

// SetupWithManager registers the controller. The pod index IndexGangKey must be
// registered (Reconciler.SetupWithManager does).
func (r *NativeReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return (&statusReconciler{
		name:    "podgroup-native",
		client:  r.Client,
		now:     r.Now,
		empty:   v1alpha1.NewNativePodGroup,
		read:    v1alpha1.FromNativePodGroup,
		status:  v1alpha1.NativePodGroupStatus,
		applies: r.ours,
	}).setup(mgr)
}

// ours reports whether any member asks for kubenexus-scheduler (asksKubeNexus): a
// group placed by kube-scheduler keeps the conditions kube-scheduler writes.
func (r *NativeReconciler) ours(ctx context.Context, members []corev1.Pod) (bool, error) {
	return asksKubeNexus(ctx, r.Client, members)
}

// asksKubeNexus reports whether any member asks for kubenexus-scheduler (the name
// the KubeNexusConfig gives it).
func asksKubeNexus(ctx context.Context, c client.Client, members []corev1.Pod) (bool, error) {
	name := v1alpha1.DefaultSchedulerName
	knc := &v1alpha1.KubeNexusConfig{}
	switch err := c.Get(ctx, types.NamespacedName{Name: v1alpha1.DefaultConfigName}, knc); {
	case err == nil && knc.Spec.Scheduler.SchedulerName != "":
		name = knc.Spec.Scheduler.SchedulerName
	case err != nil && !apierrors.IsNotFound(err):
		return false, err
	}
	for i := range members {
		if members[i].Spec.SchedulerName == name {
			return true, nil
		}
	}
	return false, nil
}
