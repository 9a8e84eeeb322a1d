package api_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	testutil "github.com/kube-nexus/kubenexus/test/util"
)

// rejectedCreate is one malformed object and what the API server must say about it.
type rejectedCreate struct {
	// obj builds the object in the given namespace (ignored by cluster-scoped kinds).
	obj func(ns string) client.Object
	// want are substrings of the error: the field path and the allowed values.
	want []string
}

// expectRejected asserts that err is a validation error that mentions every want.
func expectRejected(err error, want ...string) {
	GinkgoHelper()
	Expect(err).To(HaveOccurred(), "the API server accepted a malformed object")
	Expect(apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)).To(BeTrue(),
		"want an Invalid or BadRequest error, got %T: %v", err, err)
	for _, w := range want {
		Expect(err.Error()).To(ContainSubstring(w))
	}
}

var (
	pg  = testutil.MakePodGroup
	rr  = testutil.MakeReservation
	hwt = testutil.MakeHardwareTier
	knc = testutil.MakeKubeNexusConfig
	rl  = testutil.ResourceList
)

// unknownField builds an unstructured object of the KubeNexus group with an extra field.
func unknownField(kind, ns string, spec map[string]any) client.Object {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(v1alpha1.GroupVersion.String())
	u.SetKind(kind)
	u.SetGenerateName("unknown-")
	u.SetNamespace(ns)
	return u
}

