package workload

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRankOf(t *testing.T) {
	tests := map[string]struct {
		labels, annotations map[string]string
		want                Rank
		ok                  bool
	}{
		"Indexed Job":                     {map[string]string{LabelCompletionIndex: "7"}, nil, Rank{0, 7}, true},
		"Indexed Job, annotation":         {nil, map[string]string{LabelCompletionIndex: "3"}, Rank{0, 3}, true},
		"JobSet child Job":                {map[string]string{LabelCompletionIndex: "1", LabelJobGlobalIndex: "4"}, nil, Rank{4, 1}, true},
		"LeaderWorkerSet worker":          {map[string]string{"leaderworkerset.sigs.k8s.io/worker-index": "2", "leaderworkerset.sigs.k8s.io/group-index": "5"}, nil, Rank{5, 2}, true},
		"PyTorchJob master before worker": {map[string]string{LabelReplicaIndex: "0", "training.kubeflow.org/replica-type": "master"}, nil, Rank{0, 0}, true},
		"PyTorchJob worker":               {map[string]string{LabelReplicaIndex: "0", "training.kubeflow.org/replica-type": "worker"}, nil, Rank{1, 0}, true},
		"StatefulSet pod":                 {map[string]string{LabelPodIndex: "9"}, nil, Rank{0, 9}, true},
		"no index":                        {map[string]string{"app": "x"}, nil, Rank{}, false},
		"negative":                        {map[string]string{LabelCompletionIndex: "-1"}, nil, Rank{}, false},
		"signed":                          {map[string]string{LabelCompletionIndex: "+1"}, nil, Rank{}, false},
		"not a number":                    {map[string]string{LabelCompletionIndex: "0x1"}, nil, Rank{}, false},
		"beyond MaxRank":                  {map[string]string{LabelCompletionIndex: "2000000"}, nil, Rank{}, false},
		"overlong":                        {map[string]string{LabelCompletionIndex: "00000000001"}, nil, Rank{}, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := RankOf(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels, Annotations: tc.annotations}})
			if got != tc.want || ok != tc.ok {
				t.Errorf("RankOf = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestRankOrder(t *testing.T) {
	pod := func(name, index string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
		if index != "" {
			p.Labels[LabelCompletionIndex] = index
		}
		return p
	}
	names := func(ps []*corev1.Pod) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}
	if got := names(RankOrder([]*corev1.Pod{pod("c", "10"), pod("a", "2"), pod("b", "0")})); len(got) != 3 || got[0] != "b" || got[1] != "a" || got[2] != "c" {
		t.Errorf("RankOrder = %v, want [b a c] (by index, numerically)", got)
	}
	if got := RankOrder([]*corev1.Pod{pod("a", "1"), pod("b", "1")}); got != nil {
		t.Errorf("RankOrder of a repeated rank = %v, want nil", names(got))
	}
	if got := RankOrder([]*corev1.Pod{pod("a", "1"), pod("b", "")}); got != nil {
		t.Errorf("RankOrder with an unranked pod = %v, want nil", names(got))
	}
}
