// Package crdcachetest serves a fixed set of KubeNexus objects as the scheduler's
// KubeNexus object cache, for plugins built through their New in unit tests.
package crdcachetest

import (
	"context"
	"fmt"

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
// NodeResourceTopologies), already synced. Change handlers are registered and
// called only for the changes a test makes through Objects.Update.
func Provider(objs ...client.Object) *crdcache.Provider {
	p, _ := New(objs...)
	return p
}

// New is Provider, with the Objects it serves, through which a test changes them.
func New(objs ...client.Object) (*crdcache.Provider, *Objects) {
	scheme := runtime.NewScheme()
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	utilruntime.Must(nrtv1alpha2.AddToScheme(scheme))
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	o := &Objects{client: reader, informers: &informertest.FakeInformers{Scheme: scheme}}
	return crdcache.NewSyncedProvider(fixed{Reader: reader, FakeInformers: o.informers}), o
}

// Objects are the objects a Provider serves.
type Objects struct {
	client    client.Client
	informers *informertest.FakeInformers
}

// Update changes an object the Provider serves, as the API server would (a new
// generation), then tells the cache's change handlers of its kind, as its informer
// would: the cache reads the new object from then on.
func (o *Objects) Update(ctx context.Context, obj client.Object) error {
	old, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("%T is not a client.Object", obj)
	}
	if err := o.client.Get(ctx, client.ObjectKeyFromObject(obj), old); err != nil {
		return err
	}
	obj.SetResourceVersion(old.GetResourceVersion())
	obj.SetGeneration(old.GetGeneration() + 1)
	if err := o.client.Update(ctx, obj); err != nil {
		return err
	}
	informer, err := o.informers.FakeInformerFor(ctx, obj)
	if err != nil {
		return err
	}
	informer.Update(old, obj)
	return nil
}

// fixed reads from a fixed set of objects; its informers fire only for
// Objects.Update.
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
