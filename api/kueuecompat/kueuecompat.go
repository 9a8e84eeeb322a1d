// Package kueuecompat lets KubeNexus speak Kueue's current API (kueue.x-k8s.io/v1beta2,
// served by Kueue 0.15 and later) everywhere, and still work on clusters whose Kueue
// serves only v1beta1 (Kueue 0.14 and earlier). Code reads and writes v1beta2 objects;
// where only v1beta1 is served, the client and watch objects this package returns
// talk v1beta1 to the API server and convert with Kueue's own conversions.
package kueuecompat

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	legacy "sigs.k8s.io/kueue/apis/kueue/v1beta1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

var (
	// Current is the API KubeNexus's code speaks.
	Current = kueue.GroupVersion
	// Legacy is the API of Kueue 0.14 and earlier.
	Legacy = legacy.GroupVersion
)

// AddToScheme registers both versions of Kueue's API.
func AddToScheme(s *runtime.Scheme) error {
	return errors.Join(kueue.AddToScheme(s), legacy.AddToScheme(s))
}

// conversions converts between the two versions (Kueue's generated conversions).
var conversions = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// Served returns the version of Kueue's API the cluster serves, v1beta2 preferred;
// ok is false when it serves neither (no Kueue installed).
func Served(mapper meta.RESTMapper) (gv schema.GroupVersion, ok bool) {
	for _, v := range []schema.GroupVersion{Current, Legacy} {
		if _, err := mapper.RESTMapping(v.WithKind("Workload").GroupKind(), v.Version); err == nil {
			return v, true
		}
	}
	return schema.GroupVersion{}, false
}

// isCurrent reports whether obj is one of Kueue's v1beta2 kinds.
func isCurrent(obj runtime.Object) (schema.GroupVersionKind, bool) {
	gvk, err := apiutil.GVKForObject(obj, conversions)
	return gvk, err == nil && gvk.GroupVersion() == Current
}

// Object returns the object to watch for obj's kind on a cluster serving served:
// obj itself, or an empty object of its kind in v1beta1.
func Object(obj client.Object, served schema.GroupVersion) client.Object {
	gvk, ok := isCurrent(obj)
	if !ok || served != Legacy {
		return obj
	}
	out, err := conversions.New(Legacy.WithKind(gvk.Kind))
	if err != nil {
		panic(fmt.Sprintf("kueuecompat: no v1beta1 %s: %v", gvk.Kind, err))
	}
	return out.(client.Object)
}

// ToCurrent converts obj, of either version, to into (a v1beta2 object of the
// same kind). Watch predicates and index functions use it.
func ToCurrent(obj runtime.Object, into runtime.Object) error {
	if gvk, _ := apiutil.GVKForObject(obj, conversions); gvk.GroupVersion() == Current {
		return conversions.Convert(obj, into, nil)
	}
	return convert(obj, into)
}

func convert(in, out runtime.Object) error {
	if err := conversions.Convert(in, out, nil); err != nil {
		return err
	}
	if gvk, err := apiutil.GVKForObject(out, conversions); err == nil {
		out.GetObjectKind().SetGroupVersionKind(gvk)
	}
	return nil
}

// toLegacy returns obj's v1beta1 counterpart, converted from it.
func toLegacy(obj runtime.Object, gvk schema.GroupVersionKind) (runtime.Object, error) {
	out, err := conversions.New(Legacy.WithKind(gvk.Kind))
	if err != nil {
		return nil, err
	}
	if err := convert(obj, out); err != nil {
		return nil, fmt.Errorf("converting %s to %s: %w", gvk.Kind, Legacy, err)
	}
	return out, nil
}

// Client returns c on clusters serving v1beta2; on clusters serving only v1beta1, a
// client that reads and writes Kueue's v1beta2 objects as v1beta1 ones (other objects
// pass through). Writes of converted objects are updates: a patch computed between
// two v1beta2 objects does not apply to v1beta1; the object's resourceVersion keeps
// them optimistic.
func Client(c client.Client, served schema.GroupVersion) client.Client {
	if served != Legacy {
		return c
	}
	return &legacyClient{Client: c}
}

