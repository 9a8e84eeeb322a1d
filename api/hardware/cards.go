package hardware

import (
	"context"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/cel"
)

// Shared GPUs. A node's DRA devices describe its physical GPUs (cards) in one of
// three ways: a device allocated whole, a device with allowMultipleAllocations whose
// allocations each consume part of its capacities (consumable capacity), or the
// counter set that a card's whole device and its partitions draw on (partitionable
// devices). Cards says how much of each card is free, as a share of the card, which
// is the quantity the fragmentation measure of Weng et al. (ATC'23) counts: a card
// partly used can still take small tasks but not a task that needs a whole card.

// Card is one physical GPU of a node.
type Card struct {
	// Total and Used are per dimension, in milli-units: a shared device's capacities
	// (qualified names), the counters of a partitioned card's set, one unit ("device")
	// for a device allocated whole.
	Total, Used map[string]int64
}

// wholeDevice is the dimension of a card that is one device allocated whole.
const wholeDevice = "device"

// Free is the share of the card that is still free, in thousandths of the card: the
// least free share over its dimensions.
func (c *Card) Free() int64 {
	free := int64(1000)
	for dim, total := range c.Total {
		if total <= 0 {
			continue
		}
		left := max(0, total-c.Used[dim])
		free = min(free, left*1000/total)
	}
	return free
}

// Allocation says what allocated ResourceClaims hold of a node's devices.
type Allocation interface {
	// Allocated reports whether a device that is not shared is allocated.
	Allocated(d *Device) bool
	// Consumed is what allocations consume of a shared device, per qualified
	// capacity name, in milli-units.
	Consumed(d *Device) map[string]int64
}

// GPUs are a node's cards, the devices that make them up, and what is allocated.
type GPUs struct {
	devs []Device
	// card is, per device, the index of its card in Cards; -1 for a device that is
	// no GPU.
	card  []int
	Cards []Card
	// taken marks the devices not shared that are allocated.
	taken []bool
}

// NewGPUs groups a node's devices into cards: gpu marks the devices that are GPUs
// (devices of the node that match a GPU DeviceClass), counters are the pools' shared
// counters, alloc what is allocated (nil: nothing). A partition is part of the card
// whose counter set it draws on first; a device with no counters is a card of its
// own.
func NewGPUs(devs []Device, gpu []bool, counters Counters, alloc Allocation) *GPUs {
	g := &GPUs{devs: devs, card: make([]int, len(devs)), taken: make([]bool, len(devs))}
	bySet := map[string]int{}
	for i := range devs {
		g.card[i] = -1
		if i >= len(gpu) || !gpu[i] {
			continue
		}
		d := &devs[i]
		switch {
		case len(d.Consumes) > 0:
			set := d.Consumes[0].Set
			c, ok := bySet[set]
			if !ok {
				total, known := counters[set]
				if !known {
					continue // a set the pool does not publish: never allocatable
				}
				c = len(g.Cards)
				bySet[set] = c
				g.Cards = append(g.Cards, Card{Total: copyMilli(total), Used: map[string]int64{}})
			}
			g.card[i] = c
			if alloc != nil && alloc.Allocated(d) {
				g.taken[i] = true
				addMilli(g.Cards[c].Used, d.Consumes[0].Counters)
			}
		case d.Shared:
			total := make(map[string]int64, len(d.Capacity))
			for k, q := range d.Capacity {
				total[k] = q.MilliValue()
			}
			used := map[string]int64{}
			if alloc != nil {
				addMilli(used, alloc.Consumed(d))
			}
			g.card[i] = len(g.Cards)
			g.Cards = append(g.Cards, Card{Total: total, Used: used})
		default:
			used := map[string]int64{}
			if alloc != nil && alloc.Allocated(d) {
				g.taken[i] = true
				used[wholeDevice] = 1000
			}
			g.card[i] = len(g.Cards)
			g.Cards = append(g.Cards, Card{Total: map[string]int64{wholeDevice: 1000}, Used: used})
		}
	}
	return g
}

