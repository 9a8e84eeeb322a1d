package v1alpha1

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEventNote(t *testing.T) {
	short := "PodGroup train-a was deleted; the capacity is released."
	if got := EventNote(short); got != short {
		t.Errorf("EventNote(short) = %q, want it unchanged", got)
	}
	exact := strings.Repeat("a", MaxEventNote)
	if got := EventNote(exact); got != exact {
		t.Errorf("a note of exactly %d bytes was changed", MaxEventNote)
	}
	// 2-byte characters whose boundary falls one byte before the limit.
	long := "x" + strings.Repeat("é", MaxEventNote)
	got := EventNote(long)
	if len(got) > MaxEventNote || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") || !strings.HasPrefix(long, strings.TrimSuffix(got, "…")) {
		t.Errorf("EventNote(long) = %d bytes, valid UTF-8 %v, suffix %q: want at most %d bytes of the note's start, cut at a character, ending in …",
			len(got), utf8.ValidString(got), got[len(got)-6:], MaxEventNote)
	}
	if len(got) < MaxEventNote-4 {
		t.Errorf("EventNote(long) = %d bytes: cut more than a character short of %d", len(got), MaxEventNote)
	}
}
