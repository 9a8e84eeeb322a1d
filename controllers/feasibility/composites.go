package feasibility

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// CompositeGangs maps the Kubernetes PodGroups the pods name to the gang of the
// CompositePodGroup tree each belongs to (v1alpha1.CompositeRoot), as the scheduler
// files their pods. A group or composite the reader may not read, or an API the
// cluster does not serve, leaves the group a gang of its own. It reads nothing for
// pods of no Kubernetes PodGroup.
func CompositeGangs(ctx context.Context, r client.Reader, pods []corev1.Pod) map[gang.Key]gang.Key {
	out := map[gang.Key]gang.Key{}
	seen := map[gang.Key]bool{}
	for i := range pods {
		m, ok, err := gang.Of(&pods[i])
		if err != nil || !ok || m.Dialect != gang.DialectNative || seen[m.Key] {
			continue
		}
		seen[m.Key] = true
		pg := v1alpha1.NewNativePodGroup()
		if err := r.Get(ctx, client.ObjectKey{Namespace: m.Key.Namespace, Name: m.Key.Name}, pg); err != nil {
			continue
		}
		if v1alpha1.ParentCompositeOf(pg) == "" {
			continue
		}
		unreadable := false
		name, ok := v1alpha1.CompositeRoot(pg, func(name string) *unstructured.Unstructured {
			c := v1alpha1.NewCompositePodGroup()
			switch err := r.Get(ctx, client.ObjectKey{Namespace: m.Key.Namespace, Name: name}, c); {
			case apierrors.IsNotFound(err):
				return nil
			case err != nil:
				unreadable = true
				return nil
			}
			return c
		})
		if ok && !unreadable {
			out[m.Key] = gang.Key{Namespace: m.Key.Namespace, Name: name, Composite: true}
		}
	}
	return out
}

// CompositeGang reads the gang of a root CompositePodGroup with everything under
// it, as the scheduler does (v1alpha1.ReadCompositeTree).
func CompositeGang(ctx context.Context, r client.Reader, key client.ObjectKey) (*v1alpha1.PodGroup, error) {
	u := v1alpha1.NewCompositePodGroup()
	if err := r.Get(ctx, key, u); err != nil {
		return nil, err
	}
	all := v1alpha1.NewNativePodGroupList()
	if err := r.List(ctx, all, client.InNamespace(key.Namespace)); err != nil {
		return nil, err
	}
	composites := v1alpha1.NewCompositePodGroupList()
	if err := r.List(ctx, composites, client.InNamespace(key.Namespace)); err != nil {
		return nil, err
	}
	return v1alpha1.ReadCompositeTree(u, v1alpha1.TreeOf(composites, all))
}
