package coscheduling

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/cyclestate"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/gangs"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/nodefree"
)

const stateKey fwk.StateKey = "PreFilter" + Name

// stateData is what PreFilter learnt about the pod's gang, for Reserve and Permit.
type stateData struct {
	key       gang.Key
	minMember int32
	podGroup  *v1alpha1.PodGroup
}

// Clone returns the same data: it is never modified after PreFilter.
func (s *stateData) Clone() fwk.StateData { return s }

func gangState(cs fwk.CycleState) *stateData { return cyclestate.Read[*stateData](cs, stateKey) }

// PreFilter refuses members of a gang that is backing off, that lost its quorum, or
// whose minResources exceed what the cluster has free.
func (pl *Plugin) PreFilter(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	m, ok, err := pl.index.Of(pod)
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("%s: %v", ErrReasonInvalidGangLabels, err))
	}
	if !ok {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	minMember, pg, known := pl.index.Quorum(m.Key, m.MinMember)
	if !known {
		if pl.pgs != nil {
			if err := pl.pgs.ReadError(m.Key); err != nil {
				return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("%s %s: %v", ErrReasonPodGroupUnreadable, m.Key, err))
			}
		}
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, missingPodGroupMessage(m))
	}

	pl.index.RLock()
	e := pl.index.Get(m.Key)
	var ungated int
	var backoffUntil = pl.now()
	var lastRejection string
	var placedReq corev1.ResourceList
	ungated = gangs.PresentMembers(e, pod)
	short := gangs.RolesShort(e, pod, pg)
	sharedClaim := ""
	if ungated >= int(minMember) && len(short) == 0 {
		sharedClaim = pl.sharedClaimShortfall(e, pod, ungated, minMember)
	}
	if e != nil {
		backoffUntil, lastRejection = e.BackoffUntil, e.LastRejection
		if e.UntilRoom && e.RoomEpoch != pl.index.RoomEpoch() && !pl.now().Before(e.RoomMadeUntil) {
			// Rejected for want of room, holding nothing: room freed since, and the
			// gang is tried now rather than when its backoff runs out. Not while
			// preemption is making room for it: room freed elsewhere before its
			// victims are gone would have it preempt a second time, in another
			// domain (GangPreemption activates it once they are).
			backoffUntil = time.Time{}
		}
		if pg != nil && len(pg.Spec.MinResources) > 0 {
			placedReq = placedRequests(e)
		}
	}
	pl.index.RUnlock()

	if pl.now().Before(backoffUntil) {
		// A stable message, saying why the gang was rejected: a countdown would
		// rewrite the pod's condition every attempt.
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("%s: %s (%s)", ErrReasonBackoff, m.Key, lastRejection))
	}
	if ungated < int(minMember) || len(short) > 0 {
		pl.index.Hold(pod.UID)
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, gangs.WaitingForMembers(m.Key, ungated, minMember, gang.RolesOf(pg), short))
	}
	pl.index.Release(pod.UID) // has its quorum: node events may matter to it again
	if sharedClaim != "" {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, sharedClaim)
	}
	if pl.index.YieldsForRoom(m.Key) {
		// Refused for want of room now, it is woken with them, after them.
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("%s: %s", ErrReasonYield, m.Key))
	}
	if pg != nil && len(pg.Spec.MinResources) > 0 {
		if short := placement.Shortfall(pg.Spec.MinResources, placedReq, func(name corev1.ResourceName) resource.Quantity { return freeOf(name, nodes) }); len(short) > 0 {
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
				fmt.Sprintf("%s: %s needs %s more than the cluster has free", ErrReasonMinResources, m.Key, strings.Join(short, ", ")))
		}
	}
	cs.Write(stateKey, &stateData{key: m.Key, minMember: minMember, podGroup: pg})
	return nil, nil
}

// PreFilterExtensions is not needed: the gang check does not depend on other pods
// on a node.
func (pl *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// placedRequests sums the requests of members already bound, permitted or reserved;
// their share of minResources is already taken out of the nodes' free capacity.
func placedRequests(e *gangs.Gang) corev1.ResourceList {
	total := corev1.ResourceList{}
	for uid, p := range e.Members {
		if e.Assigned.Has(uid) || e.Assumed.Has(uid) || e.Allowed.Has(uid) {
			addTo(total, resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}))
		}
	}
	return total
}

func addTo(total, rl corev1.ResourceList) {
	for name, q := range rl {
		sum := total[name]
		sum.Add(q)
		total[name] = sum
	}
}

// freeOf sums allocatable minus requested of one resource over the snapshot's nodes
// (the snapshot counts assumed and bound pods).
func freeOf(name corev1.ResourceName, nodes []fwk.NodeInfo) resource.Quantity {
	var milli int64
	for _, n := range nodes {
		if f := nodefree.Of(n, name); f > 0 {
			milli += f
		}
	}
	return *resource.NewMilliQuantity(milli, resource.DecimalSI)
}

// missingPodGroupMessage says which PodGroup a member waits for, the key that named
// it, and how to create it.
func missingPodGroupMessage(m gang.Membership) string {
	if m.Key.Composite {
		return fmt.Sprintf("%s %s: no CompositePodGroup %q (%s) exists in namespace %s (named by the spec.parentCompositePodGroupName of the pod's PodGroup); "+
			"the pod's workload controller creates it from its Workload, or create one with spec.schedulingPolicy.gang.minGroupCount: how many of its PodGroups must start",
			ErrReasonPodGroupMissing, m.Key, m.Key.Name, v1alpha1.CompositePodGroupGVK.GroupVersion(), m.Key.Namespace)
	}
	if m.Dialect == gang.DialectNative {
		return fmt.Sprintf("%s %s: no PodGroup %q (%s) exists in namespace %s (named by the pod's spec.schedulingGroup.podGroupName); "+
			"the pod's workload controller creates it from its Workload, or create one with spec.schedulingPolicy.gang.minCount: the gang's size",
			ErrReasonPodGroupMissing, m.Key, m.Key.Name, v1alpha1.NativePodGroupGVK.GroupVersion(), m.Key.Namespace)
	}
	named := "label " + v1alpha1.LabelPodGroup
	switch m.Dialect {
	case gang.DialectVolcano:
		named = "annotation " + v1alpha1.AnnotationVolcanoGroupName
	case gang.DialectKAI:
		named = "annotation " + v1alpha1.AnnotationKAIPodGroupName
	}
	return fmt.Sprintf("%s %s: no PodGroup %q exists in namespace %s (named by the pod's %s); create one "+
		"(apiVersion %s, kind PodGroup, spec.minMember: the gang's size), or label the pods %s and %s instead",
		ErrReasonPodGroupMissing, m.Key, m.Key.Name, m.Key.Namespace, named,
		v1alpha1.GroupVersion, v1alpha1.LabelKubeNexusGangName, v1alpha1.LabelKubeNexusGangMinAvailable)
}
