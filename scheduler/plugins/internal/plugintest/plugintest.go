// Package plugintest builds, for a plugin's unit tests, the services the scheduler
// hands its plugins (scheduler/plugins/services.go) the way it builds them: over a
// schedtest handle and a KubeNexus object cache that serves a fixed set of objects.
// Plugins are then built through their own New.
package plugintest

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/scheduler/crdcache"
	"github.com/kube-nexus/kubenexus/scheduler/crdcache/crdcachetest"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/accelerators"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/devices"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/dragpus"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/gangs"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/tenant"
	"github.com/kube-nexus/kubenexus/test/util/schedtest"
)

// Services are what a profile's plugins share, built once per Services.
type Services struct {
	Env *schedtest.Env
	// CRDs serves the KubeNexus objects given; Cache is its cache, Objects what it
	// serves (a test changes them through Objects.Update).
	CRDs    *crdcache.Provider
	Cache   *crdcache.Cache
	Objects *crdcachetest.Objects

	Tenants      *tenant.Provider
	Accelerators *accelerators.Rules

	t       testing.TB
	gangs   *gangs.Service
	devices *devices.Index
	gpus    *dragpus.View
	tiers   *tenant.Tiers
}

// New builds the services over env, with a KubeNexus cache serving crds.
func New(t testing.TB, env *schedtest.Env, crds ...client.Object) *Services {
	t.Helper()
	p, objects := crdcachetest.New(crds...)
	c, err := p.Get(context.Background(), env.Handle.KubeConfig())
	if err != nil {
		t.Fatal(err)
	}
	return &Services{Env: env, CRDs: p, Cache: c, Objects: objects, Tenants: &tenant.Provider{}, Accelerators: &accelerators.Rules{}, t: t}
}

// WaitForMembers waits until the gang Service has filed each pod under its gang,
// as its pod informer handler does for the pods created through the handle's
// clientset (call after Env.Start).
func (s *Services) WaitForMembers(pods ...*corev1.Pod) {
	s.t.Helper()
	svc := s.Gangs()
	for _, p := range pods {
		schedtest.WaitFor(s.t, "the gang Service to file "+p.Namespace+"/"+p.Name, func() bool {
			_, ok := svc.GangOf(p.UID)
			return ok
		})
	}
}

// Gangs is the profile's gang Service, fed by the handle's pod informer.
func (s *Services) Gangs() *gangs.Service {
	if s.gangs == nil {
		svc, err := (&gangs.Provider{}).For(context.Background(), s.Env.Handle, s.Cache)
		if err != nil {
			s.t.Fatal(err)
		}
		s.gangs = svc
	}
	return s.gangs
}

// Devices is the nodes' DRA device index.
func (s *Services) Devices() *devices.Index {
	if s.devices == nil {
		index, err := (&devices.Provider{}).Get(s.Env.Handle)
		if err != nil {
			s.t.Fatal(err)
		}
		s.devices = index
	}
	return s.devices
}

// GPUs is the view of GPUs published through DRA.
func (s *Services) GPUs() *dragpus.View {
	if s.gpus == nil {
		s.gpus = (&dragpus.Provider{}).Get(s.Env.Handle, s.Devices())
	}
	return s.gpus
}

// Tiers is the HardwareTier snapshot of the cache's tiers.
func (s *Services) Tiers() *tenant.Tiers {
	if s.tiers == nil {
		tiers, err := s.Tenants.Tiers(context.Background(), s.Env.Handle, s.Cache, s.Devices())
		if err != nil {
			s.t.Fatal(err)
		}
		s.tiers = tiers
	}
	return s.tiers
}

// Args is a plugin's args as a scheduler configuration hands them to New (YAML or
// JSON); nil for "", the defaults.
func Args(args string) runtime.Object {
	if args == "" {
		return nil
	}
	return &runtime.Unknown{Raw: []byte(args)}
}

// Build builds a plugin with build over the services of a handle holding kube and
// a KubeNexus cache serving crds, starts the informers the plugin asked for, and,
// when the plugin took the gang Service, waits until it has filed the gang members
// among kube's pods of the profile.
func Build[P any](t testing.TB, kube []runtime.Object, crds []client.Object, build func(*Services) (P, error)) (P, *Services) {
	t.Helper()
	s := New(t, schedtest.New(t, kube...), crds...)
	pl, err := build(s)
	if err != nil {
		t.Fatal(err)
	}
	s.Env.Start()
	if s.gangs != nil {
		var members []*corev1.Pod
		for _, o := range kube {
			if p, ok := o.(*corev1.Pod); ok && p.Spec.SchedulerName == schedtest.SchedulerName {
				if _, ok, err := gang.Of(p); ok && err == nil {
					members = append(members, p)
				}
			}
		}
		s.WaitForMembers(members...)
	}
	return pl, s
}
