// Package gangview lets plugins of one profile see the gang members Coscheduling
// keeps in its index, without a second index: Coscheduling publishes a view of it per
// scheduler profile, and other plugins (NetworkFabric) read it when they need it.
package gangview

import (
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-nexus/kubenexus/api/gang"
)

// PendingFunc returns a gang's members that still need a node (not bound, not
// waiting at Permit, not behind a scheduling gate).
type PendingFunc func(gang.Key) []*corev1.Pod

// Registry holds one view per scheduler profile.
type Registry struct {
	mu        sync.RWMutex
	byProfile map[string]PendingFunc
}

// Set publishes profile's view.
func (r *Registry) Set(profile string, f PendingFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byProfile == nil {
		r.byProfile = map[string]PendingFunc{}
	}
	r.byProfile[profile] = f
}

// Get returns profile's view, or nil when Coscheduling does not run in it.
func (r *Registry) Get(profile string) PendingFunc {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.byProfile[profile]
}
