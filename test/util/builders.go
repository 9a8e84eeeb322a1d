// Package util holds the fluent object builders shared by unit, integration and e2e
// tests. Extend these rather than building objects by hand in a test.
package util

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// ResourceList builds a ResourceList from name/quantity pairs: ResourceList("cpu", "4", "memory", "8Gi").
func ResourceList(pairs ...string) corev1.ResourceList {
	if len(pairs)%2 != 0 {
		panic("ResourceList needs name/quantity pairs")
	}
	rl := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		rl[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return rl
}

// PodGroupWrapper builds a PodGroup.
type PodGroupWrapper struct{ v1alpha1.PodGroup }

// MakePodGroup starts a PodGroup with minMember 1.
func MakePodGroup(name, namespace string) *PodGroupWrapper {
	return &PodGroupWrapper{v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       v1alpha1.PodGroupSpec{MinMember: 1},
	}}
}

func (w *PodGroupWrapper) MinMember(n int32) *PodGroupWrapper { w.Spec.MinMember = n; return w }

func (w *PodGroupWrapper) MinResources(rl corev1.ResourceList) *PodGroupWrapper {
	w.Spec.MinResources = rl
	return w
}

func (w *PodGroupWrapper) ScheduleTimeoutSeconds(s int32) *PodGroupWrapper {
	w.Spec.ScheduleTimeoutSeconds = ptr.To(s)
	return w
}

func (w *PodGroupWrapper) PriorityClassName(n string) *PodGroupWrapper {
	w.Spec.PriorityClassName = n
	return w
}

func (w *PodGroupWrapper) MinMemberPerRole(role string, n int32) *PodGroupWrapper {
	if w.Spec.MinMemberPerRole == nil {
		w.Spec.MinMemberPerRole = map[string]int32{}
	}
	w.Spec.MinMemberPerRole[role] = n
	return w
}

func (w *PodGroupWrapper) NetworkTopology(mode v1alpha1.NetworkTopologyMode, level v1alpha1.NetworkTopologyLevel) *PodGroupWrapper {
	w.Spec.NetworkTopology = &v1alpha1.NetworkTopologyPolicy{Mode: mode, Level: level}
	return w
}

// Slices sets spec.networkTopology.slices from level, size pairs, outermost first
// (NetworkTopology first).
func (w *PodGroupWrapper) Slices(layers ...any) *PodGroupWrapper {
	for i := 0; i+1 < len(layers); i += 2 {
		w.Spec.NetworkTopology.Slices = append(w.Spec.NetworkTopology.Slices, v1alpha1.NetworkTopologySlice{
			Level: layers[i].(v1alpha1.NetworkTopologyLevel), Size: int32(layers[i+1].(int))})
	}
	return w
}

// SubGroup adds a role's sub-group to spec.networkTopology (NetworkTopology first).
func (w *PodGroupWrapper) SubGroup(role string, level v1alpha1.NetworkTopologyLevel) *PodGroupWrapper {
	w.Spec.NetworkTopology.SubGroups = append(w.Spec.NetworkTopology.SubGroups, v1alpha1.NetworkTopologySubGroup{Role: role, Level: level})
	return w
}

func (w *PodGroupWrapper) NUMASpread(p v1alpha1.NUMASpreadPolicy) *PodGroupWrapper {
	w.Spec.NUMASpread = p
	return w
}

func (w *PodGroupWrapper) Obj() *v1alpha1.PodGroup { return &w.PodGroup }

// ReservationWrapper builds a ResourceReservation.
type ReservationWrapper struct{ v1alpha1.ResourceReservation }

// MakeReservation starts a reservation of one slot of 1 CPU for the PodGroup owner.
func MakeReservation(name, namespace, ownerPodGroup string) *ReservationWrapper {
	return &ReservationWrapper{v1alpha1.ResourceReservation{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: v1alpha1.ResourceReservationSpec{
			Owner:     v1alpha1.ReservationOwner{Kind: v1alpha1.ReservationOwnerPodGroup, Name: ownerPodGroup},
			Resources: ResourceList("cpu", "1"),
		},
	}}
}

