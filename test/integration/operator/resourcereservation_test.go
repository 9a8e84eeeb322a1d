package operator_test

import (
	"context"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/controllers"
	"github.com/kube-nexus/kubenexus/controllers/resourcereservation"
	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/testenv"
)

var _ = Describe("ResourceReservation", func() {
	const ns = "reservations"

	getIn := func(namespace, name string) *v1alpha1.ResourceReservation {
		rr := &v1alpha1.ResourceReservation{}
		ExpectWithOffset(2, k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: namespace, Name: name}, rr)).To(Succeed())
		return rr
	}
	get := func(name string) *v1alpha1.ResourceReservation { return getIn(ns, name) }
	// phaseReason is "<phase>/<Held reason>", or the phase alone without a Held condition.
	phaseReason := func(rr *v1alpha1.ResourceReservation) string {
		c := meta.FindStatusCondition(rr.Status.Conditions, resourcereservation.ConditionHeld)
		if c == nil {
			return string(rr.Status.Phase)
		}
		return string(rr.Status.Phase) + "/" + c.Reason
	}
	stateIn := func(namespace, name string) func() string {
		return func() string { return phaseReason(getIn(namespace, name)) }
	}
	state := func(name string) func() string { return stateIn(ns, name) }
	held := func(namespace, name string) string {
		return meta.FindStatusCondition(getIn(namespace, name).Status.Conditions, resourcereservation.ConditionHeld).Message
	}

	It("is released at its TTL or when its owner goes, across a manager restart", func() {
		Expect(k8sClient.Create(suiteCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		for _, pg := range []string{"train-a", "train-b"} {
			Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup(pg, ns).MinMember(2).Obj())).To(Succeed())
		}
		Expect(k8sClient.Create(suiteCtx, testutil.MakeReservation("short-ttl", ns, "train-a").TTL(4).Obj())).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, testutil.MakeReservation("owner-goes", ns, "train-b").Obj())).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, testutil.MakeReservation("kept", ns, "train-a").Obj())).To(Succeed())
		// Owners that never appear: the reservation is held for them until its TTL.
		Expect(k8sClient.Create(suiteCtx, testutil.MakeReservation("no-driver", ns, "").
			Owner(v1alpha1.ReservationOwnerPod, "spark-driver-404").Obj())).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, testutil.MakeReservation("no-gang", ns, "train-404").TTL(4).Obj())).To(Succeed())

		for _, name := range []string{"short-ttl", "owner-goes", "kept"} {
			Eventually(state(name)).Should(Equal("Pending/Holding"), name)
		}
		rr := get("short-ttl")
		Expect(rr.Status.ExpireTime.Time).To(BeTemporally("~", rr.CreationTimestamp.Add(4*time.Second), time.Second))
		Expect(get("owner-goes").Status.OwnerUID).NotTo(BeEmpty())
		Eventually(state("no-driver")).Should(Equal("Pending/WaitingForOwner"))
		noDriver := get("no-driver")
		Expect(noDriver.Status.OwnerUID).To(BeEmpty())
		Expect(held(ns, "no-driver")).To(Equal("Pod spark-driver-404 does not exist yet; held for it until " +
			noDriver.Status.ExpireTime.UTC().Format(time.RFC3339) + "."))
		Eventually(state("no-gang")).Should(Equal("Pending/WaitingForOwner"))

		// With the manager down, the TTL passes and an owner is deleted.
		stopManager()
		Eventually(managerDone).WithTimeout(30 * time.Second).Should(BeClosed())
		pg := &v1alpha1.PodGroup{}
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: "train-b"}, pg)).To(Succeed())
		Expect(k8sClient.Delete(suiteCtx, pg)).To(Succeed())
		time.Sleep(time.Until(get("no-gang").Status.ExpireTime.Time))
		startManager()

		Eventually(state("short-ttl")).WithTimeout(2 * reconcilePeriod).Should(Equal("Expired/TTLExpired"))
		Eventually(state("no-gang")).WithTimeout(2 * reconcilePeriod).Should(Equal("Expired/TTLExpired"))
		// Seen before the restart (status.ownerUID), so its absence is a deletion.
		Eventually(state("owner-goes")).WithTimeout(2 * reconcilePeriod).Should(Equal("Released/OwnerDeleted"))
		Consistently(state("kept")).WithTimeout(2 * reconcilePeriod).Should(Equal("Pending/Holding"))
		Expect(state("no-driver")()).To(Equal("Pending/WaitingForOwner"))

		// With the manager up, deleting the owner releases at once.
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: "train-a"}, pg)).To(Succeed())
		Expect(k8sClient.Delete(suiteCtx, pg)).To(Succeed())
		Eventually(state("kept")).WithTimeout(2 * reconcilePeriod).Should(Equal("Released/OwnerDeleted"))
		Expect(meta.FindStatusCondition(get("kept").Status.Conditions, resourcereservation.ConditionHeld).Message).
			To(Equal("PodGroup train-a was deleted; the capacity is released."))

		// Each release is reported once, on the reservation.
		notes := func(name, reason string) func() ([]string, error) {
			return func() ([]string, error) { return testenv.EventNotes(suiteCtx, k8sClient, ns, name, reason) }
		}
		Eventually(notes("kept", resourcereservation.ReasonOwnerDeleted)).WithTimeout(testutil.Timeout).Should(ConsistOf("Normal: PodGroup train-a was deleted; the capacity is released."))
		Eventually(notes("short-ttl", resourcereservation.ReasonTTLExpired)).WithTimeout(testutil.Timeout).Should(ConsistOf("Warning: Not consumed within ttlSeconds=4; the capacity is released."))
		Expect(notes("no-driver", resourcereservation.ReasonWaitingForOwner)()).To(BeEmpty())
	})

	It("waits for an owner created after it, then is released when that owner goes", func() {
		const lateNS = "reservations-owner-later"
		Expect(k8sClient.Create(suiteCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: lateNS}})).To(Succeed())

		// Every phase/reason the reservations pass through, in order, from a watch
		// started before they exist.
		wc, err := client.NewWithWatch(restConfig, client.Options{Scheme: controllers.NewScheme()})
		Expect(err).NotTo(HaveOccurred())
		watchCtx, stopWatch := context.WithCancel(suiteCtx)
		defer stopWatch()
		w, err := wc.Watch(watchCtx, &v1alpha1.ResourceReservationList{}, client.InNamespace(lateNS))
		Expect(err).NotTo(HaveOccurred())
		defer w.Stop()
		var mu sync.Mutex
		seen := map[string][]string{}
		go func() {
			defer GinkgoRecover()
			for ev := range w.ResultChan() {
				if rr, ok := ev.Object.(*v1alpha1.ResourceReservation); ok && rr.Status.Phase != "" {
					mu.Lock()
					seen[rr.Name] = append(seen[rr.Name], phaseReason(rr))
					mu.Unlock()
				}
			}
		}()
		history := func(name string) []string {
			mu.Lock()
			defer mu.Unlock()
			return append([]string(nil), seen[name]...)
		}

		Expect(k8sClient.Create(suiteCtx, testutil.MakeReservation("early", lateNS, "late").Obj())).To(Succeed())
		Eventually(stateIn(lateNS, "early")).Should(Equal("Pending/WaitingForOwner"))
		Consistently(stateIn(lateNS, "early")).WithTimeout(2 * time.Second).Should(Equal("Pending/WaitingForOwner"))
		Expect(held(lateNS, "early")).To(HavePrefix("PodGroup late does not exist yet; held for it until "))

		pg := testutil.MakePodGroup("late", lateNS).MinMember(2).Obj()
		Expect(k8sClient.Create(suiteCtx, pg)).To(Succeed())
		Eventually(stateIn(lateNS, "early")).Should(Equal("Pending/Holding"))
		Expect(getIn(lateNS, "early").Status.OwnerUID).To(Equal(string(pg.UID)))
		Eventually(func() []string { return history("early") }).Should(ContainElement("Pending/Holding"))
		Expect(history("early")).To(ContainElement("Pending/WaitingForOwner"))
		Expect(history("early")).To(HaveEach(HavePrefix("Pending/")), "never released before its owner goes")

		// The owner that was seen goes: released at once.
		Expect(k8sClient.Delete(suiteCtx, pg)).To(Succeed())
		Eventually(stateIn(lateNS, "early")).WithTimeout(2 * reconcilePeriod).Should(Equal("Released/OwnerDeleted"))
		Expect(held(lateNS, "early")).To(Equal("PodGroup late was deleted; the capacity is released."))
		Expect(getIn(lateNS, "early").Status.OwnerUID).To(Equal(string(pg.UID)))
	})
})