// Len is the number of the node's devices (GPUs or not) that Take's matches indexes.
func (g *GPUs) Len() int { return len(g.devs) }

// Clone is a copy that Take can change.
func (g *GPUs) Clone() *GPUs {
	out := &GPUs{devs: g.devs, card: g.card, taken: append([]bool(nil), g.taken...), Cards: make([]Card, len(g.Cards))}
	for i, c := range g.Cards {
		out.Cards[i] = Card{Total: c.Total, Used: copyMilli(c.Used)}
	}
	return out
}

// GPURequest is one request of a ResourceClaim for GPU devices: the selectors of its
// DeviceClass and its own (CEL), how many devices, and, for a shared device, the
// capacity each allocation asks for (nil: the policy's defaults).
type GPURequest struct {
	Selectors []string
	Count     int64
	Capacity  map[resourceapi.QualifiedName]resource.Quantity
}

// Take allocates req on the cards as the DRA allocator would for a single request:
// the first devices in the node's order that match (matches says whether device i
// matches req's selectors: MatchesSelectors, or a memo of it), are not taken, and
// have room (counters left for a partition, capacity left for a shared device), and
// reports whether it found Count of them. It changes g.
func (g *GPUs) Take(req GPURequest, matches func(i int) bool) bool {
	need := max(req.Count, 1)
	for i := range g.devs {
		if need == 0 {
			break
		}
		c := g.card[i]
		if c < 0 || g.taken[i] {
			continue
		}
		d := &g.devs[i]
		card := &g.Cards[c]
		use, ok := d.use(req.Capacity)
		if !ok || !fitsIn(card, use) || !matches(i) {
			continue
		}
		addMilli(card.Used, use)
		if !d.Shared {
			g.taken[i] = true
		}
		need--
	}
	return need == 0
}

// CanHold reports whether at least Count of g's devices that match req (matches, as
// for Take) could each take one allocation of it now: not taken, with room left on
// their card. It changes nothing. It is a necessary condition for the DRA allocator
// to satisfy req on the node, whatever devices it picks: Take's first fit can fail
// where it holds (partitions whose cards the first picks exhaust), never the other
// way round.
func (g *GPUs) CanHold(req GPURequest, matches func(i int) bool) bool {
	need := max(req.Count, 1)
	for i := range g.devs {
		c := g.card[i]
		if c < 0 || g.taken[i] {
			continue
		}
		use, ok := g.devs[i].use(req.Capacity)
		if !ok || !fitsIn(&g.Cards[c], use) || !matches(i) {
			continue
		}
		if need--; need == 0 {
			return true
		}
	}
	return false
}

// Reference is the share of one card that one device of req takes on the first
// device of g it matches, in thousandths, and whether one matched: 1000 for a device
// allocated whole; for a partition, its largest share of its card's counters; for a
// shared device, the largest share of a capacity its allocation consumes.
func (g *GPUs) Reference(req GPURequest, matches func(i int) bool) (int64, bool) {
	for i := range g.devs {
		c := g.card[i]
		if c < 0 {
			continue
		}
		d := &g.devs[i]
		use, ok := d.use(req.Capacity)
		if !ok || !matches(i) {
			continue
		}
		var share int64
		for dim, v := range use {
			if t := g.Cards[c].Total[dim]; t > 0 {
				share = max(share, (v*1000+t-1)/t)
			}
		}
		return min(max(share, 1), 1000), true
	}
	return 0, false
}

// use is what allocating the device for a request asking capacity takes from its
// card, false when the device cannot serve it: a partition's counters, a shared
// device's Consumption, all of a device allocated whole (which must have the
// capacity asked for).
func (d *Device) use(capacity map[resourceapi.QualifiedName]resource.Quantity) (map[string]int64, bool) {
	switch {
	case len(d.Consumes) > 0:
		return d.Consumes[0].Counters, d.holds(capacity)
	case d.Shared:
		return Consumption(d, capacity)
	}
	return map[string]int64{wholeDevice: 1000}, d.holds(capacity)
}

