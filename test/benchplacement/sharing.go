package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/scheduler/placement"
	testutil "github.com/kube-nexus/kubenexus/test/util"
)

// demandMilli is the GPU demand of a task in thousandths of a GPU: its share of one
// when GPUs are shared and the trace gives it, else its whole GPUs.
func (t task) demandMilli() int64 {
	if t.fractional && t.milli > 0 && !wholeGPUs {
		return t.milli
	}
	return t.gpus * 1000
}

// gpuSlice publishes a node's GPUs as devices that several claims can share, each
// with a share capacity of 1000.
func gpuSlice(n traceNode) *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: n.name + "-gpus"}, Spec: resourceapi.ResourceSliceSpec{
		Driver: gpuDriver, Pool: resourceapi.ResourcePool{Name: n.name, Generation: 1, ResourceSliceCount: 1}, NodeName: ptr.To(n.name)}}
	for i := range n.gpus {
		s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{
			Name:                     fmt.Sprintf("gpu-%d", i),
			AllowMultipleAllocations: ptr.To(true),
			Capacity:                 map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{shareCapacity: {Value: *resource.NewQuantity(1000, resource.DecimalSI)}},
		})
	}
	return s
}

// claimOf is the ResourceClaim of a GPU task when GPUs are shared (nil otherwise): a
// fraction of a GPU asks for its share of one device, whole GPUs ask for whole
// devices (a request without capacity consumes all of a shared device's).
func claimOf(t task, ns string) *resourceapi.ResourceClaim {
	if t.gpus == 0 || wholeGPUs {
		return nil
	}
	req := &resourceapi.ExactDeviceRequest{DeviceClassName: gpuDriver, Count: t.gpus}
	if m := t.demandMilli(); m < 1000 {
		req.Count = 1
		req.Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{
			shareCapacity: *resource.NewQuantity(m, resource.DecimalSI)}}
	}
	return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: t.name, Namespace: ns},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "gpu", Exactly: req}}}}}
}

// releaseClaims deallocates and deletes the claims of a namespace, as
// kube-controller-manager's resourceclaim controller would once their pods are
// gone (it does not run here): the next arm starts with every device free.
func releaseClaims(ctx context.Context, c client.Client, ns string) error {
	var list resourceapi.ResourceClaimList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return err
	}
	return testutil.Parallel(len(list.Items), func(i int) error {
		claim := &list.Items[i]
		if claim.Status.Allocation != nil || len(claim.Status.ReservedFor) > 0 {
			claim.Status = resourceapi.ResourceClaimStatus{}
			if err := c.Status().Update(ctx, claim); err != nil {
				return client.IgnoreNotFound(err)
			}
		}
		if len(claim.Finalizers) > 0 {
			claim.Finalizers = nil
			if err := c.Update(ctx, claim); err != nil {
				return client.IgnoreNotFound(err)
			}
		}
		return client.IgnoreNotFound(c.Delete(ctx, claim))
	})
}

// usage is what the bound tasks use of each node: CPU, memory, and each GPU's
// share in thousandths.
type usage struct {
	nodes   []traceNode
	index   map[string]int
	cpu     []int64
	mib     []int64
	devices [][]int64
}

func newUsage(nodes []traceNode) *usage {
	u := &usage{nodes: nodes, index: map[string]int{}, cpu: make([]int64, len(nodes)), mib: make([]int64, len(nodes)), devices: make([][]int64, len(nodes))}
	for i, n := range nodes {
		u.index[n.name] = i
		u.devices[i] = make([]int64, n.gpus)
	}
	return u
}

// bind records a task bound to node: with shared GPUs, the devices and shares its
// claim was allocated; else its whole GPUs on the node's first free ones.
func (u *usage) bind(ctx context.Context, c client.Client, ns, node string, t task) error {
	i, ok := u.index[node]
	if !ok {
		return fmt.Errorf("%s was bound to %s, which is not a node of the trace", t.name, node)
	}
	if t.gpus == 0 || wholeGPUs {
		u.take(i, t, u.firstFit(i, t))
		return nil
	}
	claim := &resourceapi.ResourceClaim{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: t.name}, claim); err != nil {
		return err
	}
	if claim.Status.Allocation == nil {
		return fmt.Errorf("%s is bound to %s but its claim is not allocated", t.name, node)
	}
	var devs []int
	for _, res := range claim.Status.Allocation.Devices.Results {
		d, err := strconv.Atoi(strings.TrimPrefix(res.Device, "gpu-"))
		if err != nil || d < 0 || d >= len(u.devices[i]) {
			return fmt.Errorf("claim %s: device %q is not one of %s's", t.name, res.Device, node)
		}
		if q, ok := res.ConsumedCapacity[shareCapacity]; ok && q.Value() != min(t.demandMilli(), 1000) {
			return fmt.Errorf("claim %s: %s consumed %s of device %s, the task asked for %d thousandths of each", t.name, node, q.String(), res.Device, min(t.demandMilli(), 1000))
		}
		devs = append(devs, d)
	}
	u.take(i, t, devs)
	return nil
}

