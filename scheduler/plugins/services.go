package plugins

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/scheduler/crdcache"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/coscheduling"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/gangpreemption"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/accelerators"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/devices"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/dragpus"
	gangSvc "github.com/kube-nexus/kubenexus/scheduler/plugins/internal/gangs"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/tenant"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/networkfabric"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/profileclassifier"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/resourcefragmentation"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/resourcereservation"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/tenanthardware"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/vram"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/workloadaware"
)

// services are what the plugins of every profile share, each built once (per
// process, or per profile for the gang Service) whichever plugins are enabled, and
// handed to the plugins that need them.
type services struct {
	// crds is the KubeNexus object cache.
	crds *crdcache.Provider
	// members is one gang record per profile.
	members *gangSvc.Provider
	// reservations is what ResourceReservations hold, per process.
	reservations *resourcereservation.Shared
	// devices is the nodes' DRA devices; draGPUs the view of GPUs published through
	// DRA, for every plugin that places or scores GPU pods.
	devices *devices.Provider
	draGPUs *dragpus.Provider
	// tenants resolves tenant tiers and holds the HardwareTier snapshot
	// TenantHardware filters by, with the tier rules it applies in a profile (for
	// NetworkFabric's plans and GangPreemption there).
	tenants *tenant.Provider
	// accelerators is the accelerator rule WorkloadAware applies in a profile, for
	// NetworkFabric's plans there.
	accelerators *accelerators.Rules
}

func newServices(runCtx context.Context) *services {
	return &services{
		crds:         crdcache.NewProvider(runCtx),
		members:      &gangSvc.Provider{},
		reservations: resourcereservation.NewShared(),
		devices:      &devices.Provider{},
		draGPUs:      &dragpus.Provider{},
		tenants:      &tenant.Provider{},
		accelerators: &accelerators.Rules{},
	}
}

// gangsOf is the profile's gang Service.
func (s *services) gangsOf(ctx context.Context, h fwk.Handle) (*gangSvc.Service, error) {
	c, err := s.crds.Get(ctx, h.KubeConfig())
	if err != nil {
		return nil, err
	}
	return s.members.For(ctx, h, c)
}

// gpusOf is the process's view of DRA GPUs.
func (s *services) gpusOf(h fwk.Handle) (*dragpus.View, error) {
	index, err := s.devices.Get(h)
	if err != nil {
		return nil, err
	}
	return s.draGPUs.Get(h, index), nil
}

// tiersOf is the process's HardwareTier snapshot.
func (s *services) tiersOf(ctx context.Context, h fwk.Handle) (*tenant.Tiers, error) {
	c, err := s.crds.Get(ctx, h.KubeConfig())
	if err != nil {
		return nil, err
	}
	index, err := s.devices.Get(h)
	if err != nil {
		return nil, err
	}
	return s.tenants.Tiers(ctx, h, c, index)
}

func (s *services) profileClassifier(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	svc, err := s.gangsOf(ctx, h)
	if err != nil {
		return nil, err
	}
	return profileclassifier.New(ctx, obj, h, s.crds, s.tenants, svc)
}

func (s *services) coscheduling(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	// The device index makes free capacity count GPUs published only as DRA
	// devices (nodefree.UseDRABacked), for every plugin's view of the snapshot.
	if _, err := s.devices.Get(h); err != nil {
		return nil, err
	}
	svc, err := s.gangsOf(ctx, h)
	if err != nil {
		return nil, err
	}
	return coscheduling.New(ctx, obj, h, s.crds, svc, s.reservations)
}

func (s *services) workloadAware(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	gpus, err := s.gpusOf(h)
	if err != nil {
		return nil, err
	}
	return workloadaware.New(ctx, obj, h, s.accelerators, gpus)
}

func (s *services) networkFabric(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	svc, err := s.gangsOf(ctx, h)
	if err != nil {
		return nil, err
	}
	gpus, err := s.gpusOf(h)
	if err != nil {
		return nil, err
	}
	tiers, err := s.tiersOf(ctx, h)
	if err != nil {
		return nil, err
	}
	return networkfabric.New(ctx, obj, h, s.crds, svc, s.reservations, gpus, tiers, s.accelerators)
}

func (s *services) resourceFragmentation(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	gpus, err := s.gpusOf(h)
	if err != nil {
		return nil, err
	}
	return resourcefragmentation.New(ctx, obj, h, s.crds, s.reservations, gpus)
}

func (s *services) tenantHardware(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	index, err := s.devices.Get(h)
	if err != nil {
		return nil, err
	}
	return tenanthardware.New(ctx, obj, h, s.crds, index, s.tenants)
}

func (s *services) vram(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	index, err := s.devices.Get(h)
	if err != nil {
		return nil, err
	}
	return vram.New(ctx, obj, h, index)
}

func (s *services) resourceReservation(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	index, err := s.devices.Get(h)
	if err != nil {
		return nil, err
	}
	svc, err := s.gangsOf(ctx, h)
	if err != nil {
		return nil, err
	}
	return resourcereservation.New(ctx, obj, h, s.crds, s.reservations, svc, index)
}

func (s *services) gangPreemption(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	svc, err := s.gangsOf(ctx, h)
	if err != nil {
		return nil, err
	}
	tiers, err := s.tiersOf(ctx, h)
	if err != nil {
		return nil, err
	}
	return gangpreemption.New(ctx, obj, h, s.crds, svc, tiers, s.reservations)
}
