package operator_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	testutil "github.com/kube-nexus/kubenexus/test/util"
)

// A tenant may create ResourceReservations in its namespace; each is admitted as
// its pods would be: on hardware its tier may use, within its quota and within the
// KubeNexusConfig's bounds.
var _ = Describe("ResourceReservation admission", func() {
	It("refuses a bronze tenant's reservation on gold-only hardware, beyond its quota or above the bounds, naming the field and the limit", func() {
		const bronze, gold = "rr-tenant-bronze", "rr-tenant-gold"
		for ns, tier := range map[string]string{bronze: "bronze", gold: "gold"} {
			Expect(k8sClient.Create(suiteCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{v1alpha1.LabelTenantTier: tier}}})).To(Succeed())
		}
		node := testutil.MakeNode("rr-h100-7").Capacity("cpu", "64", "nvidia.com/gpu", "8").Label("hardware.example.com/tier", "rr-premium").Obj()
		Expect(k8sClient.Create(suiteCtx, node)).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, testutil.MakeHardwareTier("rr-premium", 100).Tenants(v1alpha1.TenantTierGold).Obj())).To(Succeed())
		// The manager's cache has the node and the tier once the tier's status counts it.
		Eventually(func() int32 {
			t := &v1alpha1.HardwareTier{}
			Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: "rr-premium"}, t)).To(Succeed())
			return t.Status.Nodes
		}).WithTimeout(20 * time.Second).Should(Equal(int32(1)))
		gpus := testutil.ResourceList("nvidia.com/gpu", "8")

		err := k8sClient.Create(suiteCtx, testutil.MakeReservation("pinned", bronze, "train").Node("rr-h100-7").Resources(gpus).Slots(1).Obj())
		Expect(err).To(MatchError(And(ContainSubstring("spec.nodeName"),
			ContainSubstring("node rr-h100-7 is in HardwareTier rr-premium, which admits tenant tiers [gold]; tenant tier bronze may not hold capacity there"),
			ContainSubstring("namespace "+bronze+" is tenant tier bronze"))))
		Expect(k8sClient.Create(suiteCtx, testutil.MakeReservation("pinned", gold, "train").Node("rr-h100-7").Resources(gpus).Slots(1).Obj())).To(Succeed())

		err = k8sClient.Create(suiteCtx, testutil.MakeReservation("many", bronze, "train").Resources(gpus).Slots(5000).Obj())
		Expect(err).To(MatchError(And(ContainSubstring("spec.slots"), ContainSubstring("must be at most 1000 (KubeNexusConfig spec.reservations.maxSlots)"))))
		err = k8sClient.Create(suiteCtx, testutil.MakeReservation("week", bronze, "train").Resources(gpus).TTL(7*24*3600).Obj())
		Expect(err).To(MatchError(And(ContainSubstring("spec.ttlSeconds"), ContainSubstring("must be at most 86400"))))
		badSelector := testutil.MakeReservation("rack", bronze, "train").Resources(gpus).Obj()
		badSelector.Spec.NodeSelector = map[string]string{"network.kubenexus.io/rack": "not a label value!"}
		err = k8sClient.Create(suiteCtx, badSelector)
		Expect(err).To(MatchError(And(ContainSubstring("spec.nodeSelector"), ContainSubstring("not a label value!"))))

		// Quota: 16 GPUs, 8 used by the namespace's pods (no quota controller runs
		// here: the status it would write).
		quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "gpus", Namespace: bronze},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("16")}}}
		Expect(k8sClient.Create(suiteCtx, quota)).To(Succeed())
		quota.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard, Used: corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("8")}}
		Expect(k8sClient.Status().Update(suiteCtx, quota)).To(Succeed())
		err = k8sClient.Create(suiteCtx, testutil.MakeReservation("big", bronze, "train").Resources(gpus).Slots(4).Obj())
		Expect(err).To(MatchError(And(ContainSubstring("spec.resources"),
			ContainSubstring("ResourceQuota gpus of namespace "+bronze+": requests.nvidia.com/gpu: 32 reserved here + 0 by its other reservations + 8 used by its pods = 40, above the hard limit 16"))))
		Expect(k8sClient.Create(suiteCtx, testutil.MakeReservation("fits", bronze, "train").Resources(gpus).Slots(1).Obj())).To(Succeed())
		err = k8sClient.Create(suiteCtx, testutil.MakeReservation("one-more", bronze, "other").Resources(gpus).Slots(1).Obj())
		Expect(err).To(MatchError(ContainSubstring("8 reserved here + 8 by its other reservations + 8 used by its pods = 24")))
		// Growing a stored one is checked the same way, and leaves it as it was.
		Eventually(func() error {
			rr := &v1alpha1.ResourceReservation{}
			if err := k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: bronze, Name: "fits"}, rr); err != nil {
				return err
			}
			rr.Spec.Slots = 2
			return k8sClient.Update(suiteCtx, rr)
		}).Should(MatchError(ContainSubstring("above the hard limit 16")))
		rr := &v1alpha1.ResourceReservation{}
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: bronze, Name: "fits"}, rr)).To(Succeed())
		Expect(rr.Spec.Slots).To(Equal(int32(1)))
		// The owner's pods, pending and counted by the quota already, are what a
		// reservation holds room for: they are not charged twice.
		Expect(k8sClient.Delete(suiteCtx, rr)).To(Succeed())
		Expect(k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(quota), quota)).To(Succeed())
		quota.Spec.Hard = corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("48")}
		Expect(k8sClient.Update(suiteCtx, quota)).To(Succeed())
		quota.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard, Used: corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("8")}}
		Expect(k8sClient.Status().Update(suiteCtx, quota)).To(Succeed())
		// The API server's quota admission counts the two pods in: 24 used.
		for _, name := range []string{"other-0", "other-1"} {
			Expect(k8sClient.Create(suiteCtx, testutil.MakePod(name, bronze).PodGroup("other").Req("nvidia.com/gpu", "8").Limit("nvidia.com/gpu", "8").Obj())).To(Succeed())
		}
		err = k8sClient.Create(suiteCtx, testutil.MakeReservation("six", bronze, "other").Resources(gpus).Slots(6).Obj())
		Expect(err).To(MatchError(ContainSubstring("32 reserved here + 0 by its other reservations + 24 used by its pods = 56, above the hard limit 48")))
		Expect(k8sClient.Create(suiteCtx, testutil.MakeReservation("two", bronze, "other").Resources(gpus).Slots(2).Obj())).To(Succeed())
	})
})
