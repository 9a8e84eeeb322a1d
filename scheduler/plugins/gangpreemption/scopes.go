package gangpreemption

// The scopes of a search: the node sets, each one topology domain, that a gang
// whose policy requires one domain is placed within (search.scopes; NetworkFabric's
// Anchored.Scopes names them).

// within returns the units (in their order) with a pod on a node of scope.
func (s *search) within(all []*unit, scope map[int]bool) []*unit {
	var out []*unit
	for _, u := range all {
		for _, p := range u.pods {
			if i, ok := s.byName[p.Spec.NodeName]; ok && scope[i] {
				out = append(out, u)
				break
			}
		}
	}
	return out
}

// inScope: node ni is in one of the scopes (every node is, without scopes).
func (s *search) inScope(ni int) bool {
	if s.scopes == nil {
		return true
	}
	for _, scope := range s.scopes {
		if scope[ni] {
			return true
		}
	}
	return false
}