// Reader is Client for a read-only client (a cache).
func Reader(r client.Reader, served schema.GroupVersion) client.Reader {
	if served != Legacy {
		return r
	}
	return legacyReader{r}
}

type legacyReader struct{ client.Reader }

func (r legacyReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return get(ctx, r.Reader, key, obj, opts...)
}

func (r legacyReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return list_(ctx, r.Reader, list, opts...)
}

type legacyClient struct{ client.Client }

func get(ctx context.Context, r client.Reader, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	gvk, ok := isCurrent(obj)
	if !ok {
		return r.Get(ctx, key, obj, opts...)
	}
	old := Object(obj, Legacy)
	if err := r.Get(ctx, key, old, opts...); err != nil {
		return err
	}
	if err := convert(old, obj); err != nil {
		return fmt.Errorf("converting %s %s from %s: %w", gvk.Kind, key, Legacy, err)
	}
	return nil
}

func list_(ctx context.Context, r client.Reader, list client.ObjectList, opts ...client.ListOption) error {
	gvk, ok := isCurrent(list)
	if !ok {
		return r.List(ctx, list, opts...)
	}
	item := strings.TrimSuffix(gvk.Kind, "List")
	oldList, err := conversions.New(Legacy.WithKind(gvk.Kind))
	if err != nil {
		return err
	}
	if err := r.List(ctx, oldList.(client.ObjectList), opts...); err != nil {
		return err
	}
	olds, err := meta.ExtractList(oldList)
	if err != nil {
		return err
	}
	items := make([]runtime.Object, 0, len(olds))
	for _, o := range olds {
		cur, err := conversions.New(Current.WithKind(item))
		if err != nil {
			return err
		}
		if err := convert(o, cur); err != nil {
			return fmt.Errorf("converting %s from %s: %w", item, Legacy, err)
		}
		items = append(items, cur)
	}
	if err := meta.SetList(list, items); err != nil {
		return err
	}
	if lm, ok := oldList.(metaList); ok {
		list.SetResourceVersion(lm.GetResourceVersion())
		list.SetContinue(lm.GetContinue())
	}
	return nil
}

type metaList interface {
	GetResourceVersion() string
	GetContinue() string
}

func (c *legacyClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return get(ctx, c.Client, key, obj, opts...)
}

func (c *legacyClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return list_(ctx, c.Client, list, opts...)
}

// write converts obj to v1beta1, lets do write it, and converts the result back.
func write(obj client.Object, do func(client.Object) error) error {
	gvk, ok := isCurrent(obj)
	if !ok {
		return do(obj)
	}
	old, err := toLegacy(obj, gvk)
	if err != nil {
		return err
	}
	if err := do(old.(client.Object)); err != nil {
		return err
	}
	return convert(old, obj)
}

func (c *legacyClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return write(obj, func(o client.Object) error { return c.Client.Create(ctx, o, opts...) })
}

func (c *legacyClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return write(obj, func(o client.Object) error { return c.Client.Update(ctx, o, opts...) })
}

func (c *legacyClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return write(obj, func(o client.Object) error { return c.Client.Delete(ctx, o, opts...) })
}

// Patch of a Kueue object is an update of the whole object (see Client).
func (c *legacyClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if _, ok := isCurrent(obj); !ok {
		return c.Client.Patch(ctx, obj, patch, opts...)
	}
	return c.Update(ctx, obj)
}

func (c *legacyClient) Status() client.SubResourceWriter {
	return legacyStatus{c.Client.Status()}
}

type legacyStatus struct{ client.SubResourceWriter }

func (s legacyStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return write(obj, func(o client.Object) error { return s.SubResourceWriter.Update(ctx, o, opts...) })
}

// Patch of a Kueue object's status is an update of its status (see Client).
func (s legacyStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if _, ok := isCurrent(obj); !ok {
		return s.SubResourceWriter.Patch(ctx, obj, patch, opts...)
	}
	return s.Update(ctx, obj)
}
