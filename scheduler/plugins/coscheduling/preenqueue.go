package coscheduling

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// PreEnqueue holds a gang member out of the active queue until the gang's quorum
// exists (the gang Service's admission, gangs.Service.Admit). In a profile with
// ProfileClassifier, which runs the same admission first, a member it holds never
// reaches this one; this one holds the members of a profile without it.
func (pl *Plugin) PreEnqueue(ctx context.Context, pod *corev1.Pod) *fwk.Status {
	return pl.index.Readmit(ctx, pod)
}
