package networkfabric

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"

	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/snapshot"
)

// The domain a gang is anchored to is the one its placed members' nodes share;
// members in two domains, or on an unlabelled node, anchor it nowhere; a gang with
// none placed may go to any one domain.
func TestAnchoredScopes(t *testing.T) {
	var nodes []fwk.NodeInfo
	for _, n := range [][2]string{{"a-0", "a"}, {"a-1", "a"}, {"b-0", "b"}, {"x", ""}} {
		w := testutil.MakeNode(n[0])
		if n[1] != "" {
			w = w.Label("network.kubenexus.io/rack", n[1])
		}
		nodes = append(nodes, snapshot.NodeInfo(w.Obj()))
	}
	for name, tc := range map[string]struct {
		placed []string
		want   [][]string
	}{
		"placed in rack a":             {[]string{"a-0"}, [][]string{{"a-0", "a-1"}}},
		"placed in two racks":          {[]string{"a-0", "b-0"}, [][]string{{}}},
		"placed on an unlabelled node": {[]string{"x"}, [][]string{{}}},
		"none placed: each rack":       {nil, [][]string{{"a-0", "a-1"}, {"b-0"}}},
	} {
		var got [][]string
		for _, scope := range (&Anchored{Label: "network.kubenexus.io/rack", Placed: sets.New(tc.placed...)}).Scopes(nodes) {
			names := []string{}
			for i := range scope {
				names = append(names, nodes[i].Node().Name)
			}
			slices.Sort(names)
			got = append(got, names)
		}
		if !slices.EqualFunc(got, tc.want, slices.Equal[[]string]) {
			t.Errorf("%s: scopes %v, want %v", name, got, tc.want)
		}
	}
}
