package demo

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// nodeClass is a kind of machine in the simulated fleet.
type nodeClass struct {
	prefix   string
	count    int
	cpu      string
	memory   string
	disk     string // ephemeral-storage (local NVMe)
	gpus     int
	product  string // GPU Feature Discovery's nvidia.com/gpu.product
	gpuMiB   int
	numa     int
	tier     string // HardwareTier label value
	instance string
	// racks hold the class's nodes: GPU boards of one kind are racked together,
	// CPU servers go round the racks.
	racks []int
}

// The fleet: 40 nodes in 3 zones and 6 racks (racks 1–2 in zone-a, 3–4 in zone-b,
// 5–6 in zone-c); each GPU rack holds four boards of one kind and some CPU servers.
var fleet = []nodeClass{
	{prefix: "h100", count: 8, cpu: "192", memory: "2Ti", disk: "28Ti", gpus: 8, product: "NVIDIA-H100-80GB-HBM3", gpuMiB: 81559, numa: 2, tier: "premium", instance: "p5.48xlarge", racks: []int{1, 3}},
	{prefix: "a100", count: 8, cpu: "96", memory: "1Ti", disk: "7Ti", gpus: 8, product: "NVIDIA-A100-SXM4-80GB", gpuMiB: 81920, numa: 2, tier: "standard", instance: "p4de.24xlarge", racks: []int{2, 4}},
	{prefix: "l40s", count: 8, cpu: "48", memory: "384Gi", disk: "3500Gi", gpus: 4, product: "NVIDIA-L40S", gpuMiB: 46068, numa: 1, tier: "standard", instance: "g6e.12xlarge", racks: []int{5, 6}},
	{prefix: "cpu", count: 16, cpu: "32", memory: "128Gi", disk: "500Gi", numa: 1, tier: "economy", instance: "m7i.8xlarge", racks: []int{1, 2, 3, 4, 5, 6}},
}

var zones = []string{"zone-a", "zone-b", "zone-c"}

// rackOf places the n-th node of a class: GPU classes fill their racks in turn,
// CPU servers go round theirs.
func (nc nodeClass) rackOf(n int) (rack, zone string) {
	r := nc.racks[n%len(nc.racks)]
	if nc.gpus > 0 {
		r = nc.racks[n*len(nc.racks)/nc.count]
	}
	return fmt.Sprintf("rack-%d", r), zones[(r-1)/2]
}

// Namespaces of the workload mix and their tenant tiers.
const (
	NSML   = "team-ml"   // gold
	NSData = "team-data" // silver
	NSWeb  = "team-web"  // bronze
	// NSResearch (silver) is in kubeflow.go.
)

// CreateFleet creates the simulated nodes (kwok runs them), the HardwareTiers and
// the opted-in namespaces.
func (c *Cluster) CreateFleet(ctx context.Context) error {
	c.logf("creating 40 simulated nodes (H100, A100, L40S, CPU) in 3 zones and 6 racks; GPU nodes publish their devices in ResourceSlices, two-socket boards their NUMA cells in NodeResourceTopologies")
	i := 0
	for _, nc := range fleet {
		for n := 0; n < nc.count; n++ {
			rack, zone := nc.rackOf(n)
			name := fmt.Sprintf("%s-%d", nc.prefix, n)
			node := &corev1.Node{
				ObjectMeta: metav1.ObjectMeta{
					Name:        name,
					Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
					Labels: map[string]string{
						"kubernetes.io/hostname":           name,
						"kubernetes.io/os":                 "linux",
						"kubernetes.io/arch":               "amd64",
						"type":                             "kwok",
						"node.kubernetes.io/instance-type": nc.instance,
						v1alpha1.LabelTopologyZone:         zone,
						v1alpha1.LabelRack:                 rack,
						v1alpha1.LabelToR:                  rack + "-tor",
						v1alpha1.LabelNUMANodeCount:        fmt.Sprint(nc.numa),
						"demo.kubenexus.io/hardware-tier":  nc.tier,
					},
				},
				Status: corev1.NodeStatus{
					Capacity:    corev1.ResourceList{},
					Allocatable: corev1.ResourceList{},
				},
			}
			res := corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse(nc.cpu),
				corev1.ResourceMemory: resource.MustParse(nc.memory),
				corev1.ResourcePods:   resource.MustParse("110"),
				// Kubeflow's MPI launcher asks for ephemeral storage (its init container).
				corev1.ResourceEphemeralStorage: resource.MustParse(nc.disk),
			}
			if nc.gpus > 0 {
				res[v1alpha1.ResourceNvidiaGPU] = *resource.NewQuantity(int64(nc.gpus), resource.DecimalSI)
				node.Labels[v1alpha1.LabelGPUProduct] = nc.product
				node.Labels[v1alpha1.LabelGPUMemory] = fmt.Sprint(nc.gpuMiB)
				node.Labels[v1alpha1.LabelGPUCount] = fmt.Sprint(nc.gpus)
				// One NVLink domain per node (an 8-GPU HGX board).
				node.Labels[v1alpha1.LabelGPUClique] = fmt.Sprintf("demo-fabric.%d", i)
			}
			node.Status.Capacity, node.Status.Allocatable = res, res.DeepCopy()
			if err := c.Client.Create(ctx, node); err != nil {
				return fmt.Errorf("creating node %s: %w", name, err)
			}
			if err := c.publishDevices(ctx, nc, name, res); err != nil {
				return err
			}
			i++
		}
	}
	// kwok reports the nodes Ready. This cluster runs no node lifecycle controller
	// (there are no kubelets to watch), so lift the not-ready taint that admission
	// puts on new nodes, as that controller would.
	if err := waitFor(ctx, 2*time.Minute, func() error {
		var nodes corev1.NodeList
		if err := c.Client.List(ctx, &nodes); err != nil {
			return err
		}
		for i := range nodes.Items {
			n := &nodes.Items[i]
			if !ready(n) {
				return fmt.Errorf("node %s is not Ready yet", n.Name)
			}
			if len(n.Spec.Taints) > 0 {
				n.Spec.Taints = nil
				if err := c.Client.Update(ctx, n); err != nil {
					return err
				}
			}
		}
		return nil
	}); err != nil {
		return err
	}

	c.logf("creating HardwareTiers and the team namespaces (gold, silver, bronze; %s for the training-operator in scheduler-plugins mode)", NSResearch)
	for _, t := range []struct {
		name  string
		rank  int32
		tiers []v1alpha1.TenantTier
		gpus  []string
	}{
		{"premium", 100, []v1alpha1.TenantTier{v1alpha1.TenantTierGold}, []string{"NVIDIA-H100-80GB-HBM3"}},
		{"standard", 50, []v1alpha1.TenantTier{v1alpha1.TenantTierGold, v1alpha1.TenantTierSilver}, []string{"NVIDIA-A100-SXM4-80GB", "NVIDIA-L40S"}},
		{"economy", 10, []v1alpha1.TenantTier{v1alpha1.TenantTierGold, v1alpha1.TenantTierSilver, v1alpha1.TenantTierBronze}, nil},
	} {
		hwt := &v1alpha1.HardwareTier{
			ObjectMeta: metav1.ObjectMeta{Name: t.name},
			Spec: v1alpha1.HardwareTierSpec{
				Rank:               t.rank,
				NodeSelector:       metav1.LabelSelector{MatchLabels: map[string]string{"demo.kubenexus.io/hardware-tier": t.name}},
				GPUModels:          t.gpus,
				AllowedTenantTiers: t.tiers,
				Borrowing:          v1alpha1.BorrowingNever,
			},
		}
		if err := c.Client.Create(ctx, hwt); err != nil {
			return fmt.Errorf("creating HardwareTier %s: %w", t.name, err)
		}
	}
	for ns, tier := range map[string]string{NSML: "gold", NSData: "silver", NSWeb: "bronze", NSResearch: "silver", NSHPC: "silver"} {
		if err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{
			v1alpha1.LabelNamespaceEnabled: "true", v1alpha1.LabelTenantTier: tier,
		}}}); err != nil {
			return err
		}
	}
	return nil
}

