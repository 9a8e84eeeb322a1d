package networkfabric

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"

	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/snapshot"
)

// The domain a gang is anchored to is the one its placed members' nodes share;
// members in two domains, or on an unlabelled node, anchor it nowhere.
func TestAnchoredIn(t *testing.T) {
	var nodes []fwk.NodeInfo
	for name, rack := range map[string]string{"a-0": "a", "a-1": "a", "b-0": "b", "x": ""} {
		w := testutil.MakeNode(name)
		if rack != "" {
			w = w.Label("network.kubenexus.io/rack", rack)
		}
		nodes = append(nodes, snapshot.NodeInfo(w.Obj()))
	}
	node := func(name string) fwk.NodeInfo {
		for _, ni := range nodes {
			if ni.Node().Name == name {
				return ni
			}
		}
		t.Fatalf("no node %s", name)
		return nil
	}
	for name, tc := range map[string]struct {
		placed []string
		want   map[string]bool
	}{
		"placed in rack a":             {[]string{"a-0"}, map[string]bool{"a-0": true, "a-1": true, "b-0": false, "x": false}},
		"placed in two racks":          {[]string{"a-0", "b-0"}, map[string]bool{"a-0": false, "a-1": false, "b-0": false}},
		"placed on an unlabelled node": {[]string{"x"}, map[string]bool{"a-0": false, "x": false}},
	} {
		in := (&Anchored{Label: "network.kubenexus.io/rack", Placed: sets.New(tc.placed...)}).In(nodes)
		for n, want := range tc.want {
			if got := in(node(n).Node()); got != want {
				t.Errorf("%s: node %s in the domain = %v, want %v", name, n, got, want)
			}
		}
	}
}
