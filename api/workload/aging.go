package workload

import "time"

// agingEpoch is the fixed reference starvation aging is measured from: a key of each
// queued group alone, never of the current time, so that the order it gives stays a
// strict weak ordering.
var agingEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// AgedPriority is the priority KubeNexus's queue compares for a group of the given
// priority queued at queued: with starvation aging on (agingSeconds > 0), one point
// higher per agingSeconds it was queued earlier than another. Coscheduling's queue
// sort and the start forecast both order by it.
func AgedPriority(priority int32, queued time.Time, agingSeconds int32) float64 {
	p := float64(priority)
	if agingSeconds <= 0 {
		return p
	}
	return p - queued.Sub(agingEpoch).Seconds()/float64(agingSeconds)
}
