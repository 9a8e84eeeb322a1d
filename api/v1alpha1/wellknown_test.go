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

func TestShorten(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"abc", 3, "abc"},
		{"abcd", 3, "…"},
		{"abcdef", 5, "ab…"},
		{"ab×cd", 6, "ab×cd"},
		{"ab×cdefg", 7, "ab×…"},
		{"abc×def", 7, "abc…"}, // × is two bytes: cutting inside it would leave invalid UTF-8
	} {
		if got := Shorten(tc.in, tc.max); got != tc.want || len(got) > tc.max && len(tc.in) > tc.max || !utf8.ValidString(got) {
			t.Errorf("Shorten(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}
