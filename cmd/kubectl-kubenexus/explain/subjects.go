package explain

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/api/workload/frameworks/ray"
	"github.com/kube-nexus/kubenexus/controllers/feasibility"
)

// target is a kind explain knows.
type target struct {
	kind string
	// group is the owner's API group ("" for the core and batch kinds matched by
	// kind alone).
	group string
}

// kinds maps what kubectl users type to the kind explained.
var kinds = map[string]target{}

func init() {
	add := func(t target, names ...string) {
		for _, n := range names {
			kinds[n] = t
		}
	}
	add(target{kind: "Pod"}, "pod", "pods", "po")
	add(target{kind: "PodGroup"}, "podgroup", "podgroups", "pg")
	add(target{kind: "CompositePodGroup"}, "compositepodgroup", "compositepodgroups", "cpg")
	add(target{kind: "Workload", group: "kueue.x-k8s.io"}, "workload", "workloads", "wl", "workloads.kueue.x-k8s.io")
	add(target{kind: "Job", group: "batch"}, "job", "jobs", "jobs.batch")
	add(target{kind: "PyTorchJob", group: "kubeflow.org"}, "pytorchjob", "pytorchjobs")
	add(target{kind: "TFJob", group: "kubeflow.org"}, "tfjob", "tfjobs")
	add(target{kind: "XGBoostJob", group: "kubeflow.org"}, "xgboostjob", "xgboostjobs")
	add(target{kind: "MPIJob", group: "kubeflow.org"}, "mpijob", "mpijobs")
	add(target{kind: "JobSet", group: "jobset.x-k8s.io"}, "jobset", "jobsets")
	add(target{kind: "RayCluster", group: "ray.io"}, "raycluster", "rayclusters")
	add(target{kind: "RayJob", group: "ray.io"}, "rayjob", "rayjobs")
	add(target{kind: "LeaderWorkerSet", group: "leaderworkerset.x-k8s.io"}, "leaderworkerset", "leaderworkersets", "lws")
	add(target{kind: "SparkApplication", group: "sparkoperator.k8s.io"}, "sparkapplication", "sparkapplications", "sparkapp")
	add(target{kind: "TrainJob", group: "trainer.kubeflow.org"}, "trainjob", "trainjobs")
	add(target{kind: "Deployment", group: "apps"}, "deployment", "deployments", "deploy")
	add(target{kind: "StatefulSet", group: "apps"}, "statefulset", "statefulsets", "sts")
}

