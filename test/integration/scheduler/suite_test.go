// Package scheduler_test runs kubenexus-scheduler in-process, through the same code
// path as the binary, against a real kube-apiserver, and checks where pods land.
package scheduler_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/controllers"
	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/schedulertest"
	"github.com/kube-nexus/kubenexus/test/util/testenv"
)

var (
	suiteCtx    context.Context
	suiteCancel context.CancelFunc
	testEnv     *envtest.Environment
	k8sClient   client.Client
	adminConfig []byte
	// nativeWorkloads: the API server serves Kubernetes' own PodGroups
	// (scheduling.k8s.io/v1beta1; 1.37 and later, turned on here).
	nativeWorkloads bool
	// apiServerMinor is the API server's version, 1.x.
	apiServerMinor int
)

func TestScheduler(t *testing.T) {
	// KLOG_V=4 shows the scheduler's own logs when debugging a failure.
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	if v := os.Getenv("KLOG_V"); v != "" {
		_ = fs.Set("v", v)
	}
	RegisterFailHandler(Fail)
	RunSpecs(t, "Scheduler integration suite")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	suiteCtx, suiteCancel = context.WithCancel(context.Background())
	Expect(testenv.RequireAssets()).To(Succeed())
	// scheduler-plugins' own PodGroup CRD too: KubeNexus honours those PodGroups.
	sigsCRD, err := testenv.SchedulerPluginsCRD()
	Expect(err).NotTo(HaveOccurred())
	// And Volcano's, for its compatibility mode.
	volcanoCRD, err := testenv.VolcanoPodGroupCRD()
	Expect(err).NotTo(HaveOccurred())
	// And KAI-Scheduler's, whose PodGroups' sub-groups are roles with their own
	// minimums and domains.
	kaiCRD, err := testenv.KAIPodGroupCRD()
	Expect(err).NotTo(HaveOccurred())
	// And the kubelet's NUMA reports (NodeResourceTopology), for NUMATopology.
	nrtCRD, err := testenv.NodeResourceTopologyCRD()
	Expect(err).NotTo(HaveOccurred())
	// And Kueue's: pods admitted through a ClusterQueue.
	kueueCRDs, err := testenv.KueueCRDs()
	Expect(err).NotTo(HaveOccurred())
	testEnv = &envtest.Environment{CRDDirectoryPaths: []string{testenv.CRDPath(), sigsCRD, volcanoCRD, kaiCRD, nrtCRD, kueueCRDs}, ErrorIfCRDPathMissing: true, CRDInstallOptions: testenv.CRDInstall()}
	nativeWorkloads, err = testenv.EnableNativeWorkloads(testEnv)
	Expect(err).NotTo(HaveOccurred())
	apiServerMinor, err = testenv.APIServerMinor(os.Getenv("KUBEBUILDER_ASSETS"))
	Expect(err).NotTo(HaveOccurred())
	cfg, err := testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	cfg.QPS, cfg.Burst = 5000, 5000

	admin, err := testEnv.AddUser(envtest.User{Name: "scheduler-admin", Groups: []string{"system:masters"}}, rest.CopyConfig(cfg))
	Expect(err).NotTo(HaveOccurred())
	adminConfig, err = admin.KubeConfig()
	Expect(err).NotTo(HaveOccurred())

	k8sClient, err = client.New(cfg, client.Options{Scheme: controllers.NewScheme()})
	Expect(err).NotTo(HaveOccurred())

	// The manager's controllers run beside the scheduler, as in a cluster.
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 controllers.NewScheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(controllers.Setup(mgr, controllers.Options{PodGroupGCGrace: 2 * time.Second, Namespace: "kubenexus-system", SchedulerImage: "kubenexus-scheduler:test", EstimateInterval: time.Second})).To(Succeed())
	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(suiteCtx)).To(Succeed())
	}()
})

var _ = AfterSuite(func() {
	suiteCancel()
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})

// testCluster is one test's namespace, nodes and scheduler.
type testCluster struct {
	ns        string
	nodeLabel string
	stop      context.CancelFunc
	done      <-chan struct{}
}

// newTestCluster creates a namespace and starts a scheduler with the given profile.
// Nodes it creates carry a label that this test's pods select, so tests never share
// capacity.
func newTestCluster(profile string) *testCluster {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "sched-"}}
	Expect(k8sClient.Create(suiteCtx, ns)).To(Succeed())
	tc := &testCluster{ns: ns.Name, nodeLabel: ns.Name}
	tc.startScheduler(profile)
	DeferCleanup(tc.cleanup)
	return tc
}

