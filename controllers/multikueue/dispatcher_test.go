package multikueue

import (
	"testing"
	"time"
)

// The cluster where the gang starts first wins; one that holds it with no known
// start only when none has one; one that cannot hold it never; a tie goes to the
// cluster named first.
func TestBest(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	never := Verdict{Cluster: "a", Why: "cannot hold it even empty"}
	unknown := Verdict{Cluster: "b", Holds: true}
	late := Verdict{Cluster: "c", Holds: true, OK: true, Start: t0.Add(time.Hour)}
	soon := Verdict{Cluster: "d", Holds: true, OK: true, Start: t0.Add(time.Minute)}
	soonToo := Verdict{Cluster: "e", Holds: true, OK: true, Start: t0.Add(time.Minute)}
	for _, tc := range []struct {
		name     string
		verdicts []Verdict
		want     string
	}{
		{"none holds it", []Verdict{never}, ""},
		{"unknown start beats never", []Verdict{never, unknown}, "b"},
		{"a known start beats an unknown one", []Verdict{unknown, late}, "c"},
		{"the earliest start", []Verdict{late, soon, unknown}, "d"},
		{"a tie goes to the first named", []Verdict{soon, soonToo}, "d"},
	} {
		got := ""
		if b := Best(tc.verdicts); b != nil {
			got = b.Cluster
		}
		if got != tc.want {
			t.Errorf("%s: nominated %q, want %q", tc.name, got, tc.want)
		}
	}
}