var _ = Describe("Creating a malformed object", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	DescribeTable("is rejected with a message naming the field",
		func(tc rejectedCreate) {
			obj := tc.obj(ns)
			if obj.GetName() == "" && obj.GetGenerateName() == "" {
				obj.SetGenerateName("bad-")
			}
			expectRejected(k8sClient.Create(ctx, obj), tc.want...)
		},

		// PodGroup
		Entry("PodGroup minMember 0", rejectedCreate{
			obj:  func(ns string) client.Object { return pg("", ns).MinMember(0).Obj() },
			want: []string{"spec.minMember", "greater than or equal to 1"}}),
		Entry("PodGroup negative minMember", rejectedCreate{
			obj:  func(ns string) client.Object { return pg("", ns).MinMember(-3).Obj() },
			want: []string{"spec.minMember", "greater than or equal to 1"}}),
		Entry("PodGroup minMember above 100000", rejectedCreate{
			obj:  func(ns string) client.Object { return pg("", ns).MinMember(200000).Obj() },
			want: []string{"spec.minMember", "less than or equal to 100000"}}),
		Entry("PodGroup zero cpu in minResources", rejectedCreate{
			obj:  func(ns string) client.Object { return pg("", ns).MinMember(2).MinResources(rl("cpu", "0")).Obj() },
			want: []string{"spec.minResources: every quantity must be greater than zero"}}),
		Entry("PodGroup negative memory in minResources", rejectedCreate{
			obj: func(ns string) client.Object {
				return pg("", ns).MinMember(2).MinResources(rl("cpu", "4", "memory", "-1Gi")).Obj()
			},
			want: []string{"spec.minResources: every quantity must be greater than zero"}}),
		Entry("PodGroup with 13 resources in minResources", rejectedCreate{
			obj: func(ns string) client.Object {
				pairs := []string{}
				for i := range 13 {
					pairs = append(pairs, fmt.Sprintf("example.com/r%d", i), "1")
				}
				return pg("", ns).MinMember(2).MinResources(rl(pairs...)).Obj()
			},
			want: []string{"spec.minResources", "must have at most 12 items"}}),
		Entry("PodGroup scheduleTimeoutSeconds 0", rejectedCreate{
			obj:  func(ns string) client.Object { return pg("", ns).ScheduleTimeoutSeconds(0).Obj() },
			want: []string{"spec.scheduleTimeoutSeconds", "greater than or equal to 1"}}),
		Entry("PodGroup scheduleTimeoutSeconds above a day", rejectedCreate{
			obj:  func(ns string) client.Object { return pg("", ns).ScheduleTimeoutSeconds(90000).Obj() },
			want: []string{"spec.scheduleTimeoutSeconds", "less than or equal to 86400"}}),
		Entry("PodGroup priorityClassName that is not a DNS name", rejectedCreate{
			obj:  func(ns string) client.Object { return pg("", ns).PriorityClassName("High_Priority").Obj() },
			want: []string{"spec.priorityClassName", "should match"}}),
		Entry("PodGroup per-role minimum above minMember", rejectedCreate{
			obj: func(ns string) client.Object {
				return pg("", ns).MinMember(8).MinMemberPerRole("worker", 9).Obj()
			},
			want: []string{"spec.minMemberPerRole: every per-role minimum must be at most spec.minMember"}}),
		Entry("PodGroup per-role minimum of 0", rejectedCreate{
			obj: func(ns string) client.Object {
				return pg("", ns).MinMember(8).MinMemberPerRole("worker", 0).Obj()
			},
			want: []string{"spec.minMemberPerRole: every per-role minimum must be at least 1"}}),
		Entry("PodGroup per-role minimum for an invalid role name", rejectedCreate{
			obj: func(ns string) client.Object {
				return pg("", ns).MinMember(8).MinMemberPerRole("Worker!", 2).Obj()
			},
			want: []string{"spec.minMemberPerRole: role names must be lower-case DNS labels"}}),
		Entry("PodGroup network topology mode hard", rejectedCreate{
			obj: func(ns string) client.Object {
				return pg("", ns).NetworkTopology("hard", v1alpha1.NetworkLevelRack).Obj()
			},
			want: []string{"spec.networkTopology.mode", `supported values: "required", "preferred"`}}),
		// Levels are the KubeNexusConfig's (the PodGroup webhook checks the name against
		// them); the schema refuses what can never name one.
		Entry("PodGroup network topology level that is not a DNS label", rejectedCreate{
			obj: func(ns string) client.Object {
				return pg("", ns).NetworkTopology(v1alpha1.NetworkTopologyRequired, "Data_Center").Obj()
			},
			want: []string{"spec.networkTopology.level", "should match"}}),
		Entry("PodGroup network topology with an empty level", rejectedCreate{
			obj: func(ns string) client.Object {
				return pg("", ns).NetworkTopology(v1alpha1.NetworkTopologyRequired, "").Obj()
			},
			want: []string{"spec.networkTopology.level", "should be at least 1 chars long"}}),
		Entry("PodGroup slices whose sizes do not divide", rejectedCreate{
			obj: func(ns string) client.Object {
				return pg("", ns).MinMember(96).NetworkTopology(v1alpha1.NetworkTopologyRequired, v1alpha1.NetworkLevelZone).
					Slices(v1alpha1.NetworkLevelRack, 48, v1alpha1.NetworkLevelNVLink, 20).Obj()
			},
			want: []string{"slices[1].size must divide slices[0].size"}}),
		Entry("PodGroup slice that does not divide minMember", rejectedCreate{
			obj: func(ns string) client.Object {
				return pg("", ns).MinMember(100).NetworkTopology(v1alpha1.NetworkTopologyRequired, v1alpha1.NetworkLevelZone).
					Slices(v1alpha1.NetworkLevelRack, 48).Obj()
			},
			want: []string{"spec.networkTopology.slices[0].size must divide spec.minMember"}}),
		Entry("PodGroup slice of size 0", rejectedCreate{
			obj: func(ns string) client.Object {
				return pg("", ns).MinMember(96).NetworkTopology(v1alpha1.NetworkTopologyRequired, v1alpha1.NetworkLevelZone).
					Slices(v1alpha1.NetworkLevelRack, 0).Obj()
			},
			want: []string{"spec.networkTopology.slices[0].size", "should be greater than or equal to 1"}}),
		Entry("PodGroup with four slice layers", rejectedCreate{
			obj: func(ns string) client.Object {
				return pg("", ns).MinMember(96).NetworkTopology(v1alpha1.NetworkTopologyRequired, v1alpha1.NetworkLevelZone).
					Slices(v1alpha1.NetworkLevelRack, 48, v1alpha1.NetworkLevelToR, 48, v1alpha1.NetworkLevelNVLink, 16, v1alpha1.NetworkLevelNVLink, 16).Obj()
			},
			want: []string{"spec.networkTopology.slices", "must have at most 3 items"}}),
		Entry("PodGroup numaSpread scatter", rejectedCreate{
			obj:  func(ns string) client.Object { return pg("", ns).NUMASpread("scatter").Obj() },
			want: []string{"spec.numaSpread", `supported values: "packed", "balanced", "isolated"`}}),
		Entry("PodGroup recovery policy Retry", rejectedCreate{
			obj: func(ns string) client.Object {
				o := pg("", ns).Obj()
				o.Spec.Recovery = &v1alpha1.GangRecovery{Policy: "Retry"}
				return o
			},
			want: []string{"spec.recovery.policy", `supported values: "Repair", "RestartGang", "None"`}}),
		Entry("PodGroup recovery timeout above a day", rejectedCreate{
			obj: func(ns string) client.Object {
				o := pg("", ns).Obj()
				o.Spec.Recovery = &v1alpha1.GangRecovery{TimeoutSeconds: 90000}
				return o
			},
			want: []string{"spec.recovery.timeoutSeconds", "less than or equal to 86400"}}),
		Entry("PodGroup with a misspelt field", rejectedCreate{
			obj: func(ns string) client.Object {
				return unknownField("PodGroup", ns, map[string]any{"minMember": 2, "minMembers": 2})
			},
			want: []string{`unknown field "spec.minMembers"`}}),

		// ResourceReservation
		Entry("ResourceReservation owned by a Deployment", rejectedCreate{
			obj: func(ns string) client.Object {
				return rr("", ns, "x").Owner("Deployment", "web").Obj()
			},
			want: []string{"spec.owner.kind", `supported values: "PodGroup", "Pod"`}}),
		Entry("ResourceReservation with an empty owner name", rejectedCreate{
			obj:  func(ns string) client.Object { return rr("", ns, "").Obj() },
			want: []string{"spec.owner.name"}}),
		Entry("ResourceReservation with an invalid owner name", rejectedCreate{
			obj:  func(ns string) client.Object { return rr("", ns, "Spark_Driver").Obj() },
			want: []string{"spec.owner.name", "should match"}}),
		Entry("ResourceReservation with no resources", rejectedCreate{
			obj:  func(ns string) client.Object { return rr("", ns, "pg").Resources(rl()).Obj() },
			want: []string{"spec.resources", "should have at least 1 properties"}}),
		Entry("ResourceReservation of zero cpu", rejectedCreate{
			obj:  func(ns string) client.Object { return rr("", ns, "pg").Resources(rl("cpu", "0")).Obj() },
			want: []string{"spec.resources: every quantity must be greater than zero"}}),
		Entry("ResourceReservation of negative GPUs", rejectedCreate{
			obj: func(ns string) client.Object {
				return rr("", ns, "pg").Resources(rl("cpu", "2", "nvidia.com/gpu", "-2")).Obj()
			},
			want: []string{"spec.resources: every quantity must be greater than zero"}}),
		Entry("ResourceReservation with negative slots", rejectedCreate{
			obj:  func(ns string) client.Object { return rr("", ns, "pg").Slots(-1).Obj() },
			want: []string{"spec.slots", "greater than or equal to 1"}}),
		Entry("ResourceReservation with too many slots", rejectedCreate{
			obj:  func(ns string) client.Object { return rr("", ns, "pg").Slots(20000).Obj() },
			want: []string{"spec.slots", "less than or equal to 10000"}}),
		Entry("ResourceReservation with a TTL in the past", rejectedCreate{
			obj:  func(ns string) client.Object { return rr("", ns, "pg").TTL(-60).Obj() },
			want: []string{"spec.ttlSeconds", "greater than or equal to 1"}}),
		Entry("ResourceReservation with a TTL above a week", rejectedCreate{
			obj:  func(ns string) client.Object { return rr("", ns, "pg").TTL(10_000_000).Obj() },
			want: []string{"spec.ttlSeconds", "less than or equal to 604800"}}),
		Entry("ResourceReservation with both a node and a node selector", rejectedCreate{
			obj: func(ns string) client.Object {
				o := rr("", ns, "pg").Node("n1").Obj()
				o.Spec.NodeSelector = map[string]string{v1alpha1.LabelRack: "r1"}
				return o
			},
			want: []string{"spec.nodeSelector: only for reservations without spec.nodeName"}}),
		Entry("ResourceReservation with nine node selector labels", rejectedCreate{
			obj: func(ns string) client.Object {
				o := rr("", ns, "pg").Obj()
				o.Spec.NodeSelector = map[string]string{}
				for i := range 9 {
					o.Spec.NodeSelector[fmt.Sprintf("k%d", i)] = "v"
				}
				return o
			},
			want: []string{"spec.nodeSelector", "must have at most 8 items"}}),
		Entry("ResourceReservation on an invalid node name", rejectedCreate{
			obj:  func(ns string) client.Object { return rr("", ns, "pg").Node("Node_1").Obj() },
			want: []string{"spec.nodeName", "should match"}}),

		// HardwareTier
		Entry("HardwareTier rank 0", rejectedCreate{
			obj:  func(string) client.Object { return hwt("", 0).Obj() },
			want: []string{"spec.rank", "greater than or equal to 1"}}),
		Entry("HardwareTier rank 101", rejectedCreate{
			obj:  func(string) client.Object { return hwt("", 101).Obj() },
			want: []string{"spec.rank", "less than or equal to 100"}}),
		Entry("HardwareTier with an empty node selector", rejectedCreate{
			obj:  func(string) client.Object { return hwt("", 10).Selector(metav1.LabelSelector{}).Obj() },
			want: []string{"spec.nodeSelector must have at least one matchLabels entry or matchExpressions term, or spec.deviceSelectors must be set"}}),
		Entry("HardwareTier with an empty device selector", rejectedCreate{
			obj: func(string) client.Object {
				t := hwt("", 10).Selector(metav1.LabelSelector{}).Obj()
				t.Spec.DeviceSelectors = []v1alpha1.DeviceSelector{{}}
				return t
			},
			want: []string{"spec.deviceSelectors[0]", "a device selector needs a driver, attributes or capacity"}}),
		Entry("HardwareTier asking for a device attribute with no values", rejectedCreate{
			obj: func(string) client.Object {
				t := hwt("", 10).Obj()
				t.Spec.DeviceSelectors = []v1alpha1.DeviceSelector{{Attributes: []v1alpha1.DeviceAttributeRequirement{{Name: "productName"}}}}
				return t
			},
			want: []string{"spec.deviceSelectors[0].attributes[0].values"}}),
		Entry("HardwareTier open to no tenant tier", rejectedCreate{
			obj:  func(string) client.Object { return hwt("", 10).Tenants().Obj() },
			want: []string{"spec.allowedTenantTiers: Required value"}}),
		Entry("HardwareTier open to a platinum tenant tier", rejectedCreate{
			obj:  func(string) client.Object { return hwt("", 10).Tenants("platinum").Obj() },
			want: []string{"spec.allowedTenantTiers[0]", `supported values: "gold", "silver", "bronze"`}}),
		Entry("HardwareTier listing a tenant tier twice", rejectedCreate{
			obj: func(string) client.Object {
				return hwt("", 10).Tenants(v1alpha1.TenantTierGold, v1alpha1.TenantTierGold).Obj()
			},
			want: []string{"spec.allowedTenantTiers[1]", "Duplicate value"}}),
		Entry("HardwareTier with costFactor 0", rejectedCreate{
			obj:  func(string) client.Object { return hwt("", 10).CostFactor("0").Obj() },
			want: []string{"spec.costFactor must be greater than zero"}}),
		Entry("HardwareTier with a negative costFactor", rejectedCreate{
			obj:  func(string) client.Object { return hwt("", 10).CostFactor("-1.5").Obj() },
			want: []string{"spec.costFactor must be greater than zero"}}),
		Entry("HardwareTier borrowing Always", rejectedCreate{
			obj:  func(string) client.Object { return hwt("", 10).Borrowing("Always").Obj() },
			want: []string{"spec.borrowing", `supported values: "Never", "Preemptible"`}}),
		Entry("HardwareTier with an empty GPU model", rejectedCreate{
			obj:  func(string) client.Object { return hwt("", 10).GPUModels("NVIDIA-H100-80GB-HBM3", "").Obj() },
			want: []string{"spec.gpuModels[1]", "at least 1 chars"}}),

		// KubeNexusConfig
		Entry("KubeNexusConfig with two topology levels kept whole", rejectedCreate{
			obj: func(string) client.Object {
				c := knc("").Obj()
				c.Spec.Topology.Levels = []v1alpha1.TopologyLevel{
					{Name: "nvlink", NodeLabel: v1alpha1.LabelGPUClique, KeepWhole: ptr.To(true)},
					{Name: "rack", NodeLabel: v1alpha1.LabelRack, KeepWhole: ptr.To(true)},
				}
				return c
			},
			want: []string{"spec.topology.levels", "at most one level may set keepWhole: true"}}),
		Entry("KubeNexusConfig scheduler name with a space", rejectedCreate{
			obj: func(string) client.Object {
				return knc("").Scheduler(func(s *v1alpha1.SchedulerSpec) { s.SchedulerName = "Kube Nexus" }).Obj()
			},
			want: []string{"spec.scheduler.schedulerName", "should match"}}),
		Entry("KubeNexusConfig image with whitespace", rejectedCreate{
			obj: func(string) client.Object {
				return knc("").Scheduler(func(s *v1alpha1.SchedulerSpec) { s.Image = "registry.example.com/kubenexus scheduler:v1" }).Obj()
			},
			want: []string{"spec.scheduler.image", "should match"}}),
		Entry("KubeNexusConfig imagePullPolicy Sometimes", rejectedCreate{
			obj: func(string) client.Object {
				return knc("").Scheduler(func(s *v1alpha1.SchedulerSpec) { s.ImagePullPolicy = "Sometimes" }).Obj()
			},
			want: []string{"spec.scheduler.imagePullPolicy", `supported values: "Always", "IfNotPresent", "Never"`}}),
		Entry("KubeNexusConfig with 10 scheduler replicas", rejectedCreate{
			obj: func(string) client.Object {
				return knc("").Scheduler(func(s *v1alpha1.SchedulerSpec) { s.Replicas = 10 }).Obj()
			},
			want: []string{"spec.scheduler.replicas", "less than or equal to 5"}}),
		Entry("KubeNexusConfig with 3 replicas and no leader election", rejectedCreate{
			obj: func(string) client.Object {
				return knc("").Scheduler(func(s *v1alpha1.SchedulerSpec) {
					s.Replicas = 3
					s.LeaderElection.Enabled = ptr.To(false)
				}).Obj()
			},
			want: []string{"spec.scheduler.replicas greater than 1 requires spec.scheduler.leaderElection.enabled=true"}}),
		Entry("KubeNexusConfig renew deadline not below the lease duration", rejectedCreate{
			obj: func(string) client.Object {
				return knc("").Scheduler(func(s *v1alpha1.SchedulerSpec) {
					s.LeaderElection.LeaseDurationSeconds = 10
					s.LeaderElection.RenewDeadlineSeconds = 10
				}).Obj()
			},
			want: []string{"spec.scheduler.leaderElection.renewDeadlineSeconds must be less than leaseDurationSeconds"}}),
		Entry("KubeNexusConfig negative client QPS", rejectedCreate{
			obj: func(string) client.Object {
				return knc("").Scheduler(func(s *v1alpha1.SchedulerSpec) { s.ClientConnection.QPS = -5 }).Obj()
			},
			want: []string{"spec.scheduler.clientConnection.qps", "greater than or equal to 1"}}),
		Entry("KubeNexusConfig consolidation budget of 0 pods per gang", rejectedCreate{
			obj: func(string) client.Object {
				c := knc("").Obj()
				c.Spec.Plugins.GangPreemption.Consolidation = &v1alpha1.GangConsolidation{MaxEvictionsPerGang: ptr.To[int32](0)}
				return c
			},
			want: []string{"spec.plugins.gangPreemption.consolidation.maxEvictionsPerGang", "greater than or equal to 1"}}),
		Entry("KubeNexusConfig consolidation budget above 10000 pods an hour", rejectedCreate{
			obj: func(string) client.Object {
				c := knc("").Obj()
				c.Spec.Plugins.GangPreemption.Consolidation = &v1alpha1.GangConsolidation{MaxEvictionsPerHour: ptr.To[int32](20000)}
				return c
			},
			want: []string{"spec.plugins.gangPreemption.consolidation.maxEvictionsPerHour", "less than or equal to 10000"}}),
		Entry("KubeNexusConfig burst below QPS", rejectedCreate{
			obj: func(string) client.Object {
				return knc("").Scheduler(func(s *v1alpha1.SchedulerSpec) {
					s.ClientConnection.QPS = 100
					s.ClientConnection.Burst = 50
				}).Obj()
			},
			want: []string{"spec.scheduler.clientConnection.burst must be greater than or equal to qps"}}),
		Entry("KubeNexusConfig percentageOfNodesToScore 150", rejectedCreate{
			obj: func(string) client.Object {
				return knc("").Scheduler(func(s *v1alpha1.SchedulerSpec) { s.PercentageOfNodesToScore = 150 }).Obj()
			},
			want: []string{"spec.scheduler.percentageOfNodesToScore", "less than or equal to 100"}}),
		Entry("KubeNexusConfig WorkloadAware weight 500", rejectedCreate{
			obj: func(string) client.Object {
				return knc("").Plugins(func(p *v1alpha1.PluginsSpec) { p.WorkloadAware.Weight = 500 }).Obj()
			},
			want: []string{"spec.plugins.workloadAware.weight", "less than or equal to 100"}}),
		Entry("KubeNexusConfig negative TenantHardware weight", rejectedCreate{
			obj: func(string) client.Object {
				return knc("").Plugins(func(p *v1alpha1.PluginsSpec) { p.TenantHardware.Weight = -1 }).Obj()
			},
			want: []string{"spec.plugins.tenantHardware.weight", "greater than or equal to 1"}}),
		Entry("KubeNexusConfig no binding in flight", rejectedCreate{
			obj: func(string) client.Object {
				return knc("").Plugins(func(p *v1alpha1.PluginsSpec) { p.BindingBackpressure.MaxBindingsInFlight = ptr.To[int32](0) }).Obj()
			},
			want: []string{"spec.plugins.bindingBackpressure.maxBindingsInFlight", "greater than or equal to 1"}}),
		Entry("KubeNexusConfig Coscheduling timeout above a day", rejectedCreate{
			obj: func(string) client.Object {
				return knc("").Plugins(func(p *v1alpha1.PluginsSpec) { p.Coscheduling.DefaultScheduleTimeoutSeconds = 100000 }).Obj()
			},
			want: []string{"spec.plugins.coscheduling.defaultScheduleTimeoutSeconds", "less than or equal to 86400"}}),
		Entry("KubeNexusConfig WorkloadAware resource weight 0", rejectedCreate{
			obj: func(string) client.Object {
				return knc("").Plugins(func(p *v1alpha1.PluginsSpec) {
					p.WorkloadAware.Resources = []v1alpha1.ResourceWeight{{Name: "cpu", Weight: 0}}
				}).Obj()
			},
			want: []string{"spec.plugins.workloadAware.resources[0].weight", "greater than or equal to 1"}}),
		Entry("KubeNexusConfig WorkloadAware resource listed twice", rejectedCreate{
			obj: func(string) client.Object {
				return knc("").Plugins(func(p *v1alpha1.PluginsSpec) {
					p.WorkloadAware.Resources = []v1alpha1.ResourceWeight{{Name: "cpu", Weight: 1}, {Name: "cpu", Weight: 2}}
				}).Obj()
			},
			want: []string{"spec.plugins.workloadAware.resources[1]", "Duplicate value"}}),
		Entry("KubeNexusConfig GPU resource name without a domain", rejectedCreate{
			obj: func(string) client.Object {
				return knc("").Plugins(func(p *v1alpha1.PluginsSpec) { p.ResourceFragmentation.GPUResourceName = "gpu" }).Obj()
			},
			want: []string{"spec.plugins.resourceFragmentation.gpuResourceName", "should match"}}),
		Entry("KubeNexusConfig with an unknown plugin", rejectedCreate{
			obj: func(string) client.Object {
				return unknownField("KubeNexusConfig", "", map[string]any{"plugins": map[string]any{"gpuSharing": map[string]any{"enabled": true}}})
			},
			want: []string{`unknown field "spec.plugins.gpuSharing"`}}),
		Entry("KubeNexusConfig auto-gang for an unsupported integration", rejectedCreate{
			obj: func(string) client.Object {
				return knc("").Webhook(func(w *v1alpha1.WebhookSpec) { w.AutoGang = []v1alpha1.Integration{"spark", "flink"} }).Obj()
			},
			want: []string{"spec.webhook.autoGang[1]", `supported values: "spark", "pytorch"`}}),
		Entry("KubeNexusConfig default tier platinum", rejectedCreate{
			obj: func(string) client.Object {
				return knc("").Webhook(func(w *v1alpha1.WebhookSpec) { w.DefaultTier = "platinum" }).Obj()
			},
			want: []string{"spec.webhook.defaultTier", `supported values: "gold", "silver", "bronze"`}}),
	)
})

