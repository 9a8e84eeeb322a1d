package explain

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// quotaFit is the flavors Kueue would assign a job now without borrowing: for each
// resource group of the ClusterQueue that covers something the job asks for, the
// first flavor, in the queue's order, whose nominal quota less what is reserved in it
// holds the job's whole request of every covered resource. short says why not, for
// the first group no flavor of which holds it, or which requested resource no group
// covers ("" when the job fits). The pods resource counts only where a group covers
// it. Borrowing from the cohort, preemption within it and fair sharing are not
// computed.
func quotaFit(cq *kueue.ClusterQueue, need corev1.ResourceList) (flavors []string, short string) {
	reserved := map[kueue.ResourceFlavorReference]map[corev1.ResourceName]resource.Quantity{}
	for _, fu := range cq.Status.FlavorsReservation {
		m := map[corev1.ResourceName]resource.Quantity{}
		for _, r := range fu.Resources {
			m[r.Name] = r.Total
		}
		reserved[fu.Name] = m
	}
	covered := map[corev1.ResourceName]bool{}
	for _, rg := range cq.Spec.ResourceGroups {
		var asked []corev1.ResourceName
		for _, name := range rg.CoveredResources {
			covered[name] = true
			if q, ok := need[name]; ok && q.Sign() > 0 {
				asked = append(asked, name)
			}
		}
		if len(asked) == 0 {
			continue
		}
		var best string
		bestFree := int64(-1)
		fits := ""
		for _, f := range rg.Flavors {
			nominal := map[corev1.ResourceName]resource.Quantity{}
			for _, r := range f.Resources {
				nominal[r.Name] = r.NominalQuota
			}
			ok := true
			for _, name := range asked {
				free := nominal[name]
				free.Sub(reserved[f.Name][name])
				q := need[name]
				if free.Cmp(q) < 0 {
					ok = false
					// The message names the first asked resource the flavor lacks, of the
					// flavor with the most of it free.
					if free.MilliValue() > bestFree {
						bestFree = free.MilliValue()
						used, n, left := reserved[f.Name][name], nominal[name], nonNegative(free)
						best = fmt.Sprintf("%s: %s needed, %s free in flavor %s (nominal %s, reserved %s)", name, q.String(), left.String(), f.Name, n.String(), used.String())
					}
					break
				}
			}
			if ok {
				fits = string(f.Name)
				break
			}
		}
		if fits == "" {
			if best == "" {
				best = "no flavor of the resource group covering " + names(asked) + " has quota"
			}
			return nil, best
		}
		flavors = append(flavors, fits)
	}
	var uncovered []corev1.ResourceName
	for name, q := range need {
		if !covered[name] && name != corev1.ResourcePods && q.Sign() > 0 {
			uncovered = append(uncovered, name)
		}
	}
	if len(uncovered) > 0 {
		return nil, "no resource group covers " + names(uncovered) + ", which the job asks for"
	}
	return flavors, ""
}

func nonNegative(q resource.Quantity) resource.Quantity {
	if q.Sign() < 0 {
		return resource.Quantity{Format: q.Format}
	}
	return q
}

func names(rs []corev1.ResourceName) string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}