// Matcher returns whether each of g's devices matches the selectors (CEL, evaluated
// once per device).
func (g *GPUs) Matcher(ctx context.Context, selectors []string) func(i int) bool {
	memo := make([]int8, len(g.devs))
	return func(i int) bool {
		if memo[i] == 0 {
			memo[i] = -1
			if MatchesSelectors(ctx, selectors, &g.devs[i]) {
				memo[i] = 1
			}
		}
		return memo[i] > 0
	}
}

// holds reports whether a device allocated whole has at least the capacity asked for.
func (d *Device) holds(req map[resourceapi.QualifiedName]resource.Quantity) bool {
	for name, q := range req {
		c, ok := d.Capacity[Qualify(d.Driver, name)]
		if !ok || c.Cmp(q) < 0 {
			return false
		}
	}
	return true
}

// Consumption is what one allocation of req takes from a shared device, per
// qualified capacity name in milli-units, as the DRA allocator computes it: the
// request rounded up to the capacity's requestPolicy (validRange min and step, or
// the next validValue), the policy's default when the request names no amount, the
// whole capacity when there is neither. False when req names a capacity the device
// does not have or an amount its policy does not allow.
func Consumption(d *Device, req map[resourceapi.QualifiedName]resource.Quantity) (map[string]int64, bool) {
	for name := range req {
		if _, ok := d.Capacity[Qualify(d.Driver, name)]; !ok {
			return nil, false
		}
	}
	out := make(map[string]int64, len(d.Capacity))
	for k, total := range d.Capacity {
		var asked *resource.Quantity
		for name, q := range req {
			if Qualify(d.Driver, name) == k {
				asked = &q
			}
		}
		policy := d.Policies[k]
		v, ok := consumed(asked, total.MilliValue(), policy)
		if !ok {
			return nil, false
		}
		out[k] = v
	}
	return out, true
}

// consumed is one capacity's consumption in milli-units (see Consumption).
func consumed(asked *resource.Quantity, total int64, p *resourceapi.CapacityRequestPolicy) (int64, bool) {
	if asked == nil {
		if p != nil && p.Default != nil {
			return p.Default.MilliValue(), true
		}
		return total, true
	}
	v := asked.MilliValue()
	if p == nil {
		return v, true
	}
	switch {
	case p.ValidRange != nil && p.ValidRange.Min != nil:
		r := p.ValidRange
		lo := r.Min.MilliValue()
		if v < lo {
			v = lo
		} else if r.Step != nil && r.Step.MilliValue() > 0 {
			step := r.Step.MilliValue()
			v = lo + (v-lo+step-1)/step*step
		}
		if r.Max != nil && v > r.Max.MilliValue() {
			return 0, false
		}
	case len(p.ValidValues) > 0:
		best := int64(-1)
		for _, q := range p.ValidValues {
			if m := q.MilliValue(); m >= v && (best < 0 || m < best) {
				best = m
			}
		}
		if best < 0 {
			return 0, false
		}
		v = best
	}
	return v, true
}

// MatchesSelectors reports whether the device matches every CEL selector
// (selectorsMatch).
func MatchesSelectors(ctx context.Context, exprs []string, d *Device) bool {
	if len(exprs) == 0 {
		return true
	}
	if d.Spec == nil {
		return false
	}
	return selectorsMatch(ctx, exprs, cel.Device{Driver: d.Driver, AllowMultipleAllocations: d.Spec.AllowMultipleAllocations, Attributes: d.Spec.Attributes, Capacity: d.Spec.Capacity})
}

// fitsIn reports whether use fits in what the card has left.
func fitsIn(c *Card, use map[string]int64) bool {
	for dim, v := range use {
		total, ok := c.Total[dim]
		if !ok || c.Used[dim]+v > total {
			return false
		}
	}
	return true
}

func copyMilli(m map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func addMilli(into, add map[string]int64) {
	for k, v := range add {
		into[k] += v
	}
}