func resolve(kind string) (target, error) {
	if t, ok := kinds[strings.ToLower(kind)]; ok {
		return t, nil
	}
	var names []string
	for n, t := range kinds {
		if strings.ToLower(t.kind) == n {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return target{}, fmt.Errorf("cannot explain a %q: explain takes %s (as kind/name)", kind, strings.Join(names, ", "))
}

func (e *Explainer) explainPod(ctx context.Context, st *state, namespace, name string) (*Report, error) {
	var pod *corev1.Pod
	for i := range st.pods {
		if p := &st.pods[i]; p.Namespace == namespace && p.Name == name {
			pod = p
		}
	}
	if pod == nil {
		return nil, fmt.Errorf("pod %s/%s not found", namespace, name)
	}
	r := &Report{Subject: fmt.Sprintf("Pod %s/%s", namespace, name)}
	members := []corev1.Pod{*pod}
	m, ok := st.gangOf(pod)
	if ok {
		members = st.membersOf(m.Key)
	}
	wl, err := e.workloadOfPod(ctx, st, pod)
	if err != nil {
		return nil, err
	}
	var s Section
	if ok {
		s, err = e.gangSection(ctx, st, m.Key, members, wl)
	} else {
		s, err = e.section(ctx, st, members, wl)
	}
	if err != nil {
		return nil, err
	}
	r.Sections = append(r.Sections, s)
	return r, nil
}

// explainPodGroup explains a PodGroup's gang (of any gang API), or with composite a
// CompositePodGroup's. A Kubernetes PodGroup of a composite is explained as the
// composite's gang, which it starts with.
func (e *Explainer) explainPodGroup(ctx context.Context, st *state, namespace, name string, composite bool) (*Report, error) {
	key := gang.Key{Namespace: namespace, Name: name, Composite: composite}
	subject := fmt.Sprintf("PodGroup %s/%s", namespace, name)
	if composite {
		subject = "Composite" + subject
	} else if k, in := st.composites[key]; in {
		key, subject = k, subject+" (one of CompositePodGroup "+k.Name+")"
	}
	members := st.membersOf(key)
	if len(members) == 0 {
		if _, err := e.podGroup(ctx, key); err != nil {
			return nil, err
		}
	}
	r := &Report{Subject: subject}
	var wl *kueue.Workload
	if len(members) > 0 {
		var err error
		if wl, err = e.workloadOfPod(ctx, st, &members[0]); err != nil {
			return nil, err
		}
	}
	s, err := e.gangSection(ctx, st, key, members, wl)
	if err != nil {
		return nil, err
	}
	r.Sections = append(r.Sections, s)
	return r, nil
}

func (e *Explainer) explainWorkload(ctx context.Context, st *state, namespace, name string) (*Report, error) {
	wl := &kueue.Workload{}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, wl); err != nil {
		if feasibility.NotServed(err) {
			return nil, fmt.Errorf("this cluster does not serve Kueue's Workloads (kueue.x-k8s.io v1beta2 or v1beta1)")
		}
		return nil, err
	}
	owner := metav1.GetControllerOf(wl)
	if owner == nil && len(wl.OwnerReferences) > 0 {
		owner = &wl.OwnerReferences[0]
	}
	r := &Report{Subject: fmt.Sprintf("Workload %s/%s", namespace, name)}
	var pods []corev1.Pod
	if owner != nil {
		r.Subject += fmt.Sprintf(" (of %s %s)", owner.Kind, owner.Name)
		pods = st.ownedBy(namespace, owner.Kind, owner.Name)
	}
	return e.sections(ctx, st, r, pods, wl)
}

func (e *Explainer) explainOwner(ctx context.Context, st *state, t target, namespace, name string) (*Report, error) {
	pods := st.ownedBy(namespace, t.kind, name)
	// Kinds that run their pods through another object: a TrainJob through the
	// JobSet Kubeflow Trainer names after it, a RayJob through the RayCluster KubeRay
	// labels with its name.
	switch t.kind {
	case "TrainJob":
		pods = append(pods, st.ownedBy(namespace, "JobSet", name)...)
	case "RayJob":
		clusters, err := e.rayClustersOf(ctx, namespace, name)
		if err != nil {
			return nil, err
		}
		for _, c := range clusters {
			pods = append(pods, st.ownedBy(namespace, "RayCluster", c)...)
		}
	}
	wl, err := e.workloadOf(ctx, st, namespace, &metav1.OwnerReference{Kind: t.kind, Name: name})
	if err != nil {
		return nil, err
	}
	if len(pods) == 0 && wl == nil {
		return nil, fmt.Errorf("%s %s/%s has no pods and no Kueue Workload: nothing is waiting (or it does not exist)", t.kind, namespace, name)
	}
	return e.sections(ctx, st, &Report{Subject: fmt.Sprintf("%s %s/%s", t.kind, namespace, name)}, pods, wl)
}

// sections explains each gang of the pods (one per gang, and one for pods in none).
func (e *Explainer) sections(ctx context.Context, st *state, r *Report, pods []corev1.Pod, wl *kueue.Workload) (*Report, error) {
	byGang := map[gang.Key][]corev1.Pod{}
	var keys []gang.Key
	var loose []corev1.Pod
	for _, p := range pods {
		if m, ok := st.gangOf(&p); ok {
			if _, seen := byGang[m.Key]; !seen {
				keys = append(keys, m.Key)
			}
			byGang[m.Key] = append(byGang[m.Key], p)
		} else {
			loose = append(loose, p)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].Name < keys[j].Name })
	for _, k := range keys {
		s, err := e.gangSection(ctx, st, k, st.membersOf(k), wl)
		if err != nil {
			return nil, err
		}
		if len(keys) > 1 || len(loose) > 0 {
			s.Title = "gang " + k.Name
		}
		r.Sections = append(r.Sections, s)
	}
	if len(loose) > 0 || len(keys) == 0 {
		s, err := e.section(ctx, st, loose, wl)
		if err != nil {
			return nil, err
		}
		if len(keys) > 0 {
			s.Title = "pods in no gang"
		}
		r.Sections = append(r.Sections, s)
	}
	return r, nil
}

