package workload

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// GangSize is what the owning object says about its gang.
type GangSize struct {
	MinMember int32
	// Gang, when set, is the gang the pod joins instead of GangSource.Gang: the
	// owner runs its pods in stages (a JobSet's dependsOn) and this is the pod's.
	Gang string
	// ExcludesRole is a role whose pods are not members: an MPI launcher created
	// only once the workers run cannot be counted, or the gang would never form.
	ExcludesRole v1alpha1.WorkloadRole
}

// SizeFrom reads the gang size from the owning object's spec (read at src.GVK's
// version), as its framework declares it: Kubeflow's
// spec.runPolicy.schedulingPolicy.minAvailable, Spark's dynamicAllocation.minExecutors,
// Ray's minReplicas where set. It fails, naming the field, when the spec does not
// give a size from 1 to gang.MaxMinMember.
func SizeFrom(src GangSource, obj *unstructured.Unstructured) (GangSize, error) {
	f := ownerOf(src.GVK.GroupKind())
	if f == nil {
		return GangSize{}, fmt.Errorf("%s is not a gang owner KubeNexus knows", src.GVK.Kind)
	}
	size, err := f.Size(src.ref(), obj)
	if err != nil {
		return GangSize{}, err
	}
	n := size.Members
	if n > gang.MaxMinMember {
		return GangSize{}, fmt.Errorf("%s %s: its spec gives a gang of more than %d pods; KubeNexus needs 1 to %d", src.GVK.Kind, src.Name, gang.MaxMinMember, gang.MaxMinMember)
	}
	if n < 1 {
		return GangSize{}, fmt.Errorf("%s %s: its spec gives a gang of %d pods; KubeNexus needs 1 to %d", src.GVK.Kind, src.Name, n, gang.MaxMinMember)
	}
	return GangSize{MinMember: int32(n), Gang: size.Gang, ExcludesRole: size.ExcludesRole}, nil
}

// MaxMembersFrom is the most gang members the owning object's spec can run at once:
// the bound a PodGroup's minMember may not exceed. Declared minimums are ignored here
// (Kubeflow's minAvailable, Ray's minReplicas, Spark's minExecutors): a PodGroup may
// ask for any size up to what the workload creates, e.g. Ray's maxReplicas or
// Spark's maxExecutors. A framework that declares no minimum runs SizeFrom's.
func MaxMembersFrom(src GangSource, obj *unstructured.Unstructured) (int32, error) {
	f := ownerOf(src.GVK.GroupKind())
	if f == nil {
		return 0, fmt.Errorf("%s is not a gang owner KubeNexus knows", src.GVK.Kind)
	}
	n, ok := f.MaxMembers(src.ref(), obj)
	if !ok {
		size, err := SizeFrom(src, obj)
		return size.MinMember, err
	}
	if n < 1 || n > gang.MaxMinMember {
		return 0, fmt.Errorf("%s %s: its spec gives %d pods; KubeNexus needs 1 to %d", src.GVK.Kind, src.Name, n, gang.MaxMinMember)
	}
	return int32(n), nil
}
