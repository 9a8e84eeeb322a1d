package dragpus

import (
	"context"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/kube-nexus/kubenexus/api/hardware"
)

// requests returns the requests of the pod's ResourceClaims for GPU devices (nil:
// none), read from each claim, or from its template while the claim is not made
// yet; found is false when a claim is neither in the scheduler's cache nor made
// from a template it has (yet). A claim already allocated is left out unless
// allocated is set: its devices are chosen. A request that asks for all devices of
// a class, and the alternatives of a request after the first (prioritized lists),
// are not modelled.
func (d *View) Requests(pod *corev1.Pod, allocated bool) (out []hardware.GPURequest, found bool) {
	out, found, _ = d.ClaimRequests(pod, allocated)
	return out, found
}

// ClaimRequests is requests, and whether they are all the pod's claims ask of GPU
// classes, exactly (exact): false when one asks for all devices of a class, has
// alternatives (a prioritized list), asks for administrative access (which
// allocated devices do not refuse) or was not found.
func (d *View) ClaimRequests(pod *corev1.Pod, allocated bool) (out []hardware.GPURequest, found, exact bool) {
	return d.claimRequests(pod, allocated, nil)
}

// claimRequests is ClaimRequests over the claims counted (by name) does not hold;
// it adds the pod's to counted (nil: every claim, none recorded). A claim already
// reserved for a consumer other than the pod (a pod that runs, a PodGroup) asks
// nothing there: its devices are held.
func (d *View) claimRequests(pod *corev1.Pod, allocated bool, counted map[string]bool) (out []hardware.GPURequest, found, exact bool) {
	if len(pod.Spec.ResourceClaims) == 0 {
		return nil, true, true
	}
	_, classes, _ := d.current()
	if len(classes) == 0 {
		return nil, true, true
	}
	found, exact = true, true
	for _, pc := range pod.Spec.ResourceClaims {
		spec, name, held, ok := d.claimSpec(pod, pc, allocated)
		found = found && ok
		if counted != nil && name != "" {
			if counted[name] || held {
				continue
			}
			counted[name] = true
		}
		if spec == nil {
			continue
		}
		for _, r := range spec.Requests {
			var req *resourceapi.ExactDeviceRequest
			switch {
			case r.Exactly != nil:
				req = r.Exactly
			case len(r.FirstAvailable) > 0:
				s := r.FirstAvailable[0]
				req = &resourceapi.ExactDeviceRequest{DeviceClassName: s.DeviceClassName, Selectors: s.Selectors,
					AllocationMode: s.AllocationMode, Count: s.Count, Capacity: s.Capacity}
				for _, alt := range r.FirstAvailable {
					if _, gpu := classes[alt.DeviceClassName]; gpu {
						exact = exact && len(r.FirstAvailable) == 1
					}
				}
			}
			if req == nil {
				continue
			}
			sel, ok := classes[req.DeviceClassName]
			if !ok {
				continue
			}
			if req.AllocationMode == resourceapi.DeviceAllocationModeAll || req.AdminAccess != nil && *req.AdminAccess {
				exact = false
				continue
			}
			gr := hardware.GPURequest{Selectors: append([]string(nil), sel...), Count: max(req.Count, 1)}
			for _, s := range req.Selectors {
				if s.CEL != nil {
					gr.Selectors = append(gr.Selectors, s.CEL.Expression)
				}
			}
			if req.Capacity != nil {
				gr.Capacity = req.Capacity.Requests
			}
			out = append(out, gr)
		}
	}
	return out, found, exact && found
}

// claimSpec is the spec of one of the pod's claims: the claim's, or its template's
// while the claim is not made; nil when the claim is allocated (unless allocated is
// set) or neither is found (found false). name is the claim's name ("" while it is
// not made); held says it is reserved for a consumer other than the pod.
func (d *View) claimSpec(pod *corev1.Pod, pc corev1.PodResourceClaim, allocated bool) (spec *resourceapi.DeviceClaim, name string, held, found bool) {
	if pc.ResourceClaimName != nil {
		name = *pc.ResourceClaimName
	}
	for _, st := range pod.Status.ResourceClaimStatuses {
		if st.Name == pc.Name && st.ResourceClaimName != nil {
			name = *st.ResourceClaimName
		}
	}
	if name != "" && d.claims != nil {
		if c, err := d.claims.Get(pod.Namespace, name); err == nil {
			for _, r := range c.Status.ReservedFor {
				held = held || r.UID != pod.UID
			}
			if c.Status.Allocation != nil && !allocated {
				return nil, name, held, true
			}
			return &c.Spec.Devices, name, held, true
		}
	}
	if pc.ResourceClaimTemplateName != nil {
		if t, err := d.templates.ResourceClaimTemplates(pod.Namespace).Get(*pc.ResourceClaimTemplateName); err == nil {
			return &t.Spec.Spec.Devices, name, held, true
		}
	}
	return nil, name, held, false
}

// shape is the GPUs the requests take: a share of one GPU (thousandths) when they
// ask for one device that is under a whole card on the first node whose devices
// match (nodes by name), else whole GPUs, one per device.
func (d *View) Shape(reqs []hardware.GPURequest) (gpus, share int64) {
	for _, r := range reqs {
		gpus += r.Count
	}
	if len(reqs) != 1 || reqs[0].Count != 1 {
		return gpus, 0
	}
	if s := d.reference(reqs[0]); s > 0 && s < 1000 {
		return 0, s
	}
	return gpus, 0
}

// reference is the request's share of the first card it matches (nodes by name), 0
// when it matches none.
func (d *View) reference(r hardware.GPURequest) int64 {
	p, _, gpu := d.current()
	key := requestKey(r)
	d.mu.Lock()
	s, ok := d.refs[key]
	d.mu.Unlock()
	if ok {
		return s
	}
	nodes := make([]string, 0, len(gpu))
	for n := range gpu {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	for _, n := range nodes {
		g := hardware.NewGPUs(p.ByNode[n], gpu[n], p.Counters, nil)
		if v, ok := g.Reference(r, d.matcher(p.Version, n, g, r.Selectors)); ok {
			s = v
			break
		}
	}
	d.mu.Lock()
	if d.at.Version == p.Version {
		d.refs[key] = s
	}
	d.mu.Unlock()
	return s
}

// matcher returns which of node's devices (g's) match selectors, evaluated once
// per version of the index.
func (d *View) matcher(version int64, node string, g *hardware.GPUs, selectors []string) func(i int) bool {
	key := strings.Join(selectors, "\x00")
	d.mu.Lock()
	memo, ok := d.matches[key][node]
	d.mu.Unlock()
	if !ok {
		m := g.Matcher(context.Background(), selectors)
		memo = make([]bool, g.Len())
		for i := range memo {
			memo[i] = m(i)
		}
		d.mu.Lock()
		if d.at.Version == version {
			if d.matches[key] == nil {
				d.matches[key] = map[string][]bool{}
			}
			d.matches[key][node] = memo
		}
		d.mu.Unlock()
	}
	return func(i int) bool { return memo[i] }
}

// requestKey identifies a request's selectors and capacity.
func requestKey(r hardware.GPURequest) string {
	var b strings.Builder
	for _, s := range r.Selectors {
		b.WriteString(s)
		b.WriteByte(0)
	}
	names := make([]string, 0, len(r.Capacity))
	for n := range r.Capacity {
		names = append(names, string(n))
	}
	slices.Sort(names)
	for _, n := range names {
		q := r.Capacity[resourceapi.QualifiedName(n)]
		b.WriteString(n + "=" + q.String() + ";")
	}
	return b.String()
}
