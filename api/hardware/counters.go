package hardware

import (
	"cmp"
	"slices"

	resourceapi "k8s.io/api/resource/v1"
)

// Partitionable devices (DRA, beta and on from Kubernetes 1.36): a driver publishes
// one physical GPU as several devices — the whole card and the partitions carved
// from it (MIG-like profiles) — that draw on the same shared counters (the card's
// memory, its compute slices), published in a ResourceSlice of the pool that has
// counter sets instead of devices. Allocating one takes its counters from the set,
// so the whole card and its partitions are never allocated together, and a count of
// devices is not a count of what a node can hand out at once.
//
// Consumable capacity (beta and on from 1.36): a device with
// allowMultipleAllocations is shared by several allocations, each taking part of
// its capacity.

// CurrentSlices drops the slices of a pool older than its newest generation: while a
// driver republishes a pool, both generations exist for a moment, and the DRA
// allocator reads only the newest.
func CurrentSlices(all []*resourceapi.ResourceSlice) []*resourceapi.ResourceSlice {
	newest := map[string]int64{}
	for _, s := range all {
		k := s.Spec.Driver + "/" + s.Spec.Pool.Name
		if g, ok := newest[k]; !ok || s.Spec.Pool.Generation > g {
			newest[k] = s.Spec.Pool.Generation
		}
	}
	out := all[:0:0]
	for _, s := range all {
		if s.Spec.Pool.Generation == newest[s.Spec.Driver+"/"+s.Spec.Pool.Name] {
			out = append(out, s)
		}
	}
	return out
}

// CounterUse is what allocating a device takes from one counter set of its pool.
type CounterUse struct {
	// Set is the counter set, qualified by driver and pool (CounterSetKey).
	Set string
	// Counters are in milli-units.
	Counters map[string]int64
}

// Counters are the shared counters of the pools, by qualified set (CounterSetKey),
// in milli-units.
type Counters map[string]map[string]int64

// CounterSetKey qualifies a counter set's name by its driver and pool, in which
// set names are unique.
func CounterSetKey(driver, pool, set string) string { return driver + "/" + pool + "/" + set }

// CountersOf adds the counter sets a ResourceSlice publishes to into.
func CountersOf(s *resourceapi.ResourceSlice, into Counters) {
	for _, cs := range s.Spec.SharedCounters {
		m := make(map[string]int64, len(cs.Counters))
		for name, c := range cs.Counters {
			m[name] = c.Value.MilliValue()
		}
		into[CounterSetKey(s.Spec.Driver, s.Spec.Pool.Name, cs.Name)] = m
	}
}

// Shares is how many allocations without capacity requests a device takes at once,
// as the DRA allocator counts them: one for a device allocated whole; for one with
// allowMultipleAllocations, the fewest times a capacity's requestPolicy default
// fits in it (a capacity without a default is consumed whole by such an
// allocation, so one).
func (d *Device) Shares() int64 {
	if !d.Shared {
		return 1
	}
	n := int64(-1)
	for name, q := range d.Capacity {
		per := d.Defaults[name]
		if per <= 0 {
			return 1
		}
		k := q.MilliValue() / per
		if n < 0 || k < n {
			n = k
		}
	}
	return max(n, 1)
}

// Simultaneous returns a largest set of the wanted devices that can be allocated
// together with the taken ones (already allocated: their counters are spent), as
// the DRA allocator would find room for them: devices that consume no counter
// always; a partition only while its pool's counter sets still hold what it takes,
// the smallest first. A device that names a counter set its pool does not publish
// is never allocatable. A taken device that is also wanted (a shared device with
// room left) costs nothing more. The count is exact for the usual layouts (one
// counter set per card, the card and its partitions); compatibility groups
// (alpha in 1.37) are not read.
func Simultaneous(devs []Device, counters Counters, taken, wanted func(*Device) bool) []*Device {
	left := make(Counters, len(counters))
	spend := func(d *Device) bool {
		for _, u := range d.Consumes {
			set, ok := left[u.Set]
			if !ok {
				total, known := counters[u.Set]
				if !known {
					return false
				}
				set = make(map[string]int64, len(total))
				for k, v := range total {
					set[k] = v
				}
				left[u.Set] = set
			}
			for name, v := range u.Counters {
				if set[name] < v {
					return false
				}
			}
		}
		for _, u := range d.Consumes {
			for name, v := range u.Counters {
				left[u.Set][name] -= v
			}
		}
		return true
	}
	var out, partitions []*Device
	for i := range devs {
		d := &devs[i]
		isTaken := taken != nil && taken(d)
		if isTaken {
			spend(d)
		}
		switch {
		case !wanted(d):
		case isTaken || len(d.Consumes) == 0:
			out = append(out, d)
		default:
			partitions = append(partitions, d)
		}
	}
	if len(partitions) == 0 {
		return out
	}
	cost := func(d *Device) float64 {
		var c float64
		for _, u := range d.Consumes {
			for name, v := range u.Counters {
				if total := counters[u.Set][name]; total > 0 {
					c += float64(v) / float64(total)
				}
			}
		}
		return c
	}
	slices.SortStableFunc(partitions, func(a, b *Device) int {
		return cmp.Or(cmp.Compare(cost(a), cost(b)), cmp.Compare(a.Name, b.Name))
	})
	for _, d := range partitions {
		if spend(d) {
			out = append(out, d)
		}
	}
	return out
}
