package placement

import (
	"math"
	"testing"
)

func TestFragmentation(t *testing.T) {
	// A quarter 1-GPU tasks, half 4-GPU, a quarter 8-GPU; each asks 1 CPU per GPU.
	d := Demand{{GPUs: 1, Weight: 1, MilliCPU: 1000}, {GPUs: 4, Weight: 2, MilliCPU: 4000}, {GPUs: 8, Weight: 1, MilliCPU: 8000}}
	room := func(gpus int64) Room { return Room{GPUs: gpus, MilliCPU: 64000, Memory: 1 << 40} }
	tests := []struct {
		free int64
		want float64
	}{
		{8, 0},        // every task fits
		{4, 4 * 0.25}, // 8-GPU tasks cannot use its 4
		{3, 3 * 0.75}, // 4- and 8-GPU tasks cannot
		{0, 0},        // nothing free, nothing stranded
		{1, 1 * 0.75}, // only 1-GPU tasks fit
		{7, 7 * 0.25}, // a broken node strands 7 for the 8-GPU tasks
		{12, 0},       // larger than any task
		{2, 2 * 0.75}, // 4- and 8-GPU tasks cannot
		{5, 5 * 0.25}, // 8-GPU tasks cannot
		{6, 6 * 0.25}, // ditto
		{-1, 0},       // over-committed node: nothing free
	}
	for _, tc := range tests {
		if got := Fragmentation(room(tc.free), d); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("Fragmentation(%d) = %v, want %v", tc.free, got, tc.want)
		}
	}
	if got := Fragmentation(room(3), Demand{}); got != 0 {
		t.Errorf("no demand: %v, want 0", got)
	}
	// A 1-GPU task on a pristine node strands 7 for the 8-GPU quarter; on a node with
	// 2 free it strands less than the node already did.
	one := Room{GPUs: 1, MilliCPU: 1000}
	if a, b := FragmentationDelta(room(8), one, d), FragmentationDelta(room(2), one, d); !(b < a) {
		t.Errorf("delta on the broken node %v should be below the pristine node's %v", b, a)
	}
	// GPUs beside too little CPU are stranded too: 8 free GPUs and 3 CPUs serve only
	// the 1-GPU quarter.
	if got, want := Fragmentation(Room{GPUs: 8, MilliCPU: 3000, Memory: 1 << 40}, d), 8*0.75; math.Abs(got-want) > 1e-9 {
		t.Errorf("8 GPUs beside 3 CPUs: %v, want %v", got, want)
	}
}

func TestBreaks(t *testing.T) {
	queued := map[int64]int{8: 1}
	if !Breaks(8, 1, queued, map[int64]int{8: 1}) {
		t.Error("splitting the only node that hosts a queued 8-GPU pod should break it")
	}
	if Breaks(8, 1, queued, map[int64]int{8: 2}) {
		t.Error("with two hosts for one queued 8-GPU pod, splitting one leaves enough")
	}
	if Breaks(4, 1, queued, map[int64]int{8: 1}) {
		t.Error("a node that cannot host 8 GPUs takes nothing from the queued pod")
	}
}

func TestLargestGang(t *testing.T) {
	nodes := []GPUNode{
		{Free: 8, Domains: []string{"r1"}}, {Free: 8, Domains: []string{"r1"}}, {Free: 3, Domains: []string{"r1"}},
		{Free: 8, Domains: []string{"r2"}}, {Free: 4, Domains: []string{"r2"}}, {Free: 4, Domains: []string{""}},
	}
	for _, tc := range []struct {
		k, level, want int64
		domain         string
	}{
		{8, 0, 2, "r1"}, // two whole nodes in rack r1
		{4, 0, 4, "r1"}, // r1: 2+2+0; r2: 2+1
		{8, 1, 3, ""},   // anywhere: three whole nodes
		{1, 0, 19, "r1"},
	} {
		got, d := LargestGang(nodes, tc.k, int(tc.level))
		if got != tc.want || d != tc.domain {
			t.Errorf("k=%d level=%d: %d in %q, want %d in %q", tc.k, tc.level, got, d, tc.want, tc.domain)
		}
	}
}

