package workload

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// GangSizeCache keeps the gang sizes read from owning objects for a few seconds: the
// pods of one job arrive together, and each would otherwise read the same object.
// Sizes are kept under the owner's UID, as the API server returned it, so an owner
// deleted and recreated under the same name is read afresh; failures are never kept.
// The zero value is ready to use.
type GangSizeCache struct {
	mu      sync.Mutex
	entries map[gangSizeKey]gangSizeEntry
	// now is the clock (time.Now when nil).
	now func() time.Time
}

type gangSizeKey struct {
	gvk                   schema.GroupVersionKind
	namespace, name, part string
	uid                   types.UID
}

type gangSizeEntry struct {
	size    GangSize
	expires time.Time
}

const (
	gangSizeTTL = 10 * time.Second
	gangSizeMax = 4096
)

// Size is src's gang size. A size kept for src.UID (the UID the pod's controller
// reference names) is used without reading; otherwise read returns the owner, whose
// size is kept under the UID it has. An error from read or SizeFrom is returned and
// nothing is kept.
func (c *GangSizeCache) Size(src GangSource, read func() (*unstructured.Unstructured, error)) (GangSize, error) {
	if src.UID != "" {
		if size, ok := c.get(gangSizeKey{gvk: src.GVK, namespace: src.Namespace, name: src.Name, part: src.Part, uid: src.UID}); ok {
			return size, nil
		}
	}
	obj, err := read()
	if err != nil {
		return GangSize{}, err
	}
	size, err := SizeFrom(src, obj)
	if err != nil {
		return GangSize{}, err
	}
	if uid := obj.GetUID(); uid != "" {
		c.put(gangSizeKey{gvk: src.GVK, namespace: src.Namespace, name: src.Name, part: src.Part, uid: uid}, size)
	}
	return size, nil
}

func (c *GangSizeCache) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

func (c *GangSizeCache) get(key gangSizeKey) (GangSize, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || c.clock().After(e.expires) {
		return GangSize{}, false
	}
	return e.size, true
}

func (c *GangSizeCache) put(key gangSizeKey, size GangSize) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil || len(c.entries) >= gangSizeMax {
		c.entries = map[gangSizeKey]gangSizeEntry{} // bounded: start over rather than grow
	}
	c.entries[key] = gangSizeEntry{size: size, expires: c.clock().Add(gangSizeTTL)}
}
