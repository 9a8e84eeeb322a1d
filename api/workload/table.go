package workload

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload/frameworks"
	"github.com/kube-nexus/kubenexus/api/workload/frameworks/apps"
	"github.com/kube-nexus/kubenexus/api/workload/frameworks/argo"
	"github.com/kube-nexus/kubenexus/api/workload/frameworks/batch"
	"github.com/kube-nexus/kubenexus/api/workload/frameworks/jobset"
	"github.com/kube-nexus/kubenexus/api/workload/frameworks/kserve"
	"github.com/kube-nexus/kubenexus/api/workload/frameworks/kubeflow"
	"github.com/kube-nexus/kubenexus/api/workload/frameworks/lws"
	"github.com/kube-nexus/kubenexus/api/workload/frameworks/notebooks"
	"github.com/kube-nexus/kubenexus/api/workload/frameworks/ray"
	"github.com/kube-nexus/kubenexus/api/workload/frameworks/spark"
)

// table is the workload frameworks KubeNexus knows (one folder each under
// frameworks/), in the order a pod is matched against them: the first that
// recognises it names its framework, role and class. A Job's pods come after the
// frameworks whose pods a Job controls (JobSet); Kubernetes' own controllers last.
var table = []frameworks.Framework{
	spark.Framework{},
	kubeflow.Framework{},
	jobset.Framework{},
	ray.Framework{},
	lws.Framework{},
	kserve.Framework{},
	notebooks.Framework{},
	argo.Framework{},
	batch.Framework{},
	apps.Framework{},
}

// frameworkOf is the framework of integration (nil: none).
func frameworkOf(integration v1alpha1.Integration) frameworks.Framework {
	return find(func(f frameworks.Framework) bool { return slices.Contains(f.Integrations(), integration) })
}

// ownerOf is the framework whose objects of kind gk size gangs (nil: none).
func ownerOf(gk schema.GroupKind) frameworks.Framework {
	return find(func(f frameworks.Framework) bool {
		return slices.ContainsFunc(f.Owners(), func(gvk schema.GroupVersionKind) bool { return gvk.GroupKind() == gk })
	})
}

// DefaultRecovery is what a running gang whose workload is of kind gk needs when
// it lost members and its PodGroup says nothing: its framework's policy, else
// Repair.
func DefaultRecovery(gk schema.GroupKind) v1alpha1.RecoveryPolicy {
	if f := ownerOf(gk); f != nil {
		if p := f.Recovery(gk); p != "" {
			return p
		}
	}
	return v1alpha1.RecoveryRepair
}

// readerOf is the framework that tells the pods of objects of kind gk (nil: none).
func readerOf(gk schema.GroupKind) frameworks.Framework {
	return find(func(f frameworks.Framework) bool { return slices.Contains(f.Reads(), gk) })
}

// find is the first framework of the table that has, nil when none has.
func find(has func(frameworks.Framework) bool) frameworks.Framework {
	for _, f := range table {
		if has(f) {
			return f
		}
	}
	return nil
}

// GangOwners are the kinds whose objects size gangs, at the version read when a
// pod's owner reference names none.
func GangOwners() []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	for _, f := range table {
		out = append(out, f.Owners()...)
	}
	return out
}

// readable names the kinds whose pods ReplicasOf tells, for its error.
func readable() string {
	var kinds []string
	for _, f := range table {
		for _, k := range f.Reads() {
			kinds = append(kinds, k.Kind)
		}
	}
	if len(kinds) < 2 {
		return strings.Join(kinds, "")
	}
	return strings.Join(kinds[:len(kinds)-1], ", ") + " and " + kinds[len(kinds)-1]
}