func (w *ReservationWrapper) Owner(kind v1alpha1.ReservationOwnerKind, name string) *ReservationWrapper {
	w.Spec.Owner = v1alpha1.ReservationOwner{Kind: kind, Name: name}
	return w
}

func (w *ReservationWrapper) Resources(rl corev1.ResourceList) *ReservationWrapper {
	w.Spec.Resources = rl
	return w
}

func (w *ReservationWrapper) Node(n string) *ReservationWrapper  { w.Spec.NodeName = n; return w }
func (w *ReservationWrapper) Slots(n int32) *ReservationWrapper  { w.Spec.Slots = n; return w }
func (w *ReservationWrapper) TTL(sec int32) *ReservationWrapper  { w.Spec.TTLSeconds = sec; return w }
func (w *ReservationWrapper) Obj() *v1alpha1.ResourceReservation { return &w.ResourceReservation }

// HardwareTierWrapper builds a HardwareTier.
type HardwareTierWrapper struct{ v1alpha1.HardwareTier }

// MakeHardwareTier starts a tier of the given rank selecting nodes labelled
// hardware.example.com/tier=<name>, open to every tenant tier.
func MakeHardwareTier(name string, rank int32) *HardwareTierWrapper {
	return &HardwareTierWrapper{v1alpha1.HardwareTier{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.HardwareTierSpec{
			Rank:               rank,
			NodeSelector:       metav1.LabelSelector{MatchLabels: map[string]string{"hardware.example.com/tier": name}},
			AllowedTenantTiers: []v1alpha1.TenantTier{v1alpha1.TenantTierGold, v1alpha1.TenantTierSilver, v1alpha1.TenantTierBronze},
		},
	}}
}

func (w *HardwareTierWrapper) Selector(s metav1.LabelSelector) *HardwareTierWrapper {
	w.Spec.NodeSelector = s
	return w
}

func (w *HardwareTierWrapper) GPUModels(m ...string) *HardwareTierWrapper {
	w.Spec.GPUModels = m
	return w
}

func (w *HardwareTierWrapper) CostFactor(q string) *HardwareTierWrapper {
	w.Spec.CostFactor = ptr.To(resource.MustParse(q))
	return w
}

func (w *HardwareTierWrapper) Tenants(t ...v1alpha1.TenantTier) *HardwareTierWrapper {
	w.Spec.AllowedTenantTiers = t
	return w
}

func (w *HardwareTierWrapper) ClusterQueues(q ...string) *HardwareTierWrapper {
	w.Spec.AllowedClusterQueues = q
	return w
}

func (w *HardwareTierWrapper) Borrowing(b v1alpha1.BorrowingPolicy) *HardwareTierWrapper {
	w.Spec.Borrowing = b
	return w
}

func (w *HardwareTierWrapper) Obj() *v1alpha1.HardwareTier { return &w.HardwareTier }

// KubeNexusConfigWrapper builds a KubeNexusConfig.
type KubeNexusConfigWrapper struct{ v1alpha1.KubeNexusConfig }

// MakeKubeNexusConfig starts an empty KubeNexusConfig (everything defaulted by the API server).
func MakeKubeNexusConfig(name string) *KubeNexusConfigWrapper {
	return &KubeNexusConfigWrapper{v1alpha1.KubeNexusConfig{ObjectMeta: metav1.ObjectMeta{Name: name}}}
}

// Scheduler edits the scheduler section.
func (w *KubeNexusConfigWrapper) Scheduler(f func(*v1alpha1.SchedulerSpec)) *KubeNexusConfigWrapper {
	f(&w.Spec.Scheduler)
	return w
}

