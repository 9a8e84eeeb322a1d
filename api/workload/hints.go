package workload

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kube-nexus/kubenexus/api/internal/untrusted"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// NUMAPolicyOf reads a pod's NUMA placement hint from its annotations:
// numa.scheduling.kubenexus.io/policy, else the predecessor's
// scheduling.kubenexus.io/numa-policy. It returns "" when the pod sets none (or
// sets "none"), and an error naming the key and the allowed values for anything
// else it does not know; "single-numa-node" (the kubelet's spelling, and the
// predecessor's) is read as single-numa.
func NUMAPolicyOf(annotations map[string]string) (v1alpha1.NUMAPolicy, error) {
	key := v1alpha1.AnnotationNUMAPolicy
	raw, ok := annotations[key]
	if !ok {
		key = v1alpha1.AnnotationNUMAPolicyLegacy
		if raw, ok = annotations[key]; !ok {
			return "", nil
		}
	}
	switch p := v1alpha1.NUMAPolicy(raw); p {
	case v1alpha1.NUMAPolicyBestEffort, v1alpha1.NUMAPolicyRestricted, v1alpha1.NUMAPolicySingleNUMA, v1alpha1.NUMAPolicyIsolated:
		return p, nil
	case "single-numa-node":
		return v1alpha1.NUMAPolicySingleNUMA, nil
	case "none", "":
		return "", nil
	}
	return "", fmt.Errorf("annotation %s=%q is not a NUMA policy: use best-effort, restricted, single-numa, isolated or none", key, untrusted.Truncate(raw))
}

// maxVRAMRequest bounds scheduling.kubenexus.io/vram-request: no GPU has more than
// a few hundred GiB; 64Ti leaves room and keeps arithmetic far from overflow.
var maxVRAMRequest = resource.MustParse("64Ti")

// VRAMRequestOf reads the GPU memory a pod needs per GPU, in bytes, from
// scheduling.kubenexus.io/vram-request. ok is false when the pod sets none; an
// unparsable, non-positive or absurd value is an error naming the key.
func VRAMRequestOf(annotations map[string]string) (bytes int64, ok bool, err error) {
	raw, ok := annotations[v1alpha1.AnnotationVRAMRequest]
	if !ok {
		return 0, false, nil
	}
	q, perr := resource.ParseQuantity(raw)
	if perr != nil || q.Sign() <= 0 || q.Cmp(maxVRAMRequest) > 0 {
		return 0, true, fmt.Errorf("annotation %s=%q must be a quantity of GPU memory per GPU greater than 0 and at most %s (for example 40Gi)",
			v1alpha1.AnnotationVRAMRequest, untrusted.Truncate(raw), maxVRAMRequest.String())
	}
	return q.Value(), true, nil
}
