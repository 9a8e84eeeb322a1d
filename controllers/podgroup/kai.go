package podgroup

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// +kubebuilder:rbac:groups=scheduling.run.ai,resources=podgroups,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.run.ai,resources=podgroups/status,verbs=get;update;patch

// KAIReconciler keeps the status of KAI-Scheduler's PodGroups (scheduling.run.ai)
// whose members kubenexus-scheduler places, as KAI's scheduler keeps it for the
// groups it places: the running / succeeded / failed counts and, while the gang is
// not placed, an UnschedulableOnNodePool scheduling condition with the gang's
// reason (v1alpha1.KAIPodGroupStatus) — what KAI's tools show of a PodGroup.
// Computed by the same ComputeStatus as KubeNexus PodGroups. It is set up only when
// the CRD is installed; it never creates or deletes PodGroups, and it leaves a group
// none of whose members asks for kubenexus-scheduler alone (KAI's scheduler keeps
// those).
type KAIReconciler struct {
	Client client.Client
	// Now is the clock (tests replace it).
	Now func() time.Time
}

// SetupWithManager registers the controller. The pod index IndexGangKey must be
// registered (Reconciler.SetupWithManager does).
func (r *KAIReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Now == nil {
		r.Now = time.Now
	}
	return (&statusReconciler{
		name:   "podgroup-kai",
		client: r.Client,
		now:    r.Now,
		empty:  v1alpha1.NewKAIPodGroup,
		read:   v1alpha1.FromKAIPodGroup,
		status: func(u *unstructured.Unstructured, st v1alpha1.PodGroupStatus) (map[string]any, error) {
			return v1alpha1.KAIPodGroupStatus(u, st, metav1.NewTime(r.Now()))
		},
		applies: func(ctx context.Context, members []corev1.Pod) (bool, error) {
			return asksKubeNexus(ctx, r.Client, members)
		},
	}).setup(mgr)
}