// take records task t on node i: its CPU and memory, and its GPU demand on devs (its
// share on the one device, or one whole device each).
func (u *usage) take(i int, t task, devs []int) {
	u.cpu[i] += t.cpuMilli
	u.mib[i] += t.mib
	share := min(t.demandMilli(), 1000)
	for _, d := range devs {
		u.devices[i][d] += share
	}
}

// firstFit is the devices of node i that kube-scheduler's DRA allocator gives task t
// (the first ones, in the order the node publishes them, with room for its share or
// wholly free), nil when they are not there; nil too for a task of no GPUs.
func (u *usage) firstFit(i int, t task) []int {
	if t.gpus == 0 {
		return nil
	}
	m, need := t.demandMilli(), t.gpus
	if m < 1000 {
		need = 1
	}
	var devs []int
	for d, used := range u.devices[i] {
		if int64(len(devs)) == need {
			break
		}
		if (m < 1000 && used+m <= 1000) || used == 0 {
			devs = append(devs, d)
		}
	}
	if int64(len(devs)) < need {
		return nil
	}
	return devs
}

// room is a GPU node's free room as ResourceFragmentation's measure reads it.
func (u *usage) room(i int) placement.Room { return u.roomWith(i, task{}, nil) }

// fragmented is the cluster's fragmented GPUs: the sum over GPU nodes of the GPUs a
// task drawn from demand could not use there (placement.Fragmentation, FGD's
// measure).
func (u *usage) fragmented(demand placement.Demand) float64 {
	var f float64
	for i, n := range u.nodes {
		if n.gpus > 0 {
			f += placement.Fragmentation(u.room(i), demand)
		}
	}
	return f
}

// nodeRows is, per GPU node, its free room and fragmented GPUs against demand, as
// CSV rows (node, gpus, model, whole_free_gpus, partial_free_shares, free_cpu_milli,
// free_mib, fragmented_gpus), to tell where an arm's fragmentation is.
func (u *usage) nodeRows(demand placement.Demand) [][]string {
	var rows [][]string
	for i, n := range u.nodes {
		if n.gpus == 0 {
			continue
		}
		r := u.room(i)
		shares := make([]string, len(r.Partial))
		for j, p := range r.Partial {
			shares[j] = strconv.FormatInt(p, 10)
		}
		rows = append(rows, []string{n.name, strconv.FormatInt(n.gpus, 10), n.model, strconv.FormatInt(r.GPUs, 10), strings.Join(shares, ";"),
			strconv.FormatInt(r.MilliCPU, 10), strconv.FormatInt(r.Memory>>20, 10), strconv.FormatFloat(placement.Fragmentation(r, demand), 'f', 3, 64)})
	}
	return rows
}

// wholeFree is each GPU node's GPUs that nothing uses.
func (u *usage) wholeFree() []placement.GPUNode {
	var out []placement.GPUNode
	for i, n := range u.nodes {
		if n.gpus > 0 {
			out = append(out, placement.GPUNode{Name: n.name, Free: u.room(i).GPUs})
		}
	}
	return out
}

// demandOf is the trace's GPU task mix, one shape per distinct task: FGD measures
// fragmentation against the workload's own distribution.
func demandOf(tasks []task) placement.Demand {
	type key struct{ gpus, share, cpu, mib int64 }
	weight := map[key]float64{}
	for _, t := range tasks {
		if t.gpus == 0 {
			continue
		}
		k := key{gpus: t.gpus, cpu: t.cpuMilli, mib: t.mib}
		if m := t.demandMilli(); m < 1000 {
			k.gpus, k.share = 0, m
		}
		weight[k]++
	}
	out := make(placement.Demand, 0, len(weight))
	for k, w := range weight {
		out = append(out, placement.Need{GPUs: k.gpus, Share: k.share, MilliCPU: k.cpu, Memory: k.mib << 20, Weight: w})
	}
	// In one order, so that sums over it, and the model's ties, repeat exactly.
	slices.SortFunc(out, func(a, b placement.Need) int {
		return cmp.Or(cmp.Compare(a.GPUs, b.GPUs), cmp.Compare(a.Share, b.Share), cmp.Compare(a.MilliCPU, b.MilliCPU), cmp.Compare(a.Memory, b.Memory))
	})
	return out
}

// gpusText prints thousandths of a GPU as GPUs ("-" for a negative count).
func gpusText(milli int64) string {
	switch {
	case milli < 0:
		return "-"
	case milli%1000 == 0:
		return strconv.FormatInt(milli/1000, 10)
	}
	return strconv.FormatFloat(float64(milli)/1000, 'f', 1, 64)
}