func TestScarcity(t *testing.T) {
	large := Room{GPUs: 8, MilliCPU: 128000, Memory: 768 << 30}
	small := Room{GPUs: 8, MilliCPU: 96000, Memory: 384 << 30}
	big := Need{GPUs: 8, MilliCPU: 120000, Memory: 720 << 30, Weight: 1}
	medium := Need{GPUs: 8, MilliCPU: 88000, Memory: 320 << 30, Weight: 4}
	one := Need{GPUs: 1, MilliCPU: 4000, Memory: 16 << 30, Weight: 20}
	d := Demand{big, medium, one}
	// One large node and ten small ones: 88 free GPUs; the demand takes 1·8 + 4·8 +
	// 20·1 = 60 GPUs per 25 tasks, so 88/60 of it is expected: 1.47 big tasks for
	// their one host, 5.9 medium ones for 11.
	s := NewScarcity(append([]Room{large}, small, small, small, small, small, small, small, small, small, small), d)
	req := func(n Need) Room { return Room{GPUs: n.GPUs, MilliCPU: n.MilliCPU, Memory: n.Memory} }
	mediumOnSmall, mediumOnLarge := s.Lost(small, req(medium)), s.Lost(large, req(medium))
	// It loses a medium host (5.9 expected for 11) and a 1-GPU one (29 expected for
	// 11: every one needed).
	if want := 8*(4*88.0/60/11) + 1; math.Abs(mediumOnSmall-want) > 1e-9 {
		t.Errorf("a medium task on a small node loses %v GPUs of hosting, want %v (a medium host and a 1-GPU one)", mediumOnSmall, want)
	}
	if want := mediumOnSmall + 8; math.Abs(mediumOnLarge-want) > 1e-9 {
		t.Errorf("a medium task on the large node loses %v GPUs of hosting, want %v (a medium host and the only big one, wholly needed)", mediumOnLarge, want)
	}
	// A 1-GPU task on a node with 7 free loses no host of any shape the node still
	// had: 8-GPU shapes were lost already, and 1-GPU ones still fit after.
	broken := Room{GPUs: 7, MilliCPU: 90000, Memory: 300 << 30}
	if got := s.Lost(broken, req(one)); got != 0 {
		t.Errorf("a 1-GPU task on a broken node loses %v GPUs of hosting, want 0", got)
	}
	// No demand, nothing lost.
	if got := NewScarcity([]Room{large}, nil).Lost(large, req(one)); got != 0 {
		t.Errorf("with no demand: %v, want 0", got)
	}
}

// A node is measured against the demand that may use its model: 8-GPU tasks that
// require A100s strand nothing on a T4 node, and a T4 node hosts none of them.
func TestFragmentationByModel(t *testing.T) {
	d := Demand{
		{GPUs: 1, Weight: 1, MilliCPU: 1000, Memory: 1 << 30},
		{GPUs: 8, Weight: 1, MilliCPU: 1000, Memory: 1 << 30, Models: []string{"A100"}},
	}
	t4 := Room{GPUs: 4, MilliCPU: 64000, Memory: 1 << 40, Model: "T4"}
	a100 := Room{GPUs: 4, MilliCPU: 64000, Memory: 1 << 40, Model: "A100"}
	if got := Fragmentation(t4, d); got != 0 {
		t.Errorf("T4 node with 4 free GPUs: fragmentation %v, want 0 (only 1-GPU tasks may use it)", got)
	}
	if got, want := Fragmentation(a100, d), 4*0.5; math.Abs(got-want) > 1e-9 {
		t.Errorf("A100 node with 4 free GPUs: fragmentation %v, want %v (half the demand needs 8)", got, want)
	}
	whole := Room{GPUs: 8, MilliCPU: 64000, Memory: 1 << 40, Model: "A100"}
	s := NewScarcity([]Room{whole, {GPUs: 8, MilliCPU: 64000, Memory: 1 << 40, Model: "T4"}}, d)
	one := Room{GPUs: 1, MilliCPU: 1000, Memory: 1 << 30}
	if s.Lost(whole, one) <= 0 {
		t.Error("splitting the only A100 node that hosts the A100-only 8-GPU tasks should cost their GPUs")
	}
	if got := s.Lost(Room{GPUs: 8, MilliCPU: 64000, Memory: 1 << 40, Model: "T4"}, one); got != 0 {
		t.Errorf("splitting a T4 node costs %v, want 0: no task that needs 8 may use it", got)
	}
}

