package kueue_test

import (
	"fmt"
	"regexp"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/controllers"
	"github.com/kube-nexus/kubenexus/controllers/multikueue"
	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/testenv"
)

// Two worker clusters, each a real API server, reached through the kubeconfig
// Secrets of their MultiKueueClusters as Kueue's MultiKueue reaches them. north has
// four 8-GPU nodes in two racks of two, all free; south four in one rack, two of them
// busy for ten more minutes. Kueue's MultiKueue controllers do not run here: the
// test leaves each Workload as Kueue does once it has reserved quota (the MultiKueue
// check Pending, nothing nominated) and reads what the dispatcher nominated.
var _ = Describe("The MultiKueue dispatcher", Ordered, func() {
	const ns, bronze = "team-mk", "team-mk-bronze"
	var mk tc
	workers := map[string]client.Client{}

	startWorker := func(name string, racks []string, busy int) {
		GinkgoHelper()
		workers[name] = startMKWorker(name, racks, busy, false, ns, bronze)
	}

	BeforeAll(func() {
		Expect(client.IgnoreAlreadyExists(k8sClient.Create(suiteCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: multikueue.DefaultKueueNamespace}}))).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: bronze}})).To(Succeed())
		startWorker("north", []string{"north-rack-0", "north-rack-0", "north-rack-1", "north-rack-1"}, 0)
		startWorker("south", []string{"south-rack-0", "south-rack-0", "south-rack-0", "south-rack-0"}, 2)
		Expect(k8sClient.Create(suiteCtx, &kueue.MultiKueueConfig{ObjectMeta: metav1.ObjectMeta{Name: "workers"}, Spec: kueue.MultiKueueConfigSpec{Clusters: []string{"north", "south"}}})).To(Succeed())
		ac := &kueue.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{Name: "multikueue"}, Spec: kueue.AdmissionCheckSpec{ControllerName: kueue.MultiKueueControllerName,
			Parameters: &kueue.AdmissionCheckParametersReference{APIGroup: kueue.GroupVersion.Group, Kind: "MultiKueueConfig", Name: "workers"}}}
		Expect(k8sClient.Create(suiteCtx, ac)).To(Succeed())
		mk = tc{ns: ns, check: ac.Name, k8sClient: k8sClient}
	})

	nominated := func(namespace, name string) func() []string {
		return func() []string {
			wl := &kueue.Workload{}
			Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: namespace, Name: name}, wl)).To(Succeed())
			return wl.Status.NominatedClusterNames
		}
	}
	notes := func(namespace, name, reason string) func() ([]string, error) {
		return func() ([]string, error) { return testenv.EventNotes(suiteCtx, k8sClient, namespace, name, reason) }
	}

	It("never nominates a cluster that cannot hold the gang whole, and says why", func() {
		// Four members in one rack: north's racks hold two nodes each; south's one
		// rack holds them once its running pods end.
		mk.reservedWorkload("rack4", 4, v1alpha1.LabelRack, "multikueue", ptr.To[int64](300), nil)
		Eventually(nominated(ns, "rack4")).WithTimeout(testutil.Timeout).Should(Equal([]string{"south"}))
		// The running pods end ten minutes after they were created (no kubelet runs
		// here to start them): a few seconds less by now.
		Eventually(notes(ns, "rack4", v1alpha1.EventReasonDispatched)).WithTimeout(testutil.Timeout).Should(ConsistOf(MatchRegexp(
			`^Normal: nominated worker cluster south \(starts at \S+Z \(in 9m\d+s\); 0 gangs queued ahead there\); ` +
				regexp.QuoteMeta("north: cannot hold it even empty: needs 4 members (4 × 8 nvidia.com/gpu) in one rack; the largest rack fits 2; 32 nvidia.com/gpu free on those nodes, but fragmented; ") +
				`south: starts at \S+Z \(in 9m\d+s\); 0 gangs queued ahead there$`)))

		// Once south's Kueue reserves quota, MultiKueue sets status.clusterName and
		// clears the nomination in one apply as kueue-admission (the two fields are
		// mutually exclusive): that works only because the dispatcher wrote the
		// nomination under that field manager, as Kueue requires.
		wl := &kueue.Workload{}
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: "rack4"}, wl)).To(Succeed())
		wl.Status.ClusterName, wl.Status.NominatedClusterNames = ptr.To("south"), nil
		apply, err := multikueue.AdmissionApply(wl)
		Expect(err).NotTo(HaveOccurred())
		Expect(k8sClient.Status().Apply(suiteCtx, client.ApplyConfigurationFromUnstructured(apply), client.FieldOwner(multikueue.KueueAdmission), client.ForceOwnership)).To(Succeed())
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: "rack4"}, wl)).To(Succeed())
		Expect(wl.Status.ClusterName).To(Equal(ptr.To("south")))
		Expect(wl.Status.NominatedClusterNames).To(BeEmpty())
	})

	It("counts the gangs it sent that have not reached their cluster yet", func() {
		// north is empty: the first two pairs fit there now. The third would wait
		// there behind them (their pods are not on north yet: no Kueue runs there);
		// on south it fits now beside the running pods, ahead of rack4, which waits
		// for the whole rack.
		for _, name := range []string{"pair-1", "pair-2", "pair-3"} {
			mk.reservedWorkload(name, 2, "", "multikueue", ptr.To[int64](300), nil)
			Eventually(nominated(ns, name)).WithTimeout(testutil.Timeout).ShouldNot(BeEmpty())
		}
		Expect(nominated(ns, "pair-1")()).To(Equal([]string{"north"}))
		Expect(nominated(ns, "pair-2")()).To(Equal([]string{"north"}))
		Expect(nominated(ns, "pair-3")()).To(Equal([]string{"south"}))
		Eventually(notes(ns, "pair-3", v1alpha1.EventReasonDispatched)).WithTimeout(testutil.Timeout).Should(ConsistOf(
			MatchRegexp(regexp.QuoteMeta("Normal: nominated worker cluster south (fits whole now; 1 gang queued ahead there); north: starts at ") +
				`\S+Z \(in 5m0s\); 2 gangs queued ahead there; south: fits whole now; 1 gang queued ahead there$`)))
	})

	It("goes by the tenant tier of the worker's namespace, not by what the pods say", func() {
		// On north, every node belongs to a HardwareTier for gold tenants; the
		// namespace is bronze there. The pods claim gold: no pod label sets a tier.
		tier := testutil.MakeHardwareTier("north-gold", 50).Selector(metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/os": "linux"}}).
			Tenants(v1alpha1.TenantTierGold).Obj()
		Expect(workers["north"].Create(suiteCtx, tier)).To(Succeed())
		for i := range 4 {
			node := &corev1.Node{}
			Expect(workers["north"].Get(suiteCtx, client.ObjectKey{Name: fmt.Sprintf("north-gpu-%d", i)}, node)).To(Succeed())
			node.Labels["kubernetes.io/os"] = "linux"
			Expect(workers["north"].Update(suiteCtx, node)).To(Succeed())
		}
		b := tc{ns: bronze, check: mk.check, k8sClient: k8sClient}
		b.reservedWorkload("claims-gold", 1, "", "multikueue", ptr.To[int64](300), map[string]string{v1alpha1.LabelTenantTier: "gold"})
		Eventually(nominated(bronze, "claims-gold")).WithTimeout(testutil.Timeout).Should(Equal([]string{"south"}))
		Eventually(notes(bronze, "claims-gold", v1alpha1.EventReasonDispatched)).WithTimeout(testutil.Timeout).Should(ConsistOf(
			ContainSubstring("north: cannot hold it even empty: 1 × 8 nvidia.com/gpu: the nodes they may use hold 0 of the 1 pods now; 0 nvidia.com/gpu free on those nodes, 8 needed;")))
		Expect(workers["north"].Delete(suiteCtx, tier)).To(Succeed())
	})

	It("leaves a gang no worker cluster can hold un-nominated, with a warning naming each", func() {
		mk.reservedWorkload("huge", 5, "", "multikueue", ptr.To[int64](300), nil)
		Eventually(notes(ns, "huge", v1alpha1.EventReasonDispatchRefused)).WithTimeout(testutil.Timeout).Should(ConsistOf(
			"Warning: fits whole on no worker cluster: " +
				"north: cannot hold it even empty: 5 × 8 nvidia.com/gpu: the nodes they may use hold 4 of the 5 pods now; 32 nvidia.com/gpu free on those nodes, 40 needed; " +
				"south: cannot hold it even empty: 5 × 8 nvidia.com/gpu: the nodes they may use hold 4 of the 5 pods now; 32 nvidia.com/gpu free on those nodes, 40 needed"))
		Consistently(nominated(ns, "huge")).WithTimeout(2 * time.Second).Should(BeEmpty())
	})
})