// Volcano edits the Volcano compatibility section.
func (w *KubeNexusConfigWrapper) Volcano(f func(*v1alpha1.VolcanoSpec)) *KubeNexusConfigWrapper {
	f(&w.Spec.Volcano)
	return w
}

// Plugins edits the plugins section.
func (w *KubeNexusConfigWrapper) Plugins(f func(*v1alpha1.PluginsSpec)) *KubeNexusConfigWrapper {
	f(&w.Spec.Plugins)
	return w
}

// Webhook edits the webhook section.
func (w *KubeNexusConfigWrapper) Webhook(f func(*v1alpha1.WebhookSpec)) *KubeNexusConfigWrapper {
	f(&w.Spec.Webhook)
	return w
}

func (w *KubeNexusConfigWrapper) Obj() *v1alpha1.KubeNexusConfig { return &w.KubeNexusConfig }

// NodeWrapper builds a Node.
type NodeWrapper struct{ corev1.Node }

// MakeNode starts a node with 110 pods of capacity.
func MakeNode(name string) *NodeWrapper {
	n := &NodeWrapper{corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}}
	n.Status.Capacity = ResourceList("pods", "110")
	n.Status.Allocatable = ResourceList("pods", "110")
	return n
}

// Capacity sets capacity and allocatable from name/quantity pairs (pods stays 110 unless given).
func (w *NodeWrapper) Capacity(pairs ...string) *NodeWrapper {
	for name, q := range ResourceList(pairs...) {
		w.Status.Capacity[name] = q
		w.Status.Allocatable[name] = q
	}
	return w
}

func (w *NodeWrapper) Label(k, v string) *NodeWrapper { w.Labels[k] = v; return w }
func (w *NodeWrapper) Obj() *corev1.Node              { return &w.Node }

// PodWrapper builds a Pod.
type PodWrapper struct{ corev1.Pod }

// MakePod starts a pod with one container named "main" and no requests.
func MakePod(name, namespace string) *PodWrapper {
	return &PodWrapper{corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{}, Annotations: map[string]string{}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}}},
	}}
}

func (w *PodWrapper) Label(k, v string) *PodWrapper      { w.Labels[k] = v; return w }
func (w *PodWrapper) Annotation(k, v string) *PodWrapper { w.Annotations[k] = v; return w }
func (w *PodWrapper) SchedulerName(n string) *PodWrapper { w.Spec.SchedulerName = n; return w }
func (w *PodWrapper) PriorityClass(n string) *PodWrapper { w.Spec.PriorityClassName = n; return w }
func (w *PodWrapper) NodeSelector(k, v string) *PodWrapper {
	if w.Spec.NodeSelector == nil {
		w.Spec.NodeSelector = map[string]string{}
	}
	w.Spec.NodeSelector[k] = v
	return w
}

// Req sets the main container's requests from name/quantity pairs.
// Limit sets the limits of the pod's container (extended resources such as GPUs
// need limits equal to requests).
func (w *PodWrapper) Limit(pairs ...string) *PodWrapper {
	w.Spec.Containers[0].Resources.Limits = ResourceList(pairs...)
	return w
}

// Owner makes the pod controlled by the named object (with a made-up UID).
func (w *PodWrapper) Owner(apiVersion, kind, name string) *PodWrapper {
	return w.OwnerUID(apiVersion, kind, name, types.UID(kind+"-"+name))
}

// OwnerUID makes the pod controlled by the named object with the given UID.
func (w *PodWrapper) OwnerUID(apiVersion, kind, name string, uid types.UID) *PodWrapper {
	w.OwnerReferences = append(w.OwnerReferences, metav1.OwnerReference{
		APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, Controller: ptr.To(true),
	})
	return w
}

func (w *PodWrapper) Req(pairs ...string) *PodWrapper {
	w.Spec.Containers[0].Resources.Requests = ResourceList(pairs...)
	return w
}

// Gate adds a scheduling gate.
func (w *PodWrapper) Gate(name string) *PodWrapper {
	w.Spec.SchedulingGates = append(w.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: name})
	return w
}

