package api_test

import (
	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

var _ = Describe("A valid object", func() {
	It("KubeNexusConfig with an empty spec comes back fully defaulted", func() {
		cfg := knc("defaults").Obj()
		Expect(k8sClient.Create(ctx, cfg)).To(Succeed())
		DeferCleanup(func() { Expect(k8sClient.Delete(ctx, cfg)).To(Succeed()) })

		got := &v1alpha1.KubeNexusConfig{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cfg), got)).To(Succeed())
		want := v1alpha1.KubeNexusConfigSpec{
			Scheduler: v1alpha1.SchedulerSpec{
				SchedulerName:   "kubenexus-scheduler",
				ImagePullPolicy: corev1.PullIfNotPresent,
				Replicas:        1,
				LeaderElection: v1alpha1.LeaderElectionSpec{
					Enabled: ptr.To(true), LeaseDurationSeconds: 15, RenewDeadlineSeconds: 10, RetryPeriodSeconds: 2,
				},
				Resources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("512Mi"),
				}},
				ClientConnection: v1alpha1.ClientConnectionSpec{QPS: 50, Burst: 100},
				Verbosity:        2,
			},
			Plugins: v1alpha1.PluginsSpec{
				ProfileClassifier: v1alpha1.ProfileClassifierPlugin{Enabled: ptr.To(true)},
				Coscheduling:      v1alpha1.CoschedulingPlugin{Enabled: ptr.To(true), DefaultScheduleTimeoutSeconds: 60, BackoffSeconds: 10},
				WorkloadAware: v1alpha1.WorkloadAwarePlugin{Enabled: ptr.To(true), Weight: 2, Resources: []v1alpha1.ResourceWeight{
					{Name: "cpu", Weight: 1}, {Name: "memory", Weight: 1}, {Name: "nvidia.com/gpu", Weight: 3},
				}},
				TopologyAware:         v1alpha1.TopologyAwarePlugin{Enabled: ptr.To(true), Weight: 2},
				NetworkFabric:         v1alpha1.NetworkFabricPlugin{Enabled: ptr.To(true), Weight: 3},
				ResourceFragmentation: v1alpha1.ResourceFragmentationPlugin{Enabled: ptr.To(true), Weight: 2, GPUResourceName: "nvidia.com/gpu", ArrivalHalfLifeSeconds: 600, KeepHostsForQueued: ptr.To(false)},
				TenantHardware:        v1alpha1.TenantHardwarePlugin{Enabled: ptr.To(true), Weight: 3},
				NUMATopology:          v1alpha1.NUMATopologyPlugin{Enabled: ptr.To(true), Weight: 1},
				VRAM:                  v1alpha1.VRAMPlugin{Enabled: ptr.To(true), Weight: 3},
				ResourceReservation:   v1alpha1.ResourceReservationPlugin{Enabled: ptr.To(true), Weight: 10},
				Backfill:              v1alpha1.BackfillPlugin{Enabled: ptr.To(true), Weight: 1, SafetyMarginSeconds: ptr.To[int32](30)},
				GangPreemption:        v1alpha1.GangPreemptionPlugin{Enabled: ptr.To(true), PreemptServicesForBatch: ptr.To(false)},
				BindingBackpressure:   v1alpha1.BindingBackpressurePlugin{Enabled: ptr.To(true), MaxBindingsInFlight: ptr.To[int32](64)},
			},
			Webhook: v1alpha1.WebhookSpec{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubenexus.io/enabled": "true"}},
				AutoGang:          []v1alpha1.Integration{"spark", "pytorch", "tensorflow", "xgboost", "mpi", "ray", "jobset", "leaderworkerset"},
				DefaultTier:       v1alpha1.TenantTierBronze,
			},
			Topology: v1alpha1.TopologySpec{Levels: []v1alpha1.TopologyLevel{
				{Name: "nvlink", NodeLabel: "nvidia.com/gpu.clique"},
				{Name: "tor", NodeLabel: "network.kubenexus.io/tor"},
				{Name: "rack", NodeLabel: "network.kubenexus.io/rack"},
				{Name: "zone", NodeLabel: "topology.kubernetes.io/zone"},
			}},
			Volcano: v1alpha1.VolcanoSpec{
				Enabled:        ptr.To(false),
				SchedulerLease: v1alpha1.LeaseReference{Namespace: "volcano-system", Name: "volcano"},
				SchedulerName:  "volcano",
			},
			Kueue:        v1alpha1.KueueSpec{TenantTierFrom: v1alpha1.TenantTierFromNamespace, RetryAfterSeconds: ptr.To[int32](v1alpha1.DefaultKueueRetryAfterSeconds)},
			Reservations: v1alpha1.ReservationsSpec{MaxTTLSeconds: v1alpha1.DefaultReservationMaxTTLSeconds, MaxSlots: v1alpha1.DefaultReservationMaxSlots},
		}
		Expect(cmp.Diff(want, got.Spec)).To(BeEmpty())
	})

	It("KubeNexusConfig keeps what the user set and defaults only the rest", func() {
		cfg := knc("partial").
			Scheduler(func(s *v1alpha1.SchedulerSpec) {
				s.Replicas = 3
				s.ClientConnection.QPS = 200
				s.ClientConnection.Burst = 400
			}).
			Plugins(func(p *v1alpha1.PluginsSpec) { p.Backfill.Enabled = ptr.To(false); p.WorkloadAware.Weight = 7 }).
			Obj()
		Expect(k8sClient.Create(ctx, cfg)).To(Succeed())
		DeferCleanup(func() { Expect(k8sClient.Delete(ctx, cfg)).To(Succeed()) })

		got := &v1alpha1.KubeNexusConfig{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cfg), got)).To(Succeed())
		Expect(got.Spec.Scheduler.Replicas).To(BeEquivalentTo(3))
		Expect(got.Spec.Scheduler.ClientConnection).To(Equal(v1alpha1.ClientConnectionSpec{QPS: 200, Burst: 400}))
		Expect(got.Spec.Scheduler.LeaderElection.Enabled).To(Equal(ptr.To(true)))
		Expect(got.Spec.Plugins.Backfill).To(Equal(v1alpha1.BackfillPlugin{Enabled: ptr.To(false), Weight: 1, SafetyMarginSeconds: ptr.To[int32](30)}))
		Expect(got.Spec.Plugins.WorkloadAware.Weight).To(BeEquivalentTo(7))
		Expect(got.Spec.Plugins.Coscheduling.Enabled).To(Equal(ptr.To(true)))
	})

	It("PodGroup round-trips unchanged, with the network topology mode defaulted", func() {
		ns := newNamespace()
		group := pg("train", ns).MinMember(8).
			MinResources(rl("cpu", "64", "nvidia.com/gpu", "8")).
			ScheduleTimeoutSeconds(120).
			PriorityClassName("training-high").
			MinMemberPerRole("master", 1).MinMemberPerRole("worker", 7).
			NUMASpread(v1alpha1.NUMASpreadPacked).
			Obj()
		group.Spec.NetworkTopology = &v1alpha1.NetworkTopologyPolicy{Level: v1alpha1.NetworkLevelRack}
		sent := group.Spec.DeepCopy()
		Expect(k8sClient.Create(ctx, group)).To(Succeed())

		got := &v1alpha1.PodGroup{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
		sent.NetworkTopology.Mode = v1alpha1.NetworkTopologyPreferred
		Expect(cmp.Diff(*sent, got.Spec)).To(BeEmpty())
	})

	It("ResourceReservation gets one slot and a ten-minute TTL by default", func() {
		ns := newNamespace()
		res := rr("driver", ns, "spark-driver").Owner(v1alpha1.ReservationOwnerPod, "spark-driver").
			Resources(rl("cpu", "4", "memory", "16Gi")).Obj()
		Expect(k8sClient.Create(ctx, res)).To(Succeed())

		got := &v1alpha1.ResourceReservation{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(res), got)).To(Succeed())
		Expect(got.Spec.Slots).To(BeEquivalentTo(1))
		Expect(got.Spec.TTLSeconds).To(BeEquivalentTo(600))
		Expect(got.Spec.Resources.Cpu().String()).To(Equal("4"))
	})

	It("HardwareTier gets cost factor 1 and no borrowing by default", func() {
		tier := hwt("defaults-tier", 40).GPUModels("NVIDIA-L40S").Obj()
		Expect(k8sClient.Create(ctx, tier)).To(Succeed())
		DeferCleanup(func() { Expect(k8sClient.Delete(ctx, tier)).To(Succeed()) })

		got := &v1alpha1.HardwareTier{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(tier), got)).To(Succeed())
		Expect(got.Spec.Borrowing).To(Equal(v1alpha1.BorrowingNever))
		Expect(got.Spec.CostFactor).NotTo(BeNil())
		Expect(got.Spec.CostFactor.String()).To(Equal("1"))
		Expect(got.Spec.GPUModels).To(Equal([]string{"NVIDIA-L40S"}))
	})
})