func (tc *testCluster) startScheduler(profile string) {
	GinkgoHelper()
	ctx, cancel := context.WithCancel(suiteCtx)
	done, err := schedulertest.StartScheduler(ctx, GinkgoT().TempDir(), adminConfig, profile)
	Expect(err).NotTo(HaveOccurred())
	tc.stop, tc.done = cancel, done
}

// stopScheduler kills the scheduler: pods waiting at Permit are dropped with it.
func (tc *testCluster) stopScheduler() {
	tc.stop()
	Eventually(tc.done).WithTimeout(testutil.Timeout).Should(BeClosed())
}

func (tc *testCluster) cleanup() {
	if CurrentSpecReport().Failed() {
		tc.dump()
	}
	tc.stopScheduler()
	// The PodGroups first, then the reservations: a gang repairing when the test ends
	// would have its repair reservation made again, and with no garbage collector
	// here nothing deletes what a PodGroup owns; a reservation left behind holds room
	// on the next tests' nodes.
	Expect(k8sClient.DeleteAllOf(suiteCtx, &v1alpha1.PodGroup{}, client.InNamespace(tc.ns))).To(Succeed())
	Expect(k8sClient.DeleteAllOf(suiteCtx, &v1alpha1.ResourceReservation{}, client.InNamespace(tc.ns))).To(Succeed())
	Expect(k8sClient.DeleteAllOf(suiteCtx, &corev1.Pod{}, client.InNamespace(tc.ns), client.GracePeriodSeconds(0))).To(Succeed())
	Expect(k8sClient.DeleteAllOf(suiteCtx, &corev1.Node{}, client.MatchingLabels{"kubenexus.io/test": tc.nodeLabel})).To(Succeed())
}

// dump writes what a failed spec's namespace holds to the spec's output: each pod
// with its node, phase and conditions, and the events, oldest first. A spec that
// fails once under load leaves what the scheduler said.
func (tc *testCluster) dump() {
	pods := &corev1.PodList{}
	if err := k8sClient.List(suiteCtx, pods, client.InNamespace(tc.ns)); err == nil {
		for _, p := range pods.Items {
			GinkgoWriter.Printf("pod %s node=%q phase=%s deleting=%v nominated=%q\n", p.Name, p.Spec.NodeName, p.Status.Phase, p.DeletionTimestamp != nil, p.Status.NominatedNodeName)
			for _, c := range p.Status.Conditions {
				GinkgoWriter.Printf("  %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
			}
		}
	}
	evs := &corev1.EventList{}
	if err := k8sClient.List(suiteCtx, evs, client.InNamespace(tc.ns)); err == nil {
		sort.Slice(evs.Items, func(i, j int) bool { return evs.Items[i].CreationTimestamp.Before(&evs.Items[j].CreationTimestamp) })
		for _, e := range evs.Items {
			GinkgoWriter.Printf("event %s %s/%s %s: %s\n", e.CreationTimestamp.Format(time.RFC3339), e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
}

// addNodes creates n nodes with the given capacity pairs.
func (tc *testCluster) addNodes(prefix string, n int, capacity ...string) {
	GinkgoHelper()
	for i := range n {
		node := testutil.MakeNode(fmt.Sprintf("%s-%s-%d", tc.ns, prefix, i)).Capacity(capacity...).Label("kubenexus.io/test", tc.nodeLabel).Obj()
		Expect(k8sClient.Create(suiteCtx, node)).To(Succeed())
		// The TaintNodesByCondition admission plugin taints new nodes not-ready; there
		// is no kubelet or node lifecycle controller here to lift it.
		node.Spec.Taints = nil
		Expect(k8sClient.Update(suiteCtx, node)).To(Succeed())
	}
}

// pod starts a pod of this test for kubenexus-scheduler, restricted to its nodes.
func (tc *testCluster) pod(name string) *testutil.PodWrapper {
	return testutil.MakePod(name, tc.ns).SchedulerName(schedulertest.SchedulerName).NodeSelector("kubenexus.io/test", tc.nodeLabel)
}

// gang creates a PodGroup with minMember n and n member pods requesting cpu each,
// of the given PriorityClass ("" for none).
func (tc *testCluster) gang(name string, n int32, cpu string, priorityClass string) {
	GinkgoHelper()
	Expect(k8sClient.Create(suiteCtx, testutil.MakePodGroup(name, tc.ns).MinMember(n).Obj())).To(Succeed())
	for i := range n {
		Expect(k8sClient.Create(suiteCtx, tc.pod(fmt.Sprintf("%s-%d", name, i)).PodGroup(name).Req("cpu", cpu).PriorityClass(priorityClass).Obj())).To(Succeed())
	}
}

// priorityClass creates a cluster-wide PriorityClass (once per suite).
func priorityClass(name string, value int32) {
	GinkgoHelper()
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
	if err := k8sClient.Create(suiteCtx, pc); err != nil && !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
}

// bound counts the pods of a PodGroup that are bound to a node.
func (tc *testCluster) bound(group string) int {
	GinkgoHelper()
	pods := &corev1.PodList{}
	Expect(k8sClient.List(suiteCtx, pods, client.InNamespace(tc.ns), client.MatchingLabels{"scheduling.x-k8s.io/pod-group": group})).To(Succeed())
	n := 0
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" {
			n++
		}
	}
	return n
}

// boundFn polls bound for Eventually/Consistently.
func (tc *testCluster) boundFn(group string) func() int {
	return func() int { return tc.bound(group) }
}

// eventReasons polls the reasons of the events recorded on the PodGroup (the
// recorder sends them asynchronously: check them with Eventually).
func (tc *testCluster) eventReasons(group string) func() []string {
	return func() []string {
		GinkgoHelper()
		evs := &corev1.EventList{}
		Expect(k8sClient.List(suiteCtx, evs, client.InNamespace(tc.ns))).To(Succeed())
		var out []string
		for _, e := range evs.Items {
			if e.InvolvedObject.Kind == "PodGroup" && e.InvolvedObject.Name == group {
				out = append(out, e.Reason)
			}
		}
		return out
	}
}

// podGroupCondition returns the PodGroup's phase and Scheduled condition.
func (tc *testCluster) podGroup(name string) *v1alpha1.PodGroup {
	GinkgoHelper()
	pg := &v1alpha1.PodGroup{}
	Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: name}, pg)).To(Succeed())
	return pg
}