// gpuDriver is the DRA driver name the fleet's ResourceSlices use (NVIDIA's).
const gpuDriver = "gpu.nvidia.com"

// publishDevices publishes what a node's agents would: its GPUs in a ResourceSlice
// shaped like NVIDIA's DRA driver's (productName, type, memory capacity), and, for
// boards of several NUMA cells, the kubelet's NodeResourceTopology report (idle
// cells, each an equal share of the node; topology manager policy best-effort, as
// HGX boards whose 8-GPU pods span both sockets run it).
func (c *Cluster) publishDevices(ctx context.Context, nc nodeClass, node string, res corev1.ResourceList) error {
	if nc.gpus > 0 {
		slice := &resourceapi.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: node + "-" + gpuDriver},
			Spec: resourceapi.ResourceSliceSpec{
				Driver:   gpuDriver,
				Pool:     resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
				NodeName: ptr.To(node),
			},
		}
		for g := range nc.gpus {
			slice.Spec.Devices = append(slice.Spec.Devices, resourceapi.Device{
				Name: fmt.Sprintf("gpu-%d", g),
				Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
					"productName": {StringValue: ptr.To(nc.product)},
					"type":        {StringValue: ptr.To("gpu")},
				},
				Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
					"memory": {Value: *resource.NewQuantity(int64(nc.gpuMiB)<<20, resource.BinarySI)},
				},
			})
		}
		if err := c.Client.Create(ctx, slice); err != nil {
			return fmt.Errorf("creating ResourceSlice %s: %w", slice.Name, err)
		}
	}
	if nc.numa < 2 {
		return nil
	}
	share := func(name corev1.ResourceName) string {
		q := res[name]
		if name == corev1.ResourceCPU {
			return resource.NewMilliQuantity(q.MilliValue()/int64(nc.numa), resource.DecimalSI).String()
		}
		return resource.NewQuantity(q.Value()/int64(nc.numa), resource.BinarySI).String()
	}
	var zones []any
	for cell := range nc.numa {
		var resources []any
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, v1alpha1.ResourceNvidiaGPU} {
			if _, ok := res[name]; !ok {
				continue
			}
			v := share(name)
			resources = append(resources, map[string]any{"name": string(name), "capacity": v, "allocatable": v, "available": v})
		}
		zones = append(zones, map[string]any{"name": fmt.Sprintf("node-%d", cell), "type": "Node", "resources": resources})
	}
	nrt := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "topology.node.k8s.io/v1alpha2",
		"kind":       "NodeResourceTopology",
		"metadata":   map[string]any{"name": node},
		"attributes": []any{
			map[string]any{"name": "topologyManagerPolicy", "value": "best-effort"},
			map[string]any{"name": "topologyManagerScope", "value": "pod"},
		},
		"zones": zones,
	}}
	if err := c.Client.Create(ctx, nrt); err != nil {
		return fmt.Errorf("creating NodeResourceTopology %s: %w", node, err)
	}
	return nil
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
