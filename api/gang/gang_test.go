package gang

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

func pod(labels, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: labels, Annotations: annotations}}
}

func TestOf(t *testing.T) {
	tests := map[string]struct {
		labels, annotations map[string]string
		want                Membership
		wantOK              bool
		wantErr             string
	}{
		"no gang": {
			labels: map[string]string{"app": "web"},
		},
		"PodGroup label": {
			labels: map[string]string{"scheduling.x-k8s.io/pod-group": "train"},
			want:   Membership{Key: Key{Namespace: "ns", Name: "train"}, Dialect: DialectPodGroup}, wantOK: true,
		},
		"KubeNexus labels": {
			labels: map[string]string{"pod-group.scheduling.kubenexus.io/name": "etl", "pod-group.scheduling.kubenexus.io/min-available": "5"},
			want:   Membership{Key: Key{Namespace: "ns", Name: "etl"}, Dialect: DialectKubeNexus, MinMember: 5}, wantOK: true,
		},
		"sigs labels": {
			labels: map[string]string{"pod-group.scheduling.sigs.k8s.io/name": "etl", "pod-group.scheduling.sigs.k8s.io/min-available": "3"},
			want:   Membership{Key: Key{Namespace: "ns", Name: "etl"}, Dialect: DialectSigs, MinMember: 3}, wantOK: true,
		},
		"Volcano annotation": {
			annotations: map[string]string{"scheduling.k8s.io/group-name": "vc-job"},
			want:        Membership{Key: Key{Namespace: "ns", Name: "vc-job"}, Dialect: DialectVolcano}, wantOK: true,
		},
		"KAI annotation": {
			annotations: map[string]string{"pod-group-name": "pg-serve-0"},
			labels:      map[string]string{"kai.scheduler/subgroup-name": "decode"},
			want:        Membership{Key: Key{Namespace: "ns", Name: "pg-serve-0"}, Dialect: DialectKAI}, wantOK: true,
		},
		"Volcano annotation wins over KAI's": {
			annotations: map[string]string{"scheduling.k8s.io/group-name": "vc-job", "pod-group-name": "kai"},
			want:        Membership{Key: Key{Namespace: "ns", Name: "vc-job"}, Dialect: DialectVolcano}, wantOK: true,
		},
		"KAI annotation not a PodGroup name": {
			annotations: map[string]string{"pod-group-name": "Serve Me"},
			wantErr:     `pod-group-name="Serve Me" is not a valid PodGroup name`,
		},
		"Kueue pod group": {
			labels:      map[string]string{"kueue.x-k8s.io/pod-group-name": "kq"},
			annotations: map[string]string{"kueue.x-k8s.io/pod-group-total-count": "4"},
			want:        Membership{Key: Key{Namespace: "ns", Name: "kq"}, Dialect: DialectKueue, MinMember: 4}, wantOK: true,
		},
		"PodGroup label wins over KubeNexus labels": {
			labels: map[string]string{"scheduling.x-k8s.io/pod-group": "a", "pod-group.scheduling.kubenexus.io/name": "b", "pod-group.scheduling.kubenexus.io/min-available": "2"},
			want:   Membership{Key: Key{Namespace: "ns", Name: "a"}, Dialect: DialectPodGroup}, wantOK: true,
		},
		"KubeNexus labels win over sigs labels": {
			labels: map[string]string{
				"pod-group.scheduling.kubenexus.io/name": "a", "pod-group.scheduling.kubenexus.io/min-available": "2",
				"pod-group.scheduling.sigs.k8s.io/name": "b", "pod-group.scheduling.sigs.k8s.io/min-available": "9",
			},
			want: Membership{Key: Key{Namespace: "ns", Name: "a"}, Dialect: DialectKubeNexus, MinMember: 2}, wantOK: true,
		},
		"min-available missing": {
			labels:  map[string]string{"pod-group.scheduling.kubenexus.io/name": "etl"},
			wantErr: "pod-group.scheduling.kubenexus.io/min-available is missing",
		},
		"min-available zero": {
			labels:  map[string]string{"pod-group.scheduling.sigs.k8s.io/name": "etl", "pod-group.scheduling.sigs.k8s.io/min-available": "0"},
			wantErr: `pod-group.scheduling.sigs.k8s.io/min-available="0" must be an integer between 1 and 100000`,
		},
		"min-available not a number": {
			labels:  map[string]string{"pod-group.scheduling.kubenexus.io/name": "etl", "pod-group.scheduling.kubenexus.io/min-available": "eight"},
			wantErr: `min-available="eight" must be an integer between 1 and 100000`,
		},
		"min-available overflow": {
			labels:  map[string]string{"pod-group.scheduling.kubenexus.io/name": "etl", "pod-group.scheduling.kubenexus.io/min-available": "99999999999"},
			wantErr: "must be an integer between 1 and 100000",
		},
		"invalid group name": {
			labels:  map[string]string{"scheduling.x-k8s.io/pod-group": "Train_Job"},
			wantErr: `scheduling.x-k8s.io/pod-group="Train_Job" is not a valid PodGroup name`,
		},
		"Kueue without total count": {
			labels:  map[string]string{"kueue.x-k8s.io/pod-group-name": "kq"},
			wantErr: "annotation kueue.x-k8s.io/pod-group-total-count is missing",
		},
		"hostile long value is truncated in the error": {
			annotations: map[string]string{"scheduling.k8s.io/group-name": strings.Repeat("X", 5000)},
			wantErr:     "…",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok, err := Of(pod(tc.labels, tc.annotations))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Of() error = %v, want it to contain %q", err, tc.wantErr)
				}
				if len(err.Error()) > 600 {
					t.Errorf("error message is %d bytes long; hostile values must be truncated", len(err.Error()))
				}
				return
			}
			if err != nil {
				t.Fatalf("Of() unexpected error: %v", err)
			}
			if ok != tc.wantOK {
				t.Fatalf("Of() ok = %v, want %v", ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Of() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzOf(f *testing.F) {
	f.Add("train", "8", "", "")
	f.Add("etl", "-1", "vc", "3")
	f.Add("", "", "", "")
	f.Add("a.b-c", "100000", "Bad Name", "x")
	f.Fuzz(func(t *testing.T, name, minAvail, volcano, total string) {
		p := pod(map[string]string{
			"pod-group.scheduling.kubenexus.io/name":          name,
			"pod-group.scheduling.kubenexus.io/min-available": minAvail,
			"kueue.x-k8s.io/pod-group-name":                   name,
		}, map[string]string{
			"scheduling.k8s.io/group-name":         volcano,
			"kueue.x-k8s.io/pod-group-total-count": total,
		})
		m, ok, err := Of(p)
		if err != nil {
			if ok {
				t.Fatalf("ok with an error")
			}
			return
		}
		if !ok {
			t.Fatalf("labels are present but no membership and no error")
		}
		if m.Key.Namespace != "ns" || m.Key.Name != name {
			t.Fatalf("key %v, want ns/%s", m.Key, name)
		}
		if m.MinMember < 1 || m.MinMember > MaxMinMember {
			t.Fatalf("MinMember %d out of range", m.MinMember)
		}
	})
}

func TestIsDNS1123SubdomainAgreesWithTheRegexp(t *testing.T) {
	for _, s := range []string{"a", "train", "a-b", "a.b", "a..b", "-a", "a-", "a.-b", "a-.b", "A", "a_b", "", "1.2.3", "x.", ".x",
		strings.Repeat("a", 253), strings.Repeat("a", 254), "ab-cd.ef-gh", "a--b"} {
		if got, want := isDNS1123Subdomain(s), len(validation.IsDNS1123Subdomain(s)) == 0; got != want {
			t.Errorf("isDNS1123Subdomain(%q) = %v, want %v", s, got, want)
		}
	}
}

func FuzzIsDNS1123Subdomain(f *testing.F) {
	f.Add("train")
	f.Add("a.-b")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isDNS1123Subdomain(s), len(validation.IsDNS1123Subdomain(s)) == 0; got != want {
			t.Fatalf("isDNS1123Subdomain(%q) = %v, want %v", s, got, want)
		}
	})
}

// spec.schedulingGroup names Kubernetes' own PodGroup; it wins over any label a
// controller also set, and an invalid name is refused naming the field.
func TestOfNativeSchedulingGroup(t *testing.T) {
	p := pod(map[string]string{"scheduling.x-k8s.io/pod-group": "by-label"}, nil)
	name := "serving"
	p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &name}
	m, ok, err := Of(p)
	if err != nil || !ok {
		t.Fatalf("Of: ok=%v err=%v", ok, err)
	}
	if want := (Membership{Key: Key{Namespace: "ns", Name: "serving"}, Dialect: DialectNative}); m != want {
		t.Errorf("membership %+v, want %+v", m, want)
	}
	if !m.NeedsPodGroupObject() {
		t.Error("a native member's quorum comes from its PodGroup object")
	}
	bad := "Not_A_Name"
	p.Spec.SchedulingGroup.PodGroupName = &bad
	if _, _, err := Of(p); err == nil || !strings.Contains(err.Error(), "spec.schedulingGroup.podGroupName") {
		t.Errorf("invalid name: error %v, want one naming spec.schedulingGroup.podGroupName", err)
	}
}

func TestKeyPart(t *testing.T) {
	k := Key{Namespace: "serving", Name: "llama"}
	part := k.Part("prefill/1")
	if part.Name != "llama/prefill/1" {
		t.Fatalf("Part = %v", part)
	}
	if whole, name := part.Whole(); whole != k || name != "prefill/1" {
		t.Errorf("Whole of %v = %v, %q; want %v, %q", part, whole, name, k, "prefill/1")
	}
	if whole, name := k.Whole(); whole != k || name != "" {
		t.Errorf("Whole of a gang's own key = %v, %q", whole, name)
	}
}
