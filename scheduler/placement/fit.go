package placement

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
)

type domain struct {
	name  string
	nodes []*PlanNode
}

// group collects the nodes of each domain of a level, in name order.
func group(nodes []PlanNode, level int) []domain {
	ptrs := make([]*PlanNode, len(nodes))
	for i := range nodes {
		ptrs[i] = &nodes[i]
	}
	return groupOf(ptrs, level)
}

// anchorDomains returns the domains of level that hold an anchor node.
func anchorDomains(nodes []PlanNode, level int) map[string]bool {
	var out map[string]bool
	for i := range nodes {
		if !nodes[i].Anchor {
			continue
		}
		if out == nil {
			out = map[string]bool{}
		}
		out[nodes[i].Domain(level)] = true
	}
	return out
}

// Domain is the node's domain at level: its label value there, or the node itself
// when it has none.
func (n *PlanNode) Domain(level int) string {
	if level < len(n.Domains) && n.Domains[level] != "" {
		return n.Domains[level]
	}
	return "node/" + n.Name
}

// preference is the mean Preference of the nodes the fit claims.
func preference(nodes []*PlanNode, claims map[string]map[corev1.ResourceName]int64) int64 {
	var sum, n int64
	for _, node := range nodes {
		if _, ok := claims[node.Name]; ok {
			sum += node.Preference
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / n
}

// keptWholeFree is the free capacity of resource per whole domain kept whole (nil:
// no node is in one).
func keptWholeFree(nodes []PlanNode, resource corev1.ResourceName) map[string]int64 {
	var free map[string]int64
	for i := range nodes {
		if n := &nodes[i]; n.KeepWhole && n.KeepDomain != "" {
			if free == nil {
				free = map[string]int64{}
			}
			free[n.KeepDomain] += n.Free[resource]
		}
	}
	return free
}

// stranded is the free capacity of resource that claims on nodes leave in the
// domains kept whole they break: whole domains (free: keptWholeFree) where they
// claim some room, less what they claim there.
func stranded(free map[string]int64, nodes []*PlanNode, claims map[string]map[corev1.ResourceName]int64, resource corev1.ResourceName) int64 {
	if free == nil {
		return 0
	}
	var claimed map[string]int64
	for _, n := range nodes {
		c, ok := claims[n.Name]
		if !ok || !n.KeepWhole || n.KeepDomain == "" {
			continue
		}
		if claimed == nil {
			claimed = map[string]int64{}
		}
		claimed[n.KeepDomain] += c[resource]
	}
	var left int64
	for d, c := range claimed {
		left += max(free[d]-c, 0)
	}
	return left
}

// upperBound is how many members could at most fit the domain: per shape, the sum
// of its per-node capacities as if no other shape competed. For a single shape it is
// exactly what fit places.
func upperBound(nodes []*PlanNode, shapes []Shape) int {
	total := 0
	for si, s := range shapes {
		n := 0
		for _, node := range nodes {
			if si < len(node.Eligible) && !node.Eligible[si] {
				continue
			}
			n += capacity(node, nil, s.Requests, perNode(s, s.Count-n))
			if n >= s.Count {
				break
			}
		}
		total += n
	}
	return total
}

// fit places the shapes into a domain's nodes on a scratch copy of their free
// capacity: how many members fit, the claims per node, and the free capacity of
// the dominant resource left in the domain.
func fit(nodes []*PlanNode, shapes []Shape, dominant corev1.ResourceName) (int, map[string]map[corev1.ResourceName]int64, int64) {
	remaining := cloneShapes(shapes)
	claims := map[string]map[corev1.ResourceName]int64{}
	placed := fitInto(nodes, remaining, claims)
	var left int64
	for _, n := range nodes {
		left += n.Free[dominant] - claims[n.Name][dominant]
	}
	return placed, claims, left
}

// fitInto places as many of the remaining members as fit on nodes (largest shapes
// first, each onto the nodes with the least room for it first, so that the domain
// is filled compactly, and onto nodes marked Last only after the others), recording
// claims and decrementing remaining. It returns the number of members placed.
func fitInto(nodes []*PlanNode, remaining []Shape, claims map[string]map[corev1.ResourceName]int64) int {
	order := make([]int, len(remaining))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return size(remaining[order[a]]) > size(remaining[order[b]]) })
	placed := 0
	for _, si := range order {
		s := &remaining[si]
		if s.Count == 0 {
			continue
		}
		type room struct {
			n   *PlanNode
			cap int
		}
		var rooms []room
		for _, n := range nodes {
			if si < len(n.Eligible) && !n.Eligible[si] {
				continue
			}
			if c := capacity(n, claims[n.Name], s.Requests, perNode(*s, s.Count)); c > 0 {
				rooms = append(rooms, room{n, c})
			}
		}
		sort.SliceStable(rooms, func(a, b int) bool {
			if rooms[a].n.Last != rooms[b].n.Last {
				return rooms[b].n.Last
			}
			return rooms[a].cap < rooms[b].cap
		})
		for _, r := range rooms {
			if s.Count == 0 {
				break
			}
			k := min(r.cap, s.Count)
			c := claims[r.n.Name]
			if c == nil {
				c = map[corev1.ResourceName]int64{}
				claims[r.n.Name] = c
			}
			for name, v := range s.Requests {
				c[name] += v * int64(k)
			}
			s.Count -= k
			placed += k
		}
	}
	return placed
}

// capacity is how many members requesting req fit on n given the claims already
// made on it, at most limit.
func capacity(n *PlanNode, claimed map[corev1.ResourceName]int64, req map[corev1.ResourceName]int64, limit int) int {
	c := limit
	for name, v := range req {
		if v <= 0 {
			continue
		}
		free := n.Free[name] - claimed[name]
		if free < v {
			return 0
		}
		if k := int(free / v); k < c {
			c = k
		}
	}
	return c
}

// perNode bounds limit by the shape's MaxPerNode.
func perNode(s Shape, limit int) int {
	if s.MaxPerNode > 0 && s.MaxPerNode < limit {
		return s.MaxPerNode
	}
	return limit
}
