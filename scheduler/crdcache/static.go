package crdcache

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// NewSyncedProvider returns a Provider whose Cache reads c, taken as synced and
// serving NodeResourceTopologies, without discovery or an API server (see
// crdcachetest, which builds one over a fixed set of objects for unit tests).
func NewSyncedProvider(c cache.Cache) *Provider {
	synced := make(chan struct{})
	close(synced)
	p := &Provider{runCtx: context.Background()}
	p.once.Do(func() { p.cache = &Cache{cache: c, nrt: true, synced: synced} })
	return p
}