// membersOf are the pods of a gang, in name order.
func (st *state) membersOf(k gang.Key) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range st.pods {
		if p.Namespace != k.Namespace {
			continue
		}
		if m, ok := st.gangOf(&p); ok && m.Key == k {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ownedBy are the pods whose controller, or whose framework's top-level owner, is
// kind/name: a PyTorchJob's pods, a JobSet's (through its Jobs), a Deployment's
// (through its ReplicaSet, named after it with the pod's template hash).
func (st *state) ownedBy(namespace, kind, name string) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range st.pods {
		if p.Namespace != namespace {
			continue
		}
		ref := metav1.GetControllerOf(&p)
		switch {
		case ref != nil && ref.Kind == kind && ref.Name == name:
		case ref != nil && kind == "Deployment" && ref.Kind == "ReplicaSet" && ref.Name == name+"-"+p.Labels["pod-template-hash"]:
		default:
			src, ok := workload.GangSourceOf(&p, workload.Classify(&p, workload.Namespace{}, ""))
			if !ok || src.GVK.Kind != kind || src.Name != name {
				continue
			}
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// workloadOfPod finds the Kueue Workload of a pod's controller, else of its
// framework's top-level owner (a JobSet's, through its Jobs).
func (e *Explainer) workloadOfPod(ctx context.Context, st *state, p *corev1.Pod) (*kueue.Workload, error) {
	if ref := metav1.GetControllerOf(p); ref != nil {
		if wl, err := e.workloadOf(ctx, st, p.Namespace, ref); wl != nil || err != nil {
			return wl, err
		}
	}
	if src, ok := workload.GangSourceOf(p, workload.Classify(p, workload.Namespace{}, "")); ok {
		return e.workloadOf(ctx, st, p.Namespace, &metav1.OwnerReference{Kind: src.GVK.Kind, Name: src.Name})
	}
	return nil, nil
}

// workloadOf finds the Kueue Workload of the owner (nil: none, or Kueue not served).
// Kueue names the Workload's owner reference after the job; for a JobSet's or a
// Deployment's pods the pod's controller is not that job, so the Workload is looked
// for under the pod's controller and under its framework owner.
func (e *Explainer) workloadOf(ctx context.Context, st *state, namespace string, owner *metav1.OwnerReference) (*kueue.Workload, error) {
	if owner == nil {
		return nil, nil
	}
	var list kueue.WorkloadList
	if err := e.Client.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		if feasibility.NotServed(err) {
			return nil, nil
		}
		return nil, err
	}
	for i := range list.Items {
		for _, ref := range list.Items[i].OwnerReferences {
			if ref.Kind == owner.Kind && ref.Name == owner.Name {
				return &list.Items[i], nil
			}
		}
	}
	return nil, nil
}

func notFound(err error) bool { return apierrors.IsNotFound(err) }

// rayClustersOf names the RayClusters KubeRay created for a RayJob (labelled
// ray.io/originated-from-crd=RayJob, ray.io/originated-from-cr-name=<job>).
func (e *Explainer) rayClustersOf(ctx context.Context, namespace, job string) ([]string, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(ray.RayCluster.GroupVersion().WithKind("RayClusterList"))
	err := e.Client.List(ctx, list, client.InNamespace(namespace),
		client.MatchingLabels{ray.LabelOriginatedFromCRD: ray.RayJob.Kind, ray.LabelOriginatedFrom: job})
	if err != nil {
		if feasibility.NotServed(err) {
			return nil, nil
		}
		return nil, err
	}
	var out []string
	for _, c := range list.Items {
		out = append(out, c.GetName())
	}
	return out, nil
}
