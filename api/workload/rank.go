package workload

import (
	"cmp"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-nexus/kubenexus/api/workload/frameworks/kubeflow"
	"github.com/kube-nexus/kubenexus/api/workload/frameworks/lws"
)

// Pod indexes that workload controllers write on their pods: a pod's rank in its
// job, which distributed training uses to pick its neighbours (ring all-reduce,
// pipeline stages), so a plan that keeps neighbouring ranks in one slice keeps their
// traffic inside it.
const (
	// LabelCompletionIndex is an Indexed Job's pod index (a label since 1.28, an
	// annotation before).
	LabelCompletionIndex = "batch.kubernetes.io/job-completion-index"
	// LabelJobGlobalIndex is the index of a JobSet's child Job across all its
	// replicated jobs.
	LabelJobGlobalIndex = "jobset.sigs.k8s.io/job-global-index"
	// LabelReplicaIndex is a Kubeflow training job's pod index within its replica
	// type.
	LabelReplicaIndex = "training.kubeflow.org/replica-index"
	// LabelPodIndex is a StatefulSet's pod index.
	LabelPodIndex = "apps.kubernetes.io/pod-index"
)

// MaxRank bounds the indexes read: a larger one is no rank.
const MaxRank = 1 << 20

// Rank is a pod's place in its job: Group (a JobSet's child Job, a LeaderWorkerSet
// group, a Kubeflow replica type: coordinators first), then Index within it.
type Rank struct{ Group, Index int }

// RankOf reads the pod's rank from the index its controller wrote: a
// LeaderWorkerSet's group and worker index, a JobSet's global job index and an
// Indexed Job's completion index, a Kubeflow job's replica type and index, a
// StatefulSet's pod index. Labels are untrusted: only a decimal integer in [0,
// MaxRank] counts; ok is false for a pod without one.
func RankOf(pod *corev1.Pod) (Rank, bool) {
	l := pod.Labels
	if i, ok := index(l[lws.LabelWorkerIndex]); ok {
		g, _ := index(l[lws.LabelGroupIndex])
		return Rank{g, i}, true
	}
	completion := l[LabelCompletionIndex]
	if completion == "" {
		completion = pod.Annotations[LabelCompletionIndex]
	}
	if i, ok := index(completion); ok {
		g, _ := index(l[LabelJobGlobalIndex])
		return Rank{g, i}, true
	}
	if i, ok := index(l[LabelReplicaIndex]); ok {
		g := 1
		switch l[kubeflow.LabelReplicaType] {
		case "master", "chief", "launcher":
			g = 0
		}
		return Rank{g, i}, true
	}
	if i, ok := index(l[LabelPodIndex]); ok {
		return Rank{0, i}, true
	}
	return Rank{}, false
}

// index parses a decimal index in [0, MaxRank].
func index(v string) (int, bool) {
	if v == "" || len(v) > 7 || v[0] == '+' || v[0] == '-' {
		return 0, false
	}
	i, err := strconv.Atoi(v)
	if err != nil || i < 0 || i > MaxRank {
		return 0, false
	}
	return i, true
}

// RankOrder returns the pods in rank order, or nil when some pod has no rank or
// two have the same (a job's pods of different controllers, or labels written by
// hand): then there is no order to keep.
func RankOrder(pods []*corev1.Pod) []*corev1.Pod {
	type ranked struct {
		r   Rank
		pod *corev1.Pod
	}
	rs := make([]ranked, 0, len(pods))
	for _, p := range pods {
		r, ok := RankOf(p)
		if !ok {
			return nil
		}
		rs = append(rs, ranked{r, p})
	}
	slices.SortFunc(rs, func(a, b ranked) int {
		return cmp.Or(cmp.Compare(a.r.Group, b.r.Group), cmp.Compare(a.r.Index, b.r.Index))
	})
	out := make([]*corev1.Pod, len(rs))
	for i, r := range rs {
		if i > 0 && r.r == rs[i-1].r {
			return nil
		}
		out[i] = r.pod
	}
	return out
}