var _ = Describe("Updating an object", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("refuses a change of a reservation's owner and keeps the stored owner", func() {
		res := rr("held", ns, "train-a").Obj()
		Expect(k8sClient.Create(ctx, res)).To(Succeed())
		res.Spec.Owner.Name = "train-b"
		expectRejected(k8sClient.Update(ctx, res), "spec.owner is immutable")

		stored := &v1alpha1.ResourceReservation{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(res), stored)).To(Succeed())
		Expect(stored.Spec.Owner.Name).To(Equal("train-a"))
	})

	It("refuses moving a pinned reservation to another node or unpinning it", func() {
		res := rr("pinned", ns, "train-a").Node("node-1").Obj()
		Expect(k8sClient.Create(ctx, res)).To(Succeed())

		moved := res.DeepCopy()
		moved.Spec.NodeName = "node-2"
		expectRejected(k8sClient.Update(ctx, moved), "spec.nodeName is immutable once set")

		unpinned := res.DeepCopy()
		unpinned.Spec.NodeName = ""
		expectRejected(k8sClient.Update(ctx, unpinned), "spec.nodeName is immutable once set")
	})

	It("lets an unpinned reservation be pinned", func() {
		res := rr("floating", ns, "train-a").Obj()
		Expect(k8sClient.Create(ctx, res)).To(Succeed())
		res.Spec.NodeName = "node-1"
		Expect(k8sClient.Update(ctx, res)).To(Succeed())
	})

	It("refuses an unknown PodGroup phase in status", func() {
		group := pg("phase", ns).MinMember(2).Obj()
		Expect(k8sClient.Create(ctx, group)).To(Succeed())
		group.Status.Phase = "Done"
		expectRejected(k8sClient.Status().Update(ctx, group), "status.phase", `supported values: "Pending", "Scheduling"`)
	})

	It("refuses raising a per-role minimum above minMember and keeps the stored spec", func() {
		group := pg("roles", ns).MinMember(4).MinMemberPerRole("driver", 1).Obj()
		Expect(k8sClient.Create(ctx, group)).To(Succeed())
		group.Spec.MinMemberPerRole["driver"] = 5
		expectRejected(k8sClient.Update(ctx, group), "spec.minMemberPerRole: every per-role minimum must be at most spec.minMember")

		stored := &v1alpha1.PodGroup{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(group), stored)).To(Succeed())
		Expect(stored.Spec.MinMemberPerRole).To(Equal(map[string]int32{"driver": 1}))
	})
})