// PodGroup makes the pod a member of the PodGroup object name.
func (w *PodWrapper) PodGroup(name string) *PodWrapper {
	return w.Label(v1alpha1.LabelPodGroup, name)
}

// SchedulingGroup makes the pod a member of Kubernetes' PodGroup name
// (spec.schedulingGroup.podGroupName).
func (w *PodWrapper) SchedulingGroup(name string) *PodWrapper {
	w.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &name}
	return w
}

// KAIGroup makes the pod a member of the KAI PodGroup name (annotation
// pod-group-name) in its leaf sub-group subGroup ("" for none).
func (w *PodWrapper) KAIGroup(name, subGroup string) *PodWrapper {
	w.Annotation(v1alpha1.AnnotationKAIPodGroupName, name)
	if subGroup != "" {
		w.Label(v1alpha1.LabelKAISubGroupName, subGroup)
	}
	return w
}

// UID sets the pod's UID (the API server would; unit tests that index pods by UID
// need one).
func (w *PodWrapper) UID(uid string) *PodWrapper { w.Pod.UID = types.UID(uid); return w }

// Node binds the pod to a node.
func (w *PodWrapper) Node(name string) *PodWrapper { w.Spec.NodeName = name; return w }

// Priority sets the pod's resolved priority (what admission writes from its
// PriorityClass).
func (w *PodWrapper) Priority(p int32) *PodWrapper { w.Spec.Priority = ptr.To(p); return w }

// Phase sets the pod's status phase.
func (w *PodWrapper) Phase(p corev1.PodPhase) *PodWrapper { w.Status.Phase = p; return w }

// StartTime sets when the kubelet started the pod.
func (w *PodWrapper) StartTime(t time.Time) *PodWrapper {
	w.Status.StartTime = &metav1.Time{Time: t}
	return w
}

// InitReq adds an init container with requests from name/quantity pairs.
func (w *PodWrapper) InitReq(pairs ...string) *PodWrapper {
	w.Spec.InitContainers = append(w.Spec.InitContainers, corev1.Container{
		Name: fmt.Sprintf("init-%d", len(w.Spec.InitContainers)), Image: "registry.k8s.io/pause:3.10",
		Resources: corev1.ResourceRequirements{Requests: ResourceList(pairs...)},
	})
	return w
}

// GPUs sets the main container's request and limit of nvidia.com/gpu.
func (w *PodWrapper) GPUs(n int64) *PodWrapper {
	q := *resource.NewQuantity(n, resource.DecimalSI)
	c := &w.Spec.Containers[0]
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	c.Resources.Requests[v1alpha1.ResourceNvidiaGPU] = q
	c.Resources.Limits[v1alpha1.ResourceNvidiaGPU] = q
	return w
}

// Created sets the pod's creation time.
func (w *PodWrapper) Created(t time.Time) *PodWrapper {
	w.CreationTimestamp = metav1.NewTime(t)
	return w
}

// ActiveDeadline sets spec.activeDeadlineSeconds.
func (w *PodWrapper) ActiveDeadline(seconds *int64) *PodWrapper {
	w.Spec.ActiveDeadlineSeconds = seconds
	return w
}

func (w *PodWrapper) Obj() *corev1.Pod { return &w.Pod }

// NativeGangPodGroup is Kubernetes' PodGroup (scheduling.k8s.io/v1beta1) with the
// gang policy minCount.
func NativeGangPodGroup(namespace, name string, minCount int32) *schedulingv1beta1.PodGroup {
	return &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: schedulingv1beta1.PodGroupSpec{
			SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: minCount}},
		},
	}
}