// startMKWorker starts a worker cluster — a real API server with KubeNexus's CRDs,
// and Kueue's with kueueCRDs — with the namespaces, 8-GPU nodes in racks (the first
// busy of them running a pod of 8 GPUs for ten more minutes, in the first
// namespace), and registers it with the manager cluster as MultiKueue reaches it
// (its kubeconfig Secret and an active MultiKueueCluster).
func startMKWorker(name string, racks []string, busy int, kueueCRDs bool, namespaces ...string) client.Client {
	GinkgoHelper()
	crds := []string{testenv.CRDPath()}
	if kueueCRDs {
		dir, err := testenv.KueueCRDs()
		Expect(err).NotTo(HaveOccurred())
		crds = append(crds, dir)
	}
	env := &envtest.Environment{CRDDirectoryPaths: crds, ErrorIfCRDPathMissing: true, CRDInstallOptions: testenv.CRDInstall()}
	cfg, err := env.Start()
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
	c, err := client.New(cfg, client.Options{Scheme: controllers.NewScheme()})
	Expect(err).NotTo(HaveOccurred())
	for i, n := range namespaces {
		labels := map[string]string{}
		if i > 0 {
			labels[v1alpha1.LabelTenantTier] = "bronze"
		}
		Expect(c.Create(suiteCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: labels}})).To(Succeed())
	}
	for i, rack := range racks {
		node := testutil.MakeNode(fmt.Sprintf("%s-gpu-%d", name, i)).Capacity("cpu", "64", "memory", "512Gi", "nvidia.com/gpu", "8").
			Label(v1alpha1.LabelRack, rack).Obj()
		Expect(c.Create(suiteCtx, node)).To(Succeed())
		node.Spec.Taints = nil
		Expect(c.Update(suiteCtx, node)).To(Succeed())
		if i < busy {
			p := testutil.MakePod(fmt.Sprintf("running-%d", i), namespaces[0]).Req("cpu", "1", "nvidia.com/gpu", "8").Limit("nvidia.com/gpu", "8").Obj()
			p.Spec.NodeName, p.Spec.ActiveDeadlineSeconds = node.Name, ptr.To[int64](600)
			Expect(c.Create(suiteCtx, p)).To(Succeed())
		}
	}
	// Kueue's contract: the kubeconfig under the key "kubeconfig" of a Secret in
	// Kueue's namespace, named by the MultiKueueCluster.
	user, err := env.AddUser(envtest.User{Name: "multikueue", Groups: []string{"system:masters"}}, nil)
	Expect(err).NotTo(HaveOccurred())
	kubeconfig, err := user.KubeConfig()
	Expect(err).NotTo(HaveOccurred())
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-kubeconfig", Namespace: multikueue.DefaultKueueNamespace}, Data: map[string][]byte{"kubeconfig": kubeconfig}}
	Expect(k8sClient.Create(suiteCtx, secret)).To(Succeed())
	mkc := &kueue.MultiKueueCluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kueue.MultiKueueClusterSpec{ClusterSource: kueue.ClusterSource{
		KubeConfig: &kueue.KubeConfig{Location: secret.Name, LocationType: kueue.SecretLocationType}}}}
	Expect(k8sClient.Create(suiteCtx, mkc)).To(Succeed())
	mkc.Status.Conditions = []metav1.Condition{{Type: kueue.MultiKueueClusterActive, Status: metav1.ConditionTrue, Reason: "Active", Message: "Connected", LastTransitionTime: metav1.Now()}}
	Expect(k8sClient.Status().Update(suiteCtx, mkc)).To(Succeed())
	return c
}

