package workload

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func TestReplicasOf(t *testing.T) {
	const tmpl = `{spec: {containers: [{name: c, image: x, resources: {requests: {nvidia.com/gpu: "8"}}}]}}`
	for _, tc := range []struct {
		name, doc, want, wantErr string
	}{
		{"Pod", `{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: c, image: x}]}}`, "pod×1", ""},
		{"Job: parallelism capped by completions", `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {parallelism: 4, completions: 3, template: ` + tmpl + `}}`, "job×3", ""},
		{"PyTorchJob", `{apiVersion: kubeflow.org/v1, kind: PyTorchJob, metadata: {name: t}, spec: {pytorchReplicaSpecs: {Master: {replicas: 1, template: ` + tmpl + `}, Worker: {replicas: 7, template: ` + tmpl + `}}}}`, "Master×1 Worker×7", ""},
		{"JobSet: replicas × parallelism", `{apiVersion: jobset.x-k8s.io/v1alpha2, kind: JobSet, metadata: {name: js}, spec: {replicatedJobs: [{name: workers, replicas: 2, template: {spec: {parallelism: 4, template: ` + tmpl + `}}}]}}`, "workers×8", ""},
		{"LeaderWorkerSet: one leader and size-1 workers per group", `{apiVersion: leaderworkerset.x-k8s.io/v1, kind: LeaderWorkerSet, metadata: {name: l}, spec: {replicas: 2, leaderWorkerTemplate: {size: 4, workerTemplate: ` + tmpl + `}}}`, "leader×2 worker×6", ""},
		{"RayCluster at minReplicas × numOfHosts", `{apiVersion: ray.io/v1, kind: RayCluster, metadata: {name: r}, spec: {headGroupSpec: {template: ` + tmpl + `}, workerGroupSpecs: [{groupName: gpu, minReplicas: 2, numOfHosts: 2, template: ` + tmpl + `}]}}`, "head×1 gpu×4", ""},
		{"Deployment", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {replicas: 3, template: ` + tmpl + `}}`, "Deployment×3", ""},
		{"unknown kind", `{apiVersion: example.com/v1, kind: Thing, metadata: {name: x}, spec: {}}`, "", "Thing x: cannot tell the pods of a Thing.example.com from its spec"},
		{"a template of the wrong shape", `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {template: {spec: {containers: "nope"}}}}`, "", "Job j: the pod template of job:"},
		{"no pods", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {replicas: 0, template: ` + tmpl + `}}`, "", "Deployment d: its spec runs no pods"},
	} {
		// As the API machinery decodes it: whole numbers are int64.
		js, err := yaml.YAMLToJSON([]byte(tc.doc))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(js); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got, err := ReplicasOf(obj)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: error %v, want %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		var parts []string
		for _, r := range got {
			parts = append(parts, fmt.Sprintf("%s×%d", r.Role, r.Count))
			if len(r.Template.Spec.Containers) != 1 {
				t.Errorf("%s: role %s has %d containers in its template", tc.name, r.Role, len(r.Template.Spec.Containers))
			}
		}
		if s := strings.Join(parts, " "); s != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, s, tc.want)
		}
	}
}