// scheduledReason is the reason of the PodGroup's Scheduled condition ("" if none).
func (tc *testCluster) scheduledReason(name string) func() string {
	return func() string {
		if c := meta.FindStatusCondition(tc.podGroup(name).Status.Conditions, v1alpha1.PodGroupConditionScheduled); c != nil {
			return c.Reason
		}
		return ""
	}
}

// scheduledMessage returns the message of the pod's PodScheduled condition ("" if none).
// boundOf counts the named pods that are bound.
func (tc *testCluster) boundOf(names ...string) func() int {
	return func() int {
		n := 0
		for _, name := range names {
			if tc.nodeOf(name)() != "" {
				n++
			}
		}
		return n
	}
}

func (tc *testCluster) scheduledMessage(pod string) func() string {
	return func() string {
		p := &corev1.Pod{}
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: tc.ns, Name: pod}, p)).To(Succeed())
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled {
				return c.Message
			}
		}
		return ""
	}
}

// scheduleAttempts is the scheduler's scheduler_schedule_attempts_total for one result
// ("scheduled", "unschedulable", "error"), summed over profiles. Specs run one at a
// time, so a difference taken within a spec counts that spec's attempts.
func scheduleAttempts(result string) float64 {
	GinkgoHelper()
	return countedWithResult("scheduler_schedule_attempts_total", result)
}

// countedWithResult sums a counter family's series whose result label is result.
func countedWithResult(family, result string) float64 {
	GinkgoHelper()
	sum := 0.0
	for _, m := range gathered(family) {
		if labelsOf(m)["result"] == result {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// gathered returns the series of one metric family of this process's registry (the
// in-process scheduler's and KubeNexus' metrics), none if it has not been created.
func gathered(family string) []*dto.Metric {
	GinkgoHelper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() == family {
			return f.GetMetric()
		}
	}
	return nil
}

// labelsOf returns a series' labels by name.
func labelsOf(m *dto.Metric) map[string]string {
	l := map[string]string{}
	for _, p := range m.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	return l
}