// A worker whose nodes are free but whose Kueue ClusterQueue is full: the Workload
// would wait there for quota. Kueue's controllers do not run on the workers here;
// the worker's queue is as Kueue leaves it.
var _ = Describe("The MultiKueue dispatcher on workers running Kueue", Ordered, func() {
	const ns = "team-mk-quota"
	var mk tc
	var alpha client.Client
	BeforeAll(func() {
		Expect(client.IgnoreAlreadyExists(k8sClient.Create(suiteCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: multikueue.DefaultKueueNamespace}}))).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		// alpha: four free nodes in one rack, but its ClusterQueue's 16 GPUs are held
		// for ten more minutes by a running Workload (its pod on a fifth node).
		alpha = startMKWorker("alpha", []string{"alpha-rack-0", "alpha-rack-0", "alpha-rack-0", "alpha-rack-0", "alpha-rack-1"}, 0, true, ns)
		cq := &kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: "gpus"}, Spec: kueue.ClusterQueueSpec{
			ResourceGroups: []kueue.ResourceGroup{{CoveredResources: []corev1.ResourceName{corev1.ResourceCPU, "nvidia.com/gpu"}, Flavors: []kueue.FlavorQuotas{{
				Name: "gpu", Resources: []kueue.ResourceQuota{{Name: corev1.ResourceCPU, NominalQuota: resource.MustParse("1000")}, {Name: "nvidia.com/gpu", NominalQuota: resource.MustParse("16")}},
			}}}},
		}}
		Expect(alpha.Create(suiteCtx, cq)).To(Succeed())
		Expect(alpha.Create(suiteCtx, &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Name: "queue", Namespace: ns}, Spec: kueue.LocalQueueSpec{ClusterQueue: "gpus"}})).To(Succeed())
		holder := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Name: "holder", Namespace: ns}, Spec: kueue.WorkloadSpec{QueueName: "queue", PodSets: []kueue.PodSet{{Name: "main", Count: 1,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "main"}}}}}}}}
		Expect(alpha.Create(suiteCtx, holder)).To(Succeed())
		started := metav1.NewTime(time.Now().Truncate(time.Second))
		holder.Status.Conditions = []metav1.Condition{{Type: kueue.WorkloadQuotaReserved, Status: metav1.ConditionTrue, Reason: "QuotaReserved", LastTransitionTime: started}}
		holder.Status.Admission = &kueue.Admission{ClusterQueue: "gpus", PodSetAssignments: []kueue.PodSetAssignment{{Name: "main", Count: ptr.To[int32](1),
			Flavors:       map[corev1.ResourceName]kueue.ResourceFlavorReference{"nvidia.com/gpu": "gpu"},
			ResourceUsage: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("16")}}}}
		Expect(alpha.Status().Update(suiteCtx, holder)).To(Succeed())
		p := testutil.MakePod("holder-0", ns).Req("cpu", "1", "nvidia.com/gpu", "8").Limit("nvidia.com/gpu", "8").ActiveDeadline(ptr.To[int64](600)).Obj()
		p.Annotations = map[string]string{v1alpha1.AnnotationKueueWorkload: "holder"}
		p.Spec.NodeName = "alpha-gpu-4"
		Expect(alpha.Create(suiteCtx, p)).To(Succeed())
		p.Status.StartTime = &started
		Expect(alpha.Status().Update(suiteCtx, p)).To(Succeed())
		// beta: no Kueue queue to read (the verdict weighs its nodes only); two of
		// its four nodes are free now.
		startMKWorker("beta", []string{"beta-rack-0", "beta-rack-0", "beta-rack-0", "beta-rack-0"}, 2, false, ns)
		Expect(k8sClient.Create(suiteCtx, &kueue.MultiKueueConfig{ObjectMeta: metav1.ObjectMeta{Name: "quota-workers"}, Spec: kueue.MultiKueueConfigSpec{Clusters: []string{"alpha", "beta"}}})).To(Succeed())
		ac := &kueue.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{Name: "multikueue-quota"}, Spec: kueue.AdmissionCheckSpec{ControllerName: kueue.MultiKueueControllerName,
			Parameters: &kueue.AdmissionCheckParametersReference{APIGroup: kueue.GroupVersion.Group, Kind: "MultiKueueConfig", Name: "quota-workers"}}}
		Expect(k8sClient.Create(suiteCtx, ac)).To(Succeed())
		mk = tc{ns: ns, check: ac.Name, k8sClient: k8sClient}
	})

	It("sends a Workload away from a worker whose ClusterQueue would make it wait for quota", func() {
		// Without the worker's quota weighed, alpha (named first) fits the pair now.
		mk.reservedWorkload("pair", 2, "", "multikueue", ptr.To[int64](300), nil)
		Eventually(func() []string {
			wl := &kueue.Workload{}
			Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: "pair"}, wl)).To(Succeed())
			return wl.Status.NominatedClusterNames
		}).WithTimeout(testutil.Timeout).Should(Equal([]string{"beta"}))
		Eventually(func() ([]string, error) {
			return testenv.EventNotes(suiteCtx, k8sClient, ns, "pair", v1alpha1.EventReasonDispatched)
		}).
			WithTimeout(testutil.Timeout).Should(ConsistOf(MatchRegexp(
			regexp.QuoteMeta("Normal: nominated worker cluster beta (fits whole now; 0 gangs queued ahead there); alpha: starts at ") +
				`\S+Z \(in (9m\d+s|10m0s)\), ClusterQueue gpus admitting it in (9m\d+s|10m0s); 0 gangs and 0 Workloads waiting for quota there queued ahead; ` +
				regexp.QuoteMeta("beta: fits whole now; 0 gangs queued ahead there") + `$`)))
	})
})
