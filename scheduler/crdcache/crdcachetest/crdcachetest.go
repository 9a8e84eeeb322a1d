// Package crdcachetest serves a fixed set of KubeNexus objects as the scheduler's
// KubeNexus object cache, for plugins built through their New in unit tests.
package crdcachetest

import (
	"context"

	nrtv1alpha2 "github.com/k8stopologyawareschedwg/noderesourcetopology-api/pkg/apis/topology/v1alpha2"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/scheduler/crdcache"
)

// Provider serves objs (PodGroups, HardwareTiers, ResourceReservations,
// NodeResourceTopologies), already synced. Change handlers are registered and never
// called: the objects do not change.
func Provider(objs ...client.Object) *crdcache.Provider {
	scheme := runtime.NewScheme()
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	utilruntime.Must(nrtv1alpha2.AddToScheme(scheme))
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	return crdcache.NewSyncedProvider(fixed{Reader: reader, FakeInformers: &informertest.FakeInformers{Scheme: scheme}})
}

// fixed reads from a fixed set of objects; its informers never fire.
type fixed struct {
	client.Reader
	*informertest.FakeInformers
}

func (f fixed) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return f.Reader.Get(ctx, key, obj, opts...)
}

func (f fixed) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return f.Reader.List(ctx, list, opts...)
}