// CompositePodGroup is a Kubernetes CompositePodGroup (scheduling.k8s.io/v1alpha3)
// whose gang policy needs minGroupCount of its children, with an optional topology
// key ("" for none).
func CompositePodGroup(namespace, name string, minGroupCount int32, topologyKey string) *schedulingv1alpha3.CompositePodGroup {
	c := &schedulingv1alpha3.CompositePodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: schedulingv1alpha3.CompositePodGroupSpec{
			WorkloadRef:      &schedulingv1alpha3.WorkloadReference{WorkloadName: name, TemplateName: name},
			SchedulingPolicy: schedulingv1alpha3.CompositePodGroupSchedulingPolicy{Gang: &schedulingv1alpha3.CompositeGangSchedulingPolicy{MinGroupCount: minGroupCount}},
		},
	}
	if topologyKey != "" {
		c.Spec.SchedulingConstraints = &schedulingv1alpha3.CompositePodGroupSchedulingConstraints{Topology: []schedulingv1alpha3.TopologyConstraint{{Key: topologyKey}}}
	}
	return c
}

// CompositeChild is NativeGangPodGroup as a child of the CompositePodGroup parent,
// with an optional topology key ("" for none).
func CompositeChild(namespace, name, parent string, minCount int32, topologyKey string) *schedulingv1beta1.PodGroup {
	pg := NativeGangPodGroup(namespace, name, minCount)
	pg.Spec.ParentCompositePodGroupName = &parent
	pg.Spec.WorkloadRef = &schedulingv1beta1.WorkloadReference{WorkloadName: parent, TemplateName: name}
	if topologyKey != "" {
		pg.Spec.SchedulingConstraints = &schedulingv1beta1.PodGroupSchedulingConstraints{Topology: []schedulingv1beta1.TopologyConstraint{{Key: topologyKey}}}
	}
	return pg
}

// ForeignPodGroup is another scheduler's PodGroup (scheduler-plugins' or Volcano's:
// v1alpha1.NewSigsPodGroup or v1alpha1.NewVolcanoPodGroup as empty) with this spec.
func ForeignPodGroup(empty *unstructured.Unstructured, namespace, name string, spec map[string]any) *unstructured.Unstructured {
	empty.SetNamespace(namespace)
	empty.SetName(name)
	empty.Object["spec"] = spec
	return empty
}

// KAISubGroup is an entry of a KAI PodGroup's spec.subGroups: Parent and Required
// (its topologyConstraint.requiredTopologyLevel) are left out when "", MinMember
// when 0.
type KAISubGroup struct {
	Name, Parent, Required string
	// Preferred is its topologyConstraint.preferredTopologyLevel.
	Preferred string
	MinMember int32
}

// KAIPodGroup is a KAI-Scheduler PodGroup (scheduling.run.ai/v2alpha2) of minMember
// (left out when 0), its spec.topologyConstraint.requiredTopologyLevel required ("" for
// none), and subGroups.
func KAIPodGroup(namespace, name string, minMember int32, required string, subGroups ...KAISubGroup) *unstructured.Unstructured {
	u := v1alpha1.NewKAIPodGroup()
	u.SetNamespace(namespace)
	u.SetName(name)
	spec := map[string]any{}
	if minMember > 0 {
		spec["minMember"] = int64(minMember)
	}
	if required != "" {
		spec["topologyConstraint"] = map[string]any{"requiredTopologyLevel": required}
	}
	var list []any
	for _, sg := range subGroups {
		entry := map[string]any{"name": sg.Name}
		if sg.MinMember > 0 {
			entry["minMember"] = int64(sg.MinMember)
		}
		if sg.Parent != "" {
			entry["parent"] = sg.Parent
		}
		c := map[string]any{}
		if sg.Required != "" {
			c["requiredTopologyLevel"] = sg.Required
		}
		if sg.Preferred != "" {
			c["preferredTopologyLevel"] = sg.Preferred
		}
		if len(c) > 0 {
			entry["topologyConstraint"] = c
		}
		list = append(list, entry)
	}
	if len(list) > 0 {
		spec["subGroups"] = list
	}
	u.Object["spec"] = spec
	return u
}
