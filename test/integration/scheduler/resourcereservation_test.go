package scheduler_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/schedulertest"
)

var _ = Describe("ResourceReservation", func() {
	// reservation creates rr and deletes it when the test ends (reservations outlive
	// the test's pods and nodes otherwise, and an unplaced one would be placed on the
	// next test's nodes).
	reservation := func(rr *v1alpha1.ResourceReservation) {
		GinkgoHelper()
		Expect(k8sClient.Create(suiteCtx, rr)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, rr))).To(Succeed()) })
	}
	status := func(tc *testCluster, name string) func() v1alpha1.ResourceReservationStatus {
		return func() v1alpha1.ResourceReservationStatus {
			rr := &v1alpha1.ResourceReservation{}
			Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: name}, rr)).To(Succeed())
			return rr.Status
		}
	}
	placedMessage := func(tc *testCluster, name string) func() string {
		return func() string {
			if c := meta.FindStatusCondition(status(tc, name)().Conditions, "Placed"); c != nil {
				return string(c.Status) + ": " + c.Message
			}
			return ""
		}
	}

	// bronzeBesideGold is a bronze namespace's cluster: an 8-CPU node of a HardwareTier
	// that admits only gold (and lends to preemptible pods), and an open node of
	// openCPU CPUs.
	bronzeBesideGold := func(openCPU string) (tc *testCluster, premium, open string) {
		GinkgoHelper()
		tc = newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		tc.setTier(v1alpha1.TenantTierBronze)
		hw := "premium-" + tc.ns
		tc.addLabelledNodes("premium", 1, map[string]string{"hw": hw}, "cpu", "8", "memory", "32Gi")
		tc.addLabelledNodes("open", 1, nil, "cpu", openCPU, "memory", "64Gi")
		createHardwareTiers(testutil.MakeHardwareTier(hw, 100).Selector(metav1.LabelSelector{MatchLabels: map[string]string{"hw": hw}}).
			Tenants(v1alpha1.TenantTierGold).Borrowing(v1alpha1.BorrowingPreemptible).Obj())
		return tc, tc.ns + "-premium-0", tc.ns + "-open-0"
	}

	// bigGang submits the gang "big" of two 8-CPU members asking for reserveCapacity,
	// and waits for the accumulating reservation the scheduler creates when it does
	// not fit (deleted when the test ends).
	bigGang := func(tc *testCluster) {
		GinkgoHelper()
		pg := testutil.MakePodGroup("big", tc.ns).MinMember(2).Obj()
		pg.Spec.ReserveCapacity = &v1alpha1.CapacityReservationPolicy{TTLSeconds: 600}
		Expect(k8sClient.Create(suiteCtx, pg)).To(Succeed())
		for i := range 2 {
			Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("big-%d", i)).PodGroup("big").Req("cpu", "8").Obj())).To(Succeed())
		}
		name := "big-accumulate"
		Eventually(func() error {
			return k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: name}, &v1alpha1.ResourceReservation{})
		}).WithTimeout(testutil.Timeout).Should(Succeed())
		DeferCleanup(func() {
			Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, &v1alpha1.ResourceReservation{ObjectMeta: metav1.ObjectMeta{Namespace: tc.ns, Name: name}}))).To(Succeed())
		})
	}

	// waitingGang fills two 8-CPU nodes with one pod each (with the given
	// activeDeadlineSeconds, nil for none) and submits bigGang. It returns the
	// fillers.
	waitingGang := func(tc *testCluster, deadlines ...*int64) []*corev1.Pod {
		GinkgoHelper()
		tc.addNodes("n", len(deadlines), "cpu", "8", "memory", "32Gi")
		var fillers []*corev1.Pod
		for i, d := range deadlines {
			f := tc.pod(fmt.Sprintf("filler-%d", i)).Req("cpu", "8").Obj()
			f.Spec.NodeName = fmt.Sprintf("%s-n-%d", tc.ns, i)
			f.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
			f.Spec.ActiveDeadlineSeconds = d
			Expect(k8sClient.Create(suiteCtx, f)).To(Succeed())
			fillers = append(fillers, f)
		}
		bigGang(tc)
		return fillers
	}

	It("keeps a plain pod out of a node-pinned reservation and lets the owner's member in", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		tc.addNodes("n", 1, "cpu", "8", "memory", "32Gi")
		node := tc.ns + "-n-0"
		reservation(testutil.MakeReservation("hold", tc.ns, "train").Node(node).Resources(testutil.ResourceList("cpu", "6")).Obj())
		Eventually(func() v1alpha1.ReservationPhase { return status(tc, "hold")().Phase }).WithTimeout(testutil.Timeout).Should(Equal(v1alpha1.ReservationReserved))
		Expect(placedMessage(tc, "hold")()).To(Equal("True: Held on node " + node + ", named by spec.nodeName."))

		// A reservation naming a node that does not exist says so and holds nothing.
		reservation(testutil.MakeReservation("nowhere", tc.ns, "train").Node(tc.ns + "-missing").Resources(testutil.ResourceList("cpu", "1")).Obj())
		Eventually(placedMessage(tc, "nowhere")).WithTimeout(testutil.Timeout).Should(Equal(
			"False: Node " + tc.ns + "-missing, named by spec.nodeName, does not exist; nothing is held until it does."))
		Expect(status(tc, "nowhere")().Phase).To(Equal(v1alpha1.ReservationPending))

		Expect(k8sClient.Create(suiteCtx, tc.pod("plain").Req("cpu", "4").Obj())).To(Succeed())
		Eventually(tc.scheduledMessage("plain")).WithTimeout(testutil.Timeout).Should(ContainSubstring(
			fmt.Sprintf("node(s) had cpu held by ResourceReservation %s/hold (PodGroup train, 1 slot(s))", tc.ns)))
		Consistently(tc.nodeOf("plain")).WithTimeout(2 * time.Second).Should(BeEmpty())

		Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup("train", tc.ns).MinMember(1).Obj())).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, tc.pod("train-0").PodGroup("train").Req("cpu", "6").Obj())).To(Succeed())
		Eventually(tc.nodeOf("train-0")).WithTimeout(testutil.Timeout).Should(Equal(node))
		Eventually(status(tc, "hold")).WithTimeout(testutil.Timeout).Should(And(
			HaveField("Phase", v1alpha1.ReservationConsumed), HaveField("ConsumedSlots", int32(1))))
		// The member took the reserved room; the plain pod still does not fit beside it.
		Consistently(tc.nodeOf("plain")).WithTimeout(2 * time.Second).Should(BeEmpty())
	})

	It("holds nothing for a bronze tenant on gold-only hardware: a pinned reservation says so, an unpinned one goes where the tenant may run", func() {
		tc, premium, open := bronzeBesideGold("16")

		// Written past the manager's webhook (or before the rule existed).
		reservation(testutil.MakeReservation("pinned", tc.ns, "train").Node(premium).Resources(testutil.ResourceList("cpu", "6")).Obj())
		Eventually(placedMessage(tc, "pinned")).WithTimeout(testutil.Timeout).Should(Equal(fmt.Sprintf(
			"False: Node %s, named by spec.nodeName: node %s is in HardwareTier %s, which admits tenant tiers [gold]; tenant tier bronze may not hold capacity there; nothing is held.",
			premium, premium, "premium-"+tc.ns)))
		Expect(status(tc, "pinned")()).To(And(HaveField("Phase", v1alpha1.ReservationPending), HaveField("NodeName", "")))

		// The premium node is the tighter fit, but not the tenant's to hold.
		reservation(testutil.MakeReservation("anywhere", tc.ns, "train").Resources(testutil.ResourceList("cpu", "6")).Obj())
		Eventually(func() string { return status(tc, "anywhere")().NodeName }).WithTimeout(testutil.Timeout).Should(Equal(open))

		// Nothing is held on the premium node: a gold pod takes all of it.
		gold := tc.tenantNamespace(v1alpha1.TenantTierGold)
		Expect(k8sClient.Create(suiteCtx, gold.pod("gold-0").Req("cpu", "8").Obj())).To(Succeed())
		Eventually(gold.nodeOf("gold-0")).WithTimeout(testutil.Timeout).Should(Equal(premium))
	})

	It("accumulates a bronze gang's room only on nodes its tier may use: a gold pod still gets the gold-only node", func() {
		tc, premium, _ := bronzeBesideGold("8")
		filler := tc.pod("filler").Req("cpu", "8").Node(tc.ns + "-open-0").Obj()
		Expect(k8sClient.Create(suiteCtx, filler)).To(Succeed())
		// The bronze gang fits nowhere it may run, and asks for its room to be held.
		bigGang(tc)
		gold := tc.tenantNamespace(v1alpha1.TenantTierGold)
		Expect(k8sClient.Create(suiteCtx, gold.pod("gold-0").Req("cpu", "8").Obj())).To(Succeed())
		Eventually(gold.nodeOf("gold-0")).WithTimeout(testutil.Timeout).Should(Equal(premium))
	})

	// spec.nodeSelector only narrows where a reservation holds: a bronze tenant's
	// reservations naming gold-only hardware by its labels — placed by the
	// scheduler, or accumulating (the label a tenant can set on its own) — hold
	// nothing there.
	It("holds nothing where a bronze tenant's reservation's nodeSelector names gold-only hardware: a gold pod still gets the node", func() {
		tc, premium, _ := bronzeBesideGold("8")
		hw := "premium-" + tc.ns
		placed := testutil.MakeReservation("on-premium", tc.ns, "train").Resources(testutil.ResourceList("cpu", "8")).Obj()
		placed.Spec.NodeSelector = map[string]string{"hw": hw}
		reservation(placed)
		accumulating := testutil.MakeReservation("accumulate-premium", tc.ns, "train").Resources(testutil.ResourceList("cpu", "8")).Obj()
		accumulating.Labels = map[string]string{v1alpha1.LabelReservationAccumulate: "true"}
		accumulating.Spec.NodeSelector = map[string]string{"hw": hw}
		reservation(accumulating)
		Eventually(placedMessage(tc, "on-premium")).WithTimeout(testutil.Timeout).Should(HavePrefix("False: "))
		Expect(status(tc, "on-premium")().NodeName).To(BeEmpty())
		gold := tc.tenantNamespace(v1alpha1.TenantTierGold)
		Expect(k8sClient.Create(suiteCtx, gold.pod("gold-0").Req("cpu", "8").Obj())).To(Succeed())
		Eventually(gold.nodeOf("gold-0")).WithTimeout(testutil.Timeout).Should(Equal(premium))
	})

	It("places a reservation that names no node on the tightest fit, says where, and gives the room back at its expiry", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		tc.addNodes("n", 2, "cpu", "8", "memory", "32Gi")
		busy, idle := tc.ns+"-n-0", tc.ns+"-n-1"
		used := tc.pod("used").Req("cpu", "4").Obj()
		used.Spec.NodeName = busy
		Expect(k8sClient.Create(suiteCtx, used)).To(Succeed())

		// 4 CPUs fit on both nodes; the busy node is the tighter fit, and the whole
		// idle node stays whole.
		reservation(testutil.MakeReservation("small", tc.ns, "job-a").Resources(testutil.ResourceList("cpu", "2")).Slots(2).Obj())
		Eventually(func() string { return status(tc, "small")().NodeName }).WithTimeout(testutil.Timeout).Should(Equal(busy))
		Expect(status(tc, "small")().Phase).To(Equal(v1alpha1.ReservationReserved))
		Expect(placedMessage(tc, "small")()).To(Equal("True: Placed by the scheduler on node " + busy + "."))

		// The whole idle node, for 6 seconds.
		reservation(testutil.MakeReservation("whole", tc.ns, "job-b").Resources(testutil.ResourceList("cpu", "8")).TTL(6).Obj())
		Eventually(func() string { return status(tc, "whole")().NodeName }).WithTimeout(testutil.Timeout).Should(Equal(idle))

		// A third fits nowhere and says so.
		reservation(testutil.MakeReservation("none", tc.ns, "job-c").Resources(testutil.ResourceList("cpu", "3")).Obj())
		Eventually(placedMessage(tc, "none")).WithTimeout(testutil.Timeout).Should(HavePrefix(
			"False: No node has 1 slot(s) of {cpu: 3} free beside its pods and other reservations"))
		Expect(status(tc, "none")().Phase).To(Equal(v1alpha1.ReservationPending))
		none := &v1alpha1.ResourceReservation{}
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: "none"}, none)).To(Succeed())
		Expect(k8sClient.Delete(suiteCtx, none)).To(Succeed())

		// Every CPU not used is reserved: a plain pod waits until "whole" expires, and
		// then takes the idle node.
		rr := &v1alpha1.ResourceReservation{}
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: "whole"}, rr)).To(Succeed())
		expiry := rr.CreationTimestamp.Add(6 * time.Second)
		Expect(k8sClient.Create(suiteCtx, tc.pod("plain").Req("cpu", "2").Obj())).To(Succeed())
		Eventually(tc.scheduledMessage("plain")).WithTimeout(testutil.Timeout).Should(ContainSubstring("held by ResourceReservation"))
		// Creation timestamps have second precision: hold off a second early.
		if wait := time.Until(expiry) - time.Second; wait > 0 {
			Consistently(tc.nodeOf("plain")).WithTimeout(wait).Should(BeEmpty())
		}
		Eventually(tc.nodeOf("plain")).WithTimeout(testutil.Timeout).Should(Equal(idle))
		Eventually(func() v1alpha1.ReservationPhase { return status(tc, "whole")().Phase }).WithTimeout(testutil.Timeout).Should(Equal(v1alpha1.ReservationExpired))
	})

	It("keeps a gang's placement plan off capacity another owner's reservation holds", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		// One rack of two nodes; the gang requires one rack, so its members go where
		// its plan claims room.
		tc.addLabelledNodes("n", 2, map[string]string{v1alpha1.LabelRack: "r-" + tc.ns}, "cpu", "8", "memory", "32Gi")
		// The first node, which the plan would take on a tie, is wholly reserved.
		reserved := tc.ns + "-n-0"
		reservation(testutil.MakeReservation("hold", tc.ns, "other").Node(reserved).Resources(testutil.ResourceList("cpu", "8")).Obj())
		Eventually(func() v1alpha1.ReservationPhase { return status(tc, "hold")().Phase }).WithTimeout(testutil.Timeout).Should(Equal(v1alpha1.ReservationReserved))
		Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup("train", tc.ns).MinMember(2).
			NetworkTopology(v1alpha1.NetworkTopologyRequired, v1alpha1.NetworkLevelRack).Obj())).To(Succeed())
		for i := range 2 {
			Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("train-%d", i)).PodGroup("train").Req("cpu", "4").Obj())).To(Succeed())
		}
		Eventually(tc.boundFn("train")).WithTimeout(testutil.Timeout).Should(Equal(2))
		Expect(tc.nodeOf("train-0")()).To(Equal(tc.ns + "-n-1"))
		Expect(tc.nodeOf("train-1")()).To(Equal(tc.ns + "-n-1"))
	})

	It("lends reserved room to a preemptible pod (Backfill) and evicts it when the owner comes, whatever its priority", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		priorityClass("batch-high", 1000)
		tc.addNodes("n", 1, "cpu", "8", "memory", "32Gi")
		node := tc.ns + "-n-0"
		reservation(testutil.MakeReservation("hold", tc.ns, "train").Node(node).Resources(testutil.ResourceList("cpu", "8")).Obj())
		Eventually(func() v1alpha1.ReservationPhase { return status(tc, "hold")().Phase }).WithTimeout(testutil.Timeout).Should(Equal(v1alpha1.ReservationReserved))

		// A plain pod stays out; a preemptible one, of higher priority than the owner,
		// borrows the room.
		Expect(k8sClient.Create(suiteCtx, tc.pod("plain").Req("cpu", "4").Obj())).To(Succeed())
		borrower := tc.pod("borrower").Label(v1alpha1.LabelPreemptible, "true").PriorityClass("batch-high").Req("cpu", "4").Obj()
		borrower.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
		Expect(k8sClient.Create(suiteCtx, borrower)).To(Succeed())
		Eventually(tc.nodeOf("borrower")).WithTimeout(testutil.Timeout).Should(Equal(node))
		Eventually(tc.scheduledMessage("plain")).WithTimeout(testutil.Timeout).Should(ContainSubstring("held by ResourceReservation"))

		// The owner's member (priority 0) needs the whole reservation: the borrower goes.
		Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup("train", tc.ns).MinMember(1).Obj())).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, tc.pod("train-0").PodGroup("train").Req("cpu", "8").Obj())).To(Succeed())
		Eventually(tc.nodeOf("train-0")).WithTimeout(testutil.Timeout).Should(Equal(node))
		Eventually(func() bool {
			err := k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: "borrower"}, &corev1.Pod{})
			return apierrors.IsNotFound(err)
		}).WithTimeout(testutil.Timeout).Should(BeTrue(), "the borrower should have been evicted")
		Expect(tc.nodeOf("plain")()).To(BeEmpty())
	})

	It("accumulates freed room for a gang that asks for it, so that a small pod does not take it", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 60))
		fillers := waitingGang(tc, nil, nil)
		rr := status(tc, "big-accumulate")
		Eventually(func() string { return placedMessage(tc, "big-accumulate")() }).WithTimeout(testutil.Timeout).Should(Equal(
			"True: Holds free room for the missing members of PodGroup big, 2 slot(s) of {cpu: 8}, on any node as it frees."))
		Expect(rr().Phase).To(Equal(v1alpha1.ReservationReserved))

		// A small pod waits; the first node frees, and the room is held for the gang.
		Expect(k8sClient.Create(suiteCtx, tc.pod("small").Req("cpu", "2").Obj())).To(Succeed())
		Expect(k8sClient.Delete(suiteCtx, fillers[0])).To(Succeed())
		Eventually(tc.scheduledMessage("small")).WithTimeout(testutil.Timeout).Should(ContainSubstring(
			fmt.Sprintf("held by ResourceReservation %s/big-accumulate (PodGroup big, 1 slot(s) accumulating)", tc.ns)))
		Consistently(tc.nodeOf("small")).WithTimeout(3 * time.Second).Should(BeEmpty())

		// The second frees: the gang has its room and runs; the small pod still waits.
		Expect(k8sClient.Delete(suiteCtx, fillers[1])).To(Succeed())
		Eventually(tc.boundFn("big")).WithTimeout(testutil.Timeout).Should(Equal(2))
		Eventually(rr).WithTimeout(testutil.Timeout).Should(And(HaveField("Phase", v1alpha1.ReservationConsumed), HaveField("ConsumedSlots", int32(2))))
		Expect(tc.nodeOf("small")()).To(BeEmpty())
	})

	It("lends a waiting gang's accumulating room to a pod that ends before the gang can start, and not to one that ends later", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 60))
		// filler-0 runs without a bound; filler-1 ends within 300 s: the gang of two
		// 8-CPU members can start once both nodes are free, in about 300 s.
		fillers := waitingGang(tc, nil, ptr.To[int64](300))
		// The first node frees and is held for the gang.
		Expect(k8sClient.Delete(suiteCtx, fillers[0])).To(Succeed())
		bounded := func(name string, seconds int64) {
			p := tc.pod(name).Req("cpu", "2").Obj()
			p.Spec.ActiveDeadlineSeconds = ptr.To(seconds)
			Expect(k8sClient.Create(suiteCtx, p)).To(Succeed())
		}
		// Ten minutes is past the gang's start: it waits, and is told why.
		bounded("long", 600)
		Eventually(tc.scheduledMessage("long")).WithTimeout(testutil.Timeout).Should(MatchRegexp(
			`held by ResourceReservation %s/big-accumulate \(PodGroup big, 1 slot\(s\) accumulating; this pod may run 10m0s, the gang may start in [0-9m]+s\)`, tc.ns))
		// One minute (plus the 30 s margin) ends before it: it borrows the held room.
		bounded("short", 60)
		Eventually(tc.nodeOf("short")).WithTimeout(testutil.Timeout).Should(Equal(tc.ns + "-n-0"))
		// The room stays held for the gang: neither the long one nor a plain pod takes
		// what the short one left.
		Expect(k8sClient.Create(suiteCtx, tc.pod("plain").Req("cpu", "2").Obj())).To(Succeed())
		Eventually(tc.scheduledMessage("plain")).WithTimeout(testutil.Timeout).Should(ContainSubstring("big-accumulate"))
		Consistently(func() string { return tc.nodeOf("long")() + tc.nodeOf("plain")() }).WithTimeout(3 * time.Second).Should(BeEmpty())
	})

	It("holds a Spark driver's reservation for its executors, which consume it", func() {
		tc := newTestCluster(schedulertest.CoschedulingProfile(1, 20))
		tc.addNodes("n", 3, "cpu", "16", "memory", "64Gi")
		driver := tc.pod("spark-driver").Label("spark-role", "driver").Req("cpu", "1").Obj()
		Expect(k8sClient.Create(suiteCtx, driver)).To(Succeed())
		Eventually(tc.nodeOf("spark-driver")).WithTimeout(testutil.Timeout).ShouldNot(BeEmpty())

		reservation(testutil.MakeReservation("executors", tc.ns, "").Owner(v1alpha1.ReservationOwnerPod, "spark-driver").
			Resources(testutil.ResourceList("cpu", "6", "memory", "8Gi")).Slots(2).Obj())
		var node string
		Eventually(func() string { node = status(tc, "executors")().NodeName; return node }).WithTimeout(testutil.Timeout).ShouldNot(BeEmpty())
		// The driver's node holds the executors (the owner's pods run there).
		Expect(node).To(Equal(tc.nodeOf("spark-driver")()))

		// A plain pod that fits only in the reserved room goes elsewhere.
		Expect(k8sClient.Create(suiteCtx, tc.pod("other").Req("cpu", "14").Obj())).To(Succeed())
		Eventually(tc.nodeOf("other")).WithTimeout(testutil.Timeout).ShouldNot(BeEmpty())
		Expect(tc.nodeOf("other")()).NotTo(Equal(node))

		d := &corev1.Pod{}
		Expect(k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(driver), d)).To(Succeed())
		for i := range 2 {
			name := fmt.Sprintf("spark-exec-%d", i)
			Expect(k8sClient.Create(suiteCtx, tc.pod(name).Label("spark-role", "executor").OwnerUID("v1", "Pod", "spark-driver", d.UID).
				Req("cpu", "6", "memory", "8Gi").Obj())).To(Succeed())
			Eventually(tc.nodeOf(name)).WithTimeout(testutil.Timeout).Should(Equal(node), "executor %s should land in the driver's reservation", name)
		}
		Eventually(status(tc, "executors")).WithTimeout(testutil.Timeout).Should(And(
			HaveField("Phase", v1alpha1.ReservationConsumed), HaveField("ConsumedSlots", int32(2))))
	})
})
