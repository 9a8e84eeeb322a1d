package operator_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/controllers/resourcereservation"
	testutil "github.com/kube-nexus/kubenexus/test/util"
)

var _ = Describe("ResourceReservation", func() {
	const ns = "reservations"

	get := func(name string) *v1alpha1.ResourceReservation {
		rr := &v1alpha1.ResourceReservation{}
		ExpectWithOffset(1, k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: name}, rr)).To(Succeed())
		return rr
	}
	state := func(name string) func() string {
		return func() string {
			rr := get(name)
			c := meta.FindStatusCondition(rr.Status.Conditions, resourcereservation.ConditionHeld)
			if c == nil {
				return string(rr.Status.Phase)
			}
			return string(rr.Status.Phase) + "/" + c.Reason
		}
	}

	It("is released at its TTL or when its owner goes, across a manager restart", func() {
		Expect(k8sClient.Create(suiteCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		for _, pg := range []string{"train-a", "train-b"} {
			Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup(pg, ns).MinMember(2).Obj())).To(Succeed())
		}
		Expect(k8sClient.Create(suiteCtx, testutil.MakeReservation("short-ttl", ns, "train-a").TTL(4).Obj())).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, testutil.MakeReservation("owner-goes", ns, "train-b").Obj())).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, testutil.MakeReservation("kept", ns, "train-a").Obj())).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, testutil.MakeReservation("no-driver", ns, "").
			Owner(v1alpha1.ReservationOwnerPod, "spark-driver-404").Obj())).To(Succeed())

		for _, name := range []string{"short-ttl", "owner-goes", "kept"} {
			Eventually(state(name)).Should(Equal("Pending/Holding"), name)
		}
		rr := get("short-ttl")
		Expect(rr.Status.ExpireTime.Time).To(BeTemporally("~", rr.CreationTimestamp.Add(4*time.Second), time.Second))
		Eventually(state("no-driver")).Should(Equal("Released/OwnerDeleted"))

		// With the manager down, the TTL passes and an owner is deleted.
		stopManager()
		Eventually(managerDone).WithTimeout(30 * time.Second).Should(BeClosed())
		pg := &v1alpha1.PodGroup{}
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: "train-b"}, pg)).To(Succeed())
		Expect(k8sClient.Delete(suiteCtx, pg)).To(Succeed())
		time.Sleep(time.Until(rr.Status.ExpireTime.Time))
		startManager()

		Eventually(state("short-ttl")).WithTimeout(2 * reconcilePeriod).Should(Equal("Expired/TTLExpired"))
		Eventually(state("owner-goes")).WithTimeout(2 * reconcilePeriod).Should(Equal("Released/OwnerDeleted"))
		Consistently(state("kept")).WithTimeout(2 * reconcilePeriod).Should(Equal("Pending/Holding"))

		// With the manager up, deleting the owner releases at once.
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: "train-a"}, pg)).To(Succeed())
		Expect(k8sClient.Delete(suiteCtx, pg)).To(Succeed())
		Eventually(state("kept")).WithTimeout(2 * reconcilePeriod).Should(Equal("Released/OwnerDeleted"))
		Expect(meta.FindStatusCondition(get("kept").Status.Conditions, resourcereservation.ConditionHeld).Message).
			To(Equal("PodGroup train-a was deleted; the capacity is released."))
	})
})
