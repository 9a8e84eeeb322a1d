package coscheduling

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/gangs"
)

// Members that share a ResourceClaim nobody has allocated yet. kube-scheduler's
// DynamicResources plugin allocates such a claim for the first pod reserved with it
// and refuses every other pod that uses it ("resource claim … is in the process of
// being allocated") until that pod's PreBind writes the allocation; outside its own
// PodGroup cycle (GenericWorkload, which KubeNexus's scheduler runs without) it
// shares a pending allocation with no other pod. A gang's members pass PreBind only
// together, after Permit: so of the members sharing an unallocated claim, one at a
// time can be reserved before the gang starts. A gang whose quorum needs more than
// that would reserve some members, hold their nodes at Permit until its timeout and
// try again, forever. It is refused before any member is reserved instead, naming
// the claim.

// ErrReasonSharedClaim is the reason of a gang refused because its quorum needs
// members that share a ResourceClaim not allocated yet.
const ErrReasonSharedClaim = "members share an unallocated ResourceClaim"

// sharedClaimShortfall says why the gang e (pod among it) cannot reach its quorum
// minMember when members that share an unallocated claim can start only one at a
// time; "" when it can. Members placed already (reserved, permitted or bound) are
// the claim's first user. Cost: nothing for a pod without claims; otherwise one
// claim-cache lookup per claim of a member with claims. Callers hold the index's
// read lock.
func (pl *Plugin) sharedClaimShortfall(e *gangs.Gang, pod *corev1.Pod, present int, minMember int32) string {
	if len(pod.Spec.ResourceClaims) == 0 || e == nil || pl.handle.SharedDRAManager() == nil {
		return ""
	}
	claims := pl.handle.SharedDRAManager().ResourceClaims()
	type user struct {
		name   string
		placed bool
	}
	users := map[string][]user{}
	add := func(p *corev1.Pod, placed bool) {
		if gang.IsGated(p) && !placed {
			return // not present: not counted in the quorum either
		}
		for _, name := range claimNames(p) {
			users[name] = append(users[name], user{p.Name, placed})
		}
	}
	for uid, p := range e.Members {
		if uid != pod.UID {
			add(p, placedMember(e, uid))
		}
	}
	add(pod, placedMember(e, pod.UID))
	blocked := map[string]bool{}
	var named string // the claim the message names: the one most members share
	var sharers []string
	for name, us := range users {
		if len(us) < 2 {
			continue
		}
		c, err := claims.Get(pod.Namespace, name)
		if err != nil || c.Status.Allocation != nil {
			continue // allocated (its users follow it), or not made yet (DynamicResources says so)
		}
		slices.SortFunc(us, func(a, b user) int {
			if a.placed != b.placed {
				if a.placed {
					return -1
				}
				return 1
			}
			return strings.Compare(a.name, b.name)
		})
		names := make([]string, len(us))
		for i, u := range us {
			names[i] = u.name
			if i > 0 && !u.placed {
				blocked[u.name] = true
			}
		}
		if len(us) > len(sharers) || len(us) == len(sharers) && name < named {
			named, sharers = name, names
		}
	}
	if len(blocked) == 0 || present-len(blocked) >= int(minMember) {
		return ""
	}
	klog.V(4).InfoS("Gang's quorum needs members that share an unallocated claim", "gang", e.Key, "blocked", len(blocked), "present", present, "minMember", minMember)
	return fmt.Sprintf("%s: gang %s: members %s share ResourceClaim %s/%s, which is not allocated; kube-scheduler's DRA plugin allocates a claim for one pod at a time, "+
		"when that pod binds, and the gang's members bind only together, so %d of its %d present members can start and it needs %d. "+
		"Give each member its own claim (resourceClaimTemplateName), or have the claim allocated before the gang starts",
		ErrReasonSharedClaim, e.Key, strings.Join(sharers, ", "), pod.Namespace, named, present-len(blocked), present, minMember)
}

// placedMember reports whether the member is reserved, permitted or bound.
func placedMember(e *gangs.Gang, uid types.UID) bool {
	return e.Assigned.Has(uid) || e.Assumed.Has(uid) || e.Allowed.Has(uid)
}

// claimNames are the names of the ResourceClaims the pod uses: named in its spec,
// or made for it from a template (its status).
func claimNames(p *corev1.Pod) []string {
	var out []string
	for _, pc := range p.Spec.ResourceClaims {
		name := ""
		if pc.ResourceClaimName != nil {
			name = *pc.ResourceClaimName
		}
		for _, st := range p.Status.ResourceClaimStatuses {
			if st.Name == pc.Name && st.ResourceClaimName != nil {
				name = *st.ResourceClaimName
			}
		}
		if name != "" {
			out = append(out, name)
		}
	}
	return out
}

// isSchedulableAfterClaimChange queues a member refused for a shared claim when a
// claim it uses is allocated or deleted (a claim made again may be unshared).
func isSchedulableAfterClaimChange(_ klog.Logger, pod *corev1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	if len(pod.Spec.ResourceClaims) == 0 {
		return fwk.QueueSkip, nil
	}
	c, ok := newObj.(*resourceapi.ResourceClaim)
	if !ok {
		c, ok = oldObj.(*resourceapi.ResourceClaim)
	}
	if !ok || c.Namespace != pod.Namespace || !slices.Contains(claimNames(pod), c.Name) {
		return fwk.QueueSkip, nil
	}
	if newObj != nil && c.Status.Allocation == nil {
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
}
