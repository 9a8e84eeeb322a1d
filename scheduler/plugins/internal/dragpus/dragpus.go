// Package dragpus is the scheduler's one view of GPUs published as DRA devices:
// which DeviceClasses are GPU classes, which nodes have such devices, what a pod's
// ResourceClaims ask of them, and each node's cards in the scheduler's allocated
// state (assumed and in-flight allocations included), kept across cycles while a
// node's allocations stay the same. ResourceFragmentation places and scores GPU
// pods with it, WorkloadAware tells GPU nodes and pods by it, NetworkFabric plans
// gangs whose members ask for GPUs by their claims. It is built once per process
// (Provider) whichever of them are enabled; ResourceFragmentation's args name the
// GPU classes and resources (Configure), the defaults hold otherwise.
package dragpus

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	resourcelisters "k8s.io/client-go/listers/resource/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/hardware"
	"github.com/kube-nexus/kubenexus/scheduler/apis/config"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/devices"
)

// View is the scheduler's view of GPUs published through DRA, one per process
// (Provider), for every plugin that places or scores GPU pods. A node whose
// allocatable has none of the GPU resources but whose ResourceSlices publish devices
// of a GPU DeviceClass has those devices as its GPUs, grouped into cards
// (hardware.GPUs): a card nothing uses is a whole free GPU, one partly used (a shared
// device some allocations consume, a card some partitions draw on) a free share. A
// pod whose ResourceClaims ask for devices of a GPU class is placed by trying its
// requests on each node's cards as the DRA allocator would (the first devices with
// room, in the node's order). Its shape is its share of the first card it matches: a
// task that shares a GPU when that is under a whole card.
type View struct {
	index     *devices.Index
	claims    fwk.ResourceClaimTracker
	templates resourcelisters.ResourceClaimTemplateLister
	mu        sync.Mutex
	// named are the GPU classes by name; resources the GPU resources, whose backing
	// classes are GPU classes too (Configure; the defaults until then).
	named     []string
	resources []corev1.ResourceName
	// at is what the index published when gpu, classes and refs were computed.
	at devices.Published
	// classes are the selectors of each GPU class, by name.
	classes map[string][]string
	// gpu marks, per node, its devices that match a GPU class; nodes without any are
	// left out.
	gpu map[string][]bool
	// refs memoises each request's share of its reference card (requestKey).
	refs map[string]int64
	// matches memoises, per request's selectors and node, which of the node's
	// devices match them.
	matches map[string]map[string][]bool
	// slots keep each GPU node's cards across cycles (Cycle.Entry). The map is
	// made for the index's version and never changed, so cycles read it unlocked.
	slots map[string]*slot
	// remote: slices that name no node publish GPU-class devices, which nodes may
	// reach beside their own (the cards model only a node's own).
	remote bool
	// keys are the requests' Keys, by requestsKey.
	keys map[string]*Key
}

// Provider hands every plugin of the process the same View.
type Provider struct {
	once sync.Once
	view *View
}

// Get returns the process's View, built on first use over the device index with
// the default GPU classes and resources (Configure changes them).
func (p *Provider) Get(h fwk.Handle, index *devices.Index) *View {
	p.once.Do(func() {
		p.view = &View{index: index, named: config.DefaultGPUDeviceClasses, resources: config.DefaultGPUResources(),
			templates: h.SharedInformerFactory().Resource().V1().ResourceClaimTemplates().Lister()}
		if dra := h.SharedDRAManager(); dra != nil {
			p.view.claims = dra.ResourceClaims()
		}
	})
	return p.view
}

// Configure sets which DeviceClasses are GPU classes and which extended resources
// count as GPUs (ResourceFragmentation's args); what was derived from the old ones
// is dropped.
func (d *View) Configure(classes []string, resources []corev1.ResourceName) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.named, d.resources, d.gpu = classes, resources, nil
}

// current brings the GPU classes and the nodes' GPU devices up to the index's
// version and returns them (callers must not change them).
func (d *View) current() (devices.Published, map[string][]string, map[string][]bool) {
	p := d.index.Published()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.gpu != nil && d.at.Version == p.Version {
		return d.at, d.classes, d.gpu
	}
	classes := hardware.GPUClasses(p.Classes, d.named, d.resources)
	gpu := map[string][]bool{}
	if len(classes) > 0 {
		ctx := context.Background()
		for node, devs := range p.ByNode {
			if flags, any := hardware.GPUFlags(ctx, classes, devs); any {
				gpu[node] = flags
			}
		}
	}
	remote := false
	if len(classes) > 0 && len(p.NonLocal) > 0 {
		_, remote = hardware.GPUFlags(context.Background(), classes, p.NonLocal)
	}
	slots := make(map[string]*slot, len(gpu))
	for node, flags := range gpu {
		slots[node] = &slot{flags: flags}
	}
	d.at, d.classes, d.gpu, d.refs, d.matches, d.slots, d.remote = p, classes, gpu, map[string]int64{}, map[string]map[string][]bool{}, slots, remote
	return p, classes, gpu
}

// Nodes returns the test for a node that publishes GPU-class devices, nil
// while none does .
func (d *View) Nodes() func(node string) bool {
	_, _, gpu := d.current()
	if len(gpu) == 0 {
		return nil
	}
	return func(node string) bool {
		_, ok := gpu[node]
		return ok
	}
}

// AsksForGPUs reports whether the pod's ResourceClaims ask for GPU-class devices
// .
func (d *View) AsksForGPUs(pod *corev1.Pod) bool {
	reqs, _ := d.Requests(pod, true)
	return len(reqs) > 0
}

// asks is what the pod's claims ask of GPU devices, allocated or not: whole GPUs,
// or a share of one .
func (d *View) Asks(pod *corev1.Pod) (gpus, share int64) {
	return d.AsksOnce(pod, nil)
}

// AsksOnce is Asks for one of several pods that may share claims (a gang's
// members): the claims counted holds (by name) were counted for another of them
// and are left out, the pod's others are added to it (nil: every claim counts). A
// claim reserved for a consumer other than the pod (a member that runs, a
// PodGroup) asks nothing: its devices are held already.
func (d *View) AsksOnce(pod *corev1.Pod, counted map[string]bool) (gpus, share int64) {
	reqs, _, _ := d.claimRequests(pod, true, counted)
	if len(reqs) == 0 {
		return 0, 0
	}
	return d.Shape(reqs)
}

// FreeCards reads the allocated state once and returns each GPU node's whole free
// cards and the free capacity of its cards, in thousandths .
func (d *View) FreeCards() (func(node string) (whole, milli int64, ok bool), error) {
	c, err := d.Cycle()
	if err != nil {
		return nil, err
	}
	return func(node string) (whole, milli int64, ok bool) {
		g := c.Cards(node)
		if g == nil {
			return 0, 0, false
		}
		for i := range g.Cards {
			milli += g.Cards[i].Free()
		}
		return g.FreeCards(), milli, true
	}, nil
}