// Tasks bound to a model press on that model's free GPUs: a task free to go anywhere
// is charged for taking GPUs of a model bound tasks will need, not of one they will
// not, and heavily for the GPUs beyond the model's slack.
func TestClaimedByModelBoundDemand(t *testing.T) {
	rooms := []Room{{GPUs: 8, MilliCPU: 64000, Memory: 1 << 40, Model: "A100"}, {GPUs: 8, MilliCPU: 64000, Memory: 1 << 40, Model: "T4"}}
	one := Room{GPUs: 1, MilliCPU: 1000, Memory: 1 << 30}
	demand := func(unbound, bound float64) Demand {
		return Demand{
			{GPUs: 1, Weight: unbound, MilliCPU: 1000, Memory: 1 << 30},
			{GPUs: 1, Weight: bound, MilliCPU: 1000, Memory: 1 << 30, Models: []string{"A100"}},
		}
	}
	// A quarter of the demand's GPUs is bound to the A100s: 4 of the 16 free GPUs,
	// half the A100s' 8; 4 to spare.
	s := NewScarcity(rooms, demand(3, 1))
	if got := s.Claimed(rooms[0], one); math.Abs(got-0.5) > 1e-9 {
		t.Errorf("one GPU of an A100 node with 4 to spare: claimed %v, want 0.5", got)
	}
	// Half of it: 8 of the 16, every A100. A GPU taken is one a bound task will lack.
	s = NewScarcity(rooms, demand(1, 1))
	if got := s.Claimed(rooms[0], one); math.Abs(got-(1+shortfallCost)) > 1e-9 {
		t.Errorf("one GPU of an A100 node bound tasks need whole: claimed %v, want %v", got, 1+shortfallCost)
	}
	if got := s.Claimed(rooms[1], one); got != 0 {
		t.Errorf("one GPU of a T4 node: claimed %v, want 0 (no task is bound to T4s)", got)
	}
}

func TestFragmentationOfSharedGPUs(t *testing.T) {
	// Half the tasks share a GPU at 0.5, half take a whole GPU (FGD's model).
	d := Demand{{Share: 500, Weight: 1, MilliCPU: 1000}, {GPUs: 1, Weight: 1, MilliCPU: 1000}}
	room := func(gpus int64, partial ...int64) Room {
		return Room{GPUs: gpus, Partial: partial, MilliCPU: 64000, Memory: 1 << 40}
	}
	tests := []struct {
		free Room
		want float64
	}{
		{room(2), 0},                         // both kinds fit, nothing partly used
		{room(1, 300), (0.3 + 0.3) / 2},      // 0.3 is under the share, and no whole GPU
		{room(1, 600), (0 + 0.6) / 2},        // the share fits in 0.6; a whole GPU does not
		{room(0, 600), (0 + 0.6) / 2},        // whole-GPU tasks do not fit: all 0.6 stranded for them
		{room(0, 300, 200), (0.5 + 0.5) / 2}, // nothing fits: all 0.5 stranded for both
	}
	for i, tc := range tests {
		if got := Fragmentation(tc.free, d); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%d: Fragmentation(%+v) = %v, want %v", i, tc.free, got, tc.want)
		}
	}
	// A 0.3 share goes best where it fills a partly used GPU, not where it breaks a
	// whole one.
	broken, whole := room(1, 300), room(2)
	onBroken := Room{Partial: []int64{}, MilliCPU: 1000}            // fills the 0.3 left
	onWhole := Room{GPUs: 1, Partial: []int64{700}, MilliCPU: 1000} // breaks a GPU
	if a, b := FragmentationDelta(broken, onBroken, d), FragmentationDelta(whole, onWhole, d); !(a < b) {
		t.Errorf("filling the partly used GPU (%v) should fragment less than breaking a whole one (%v)", a, b)
	}
}
