package keys

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// utf16Compare is the service's order spelled out: encode both keys to UTF-16 and compare
// the code units.
func utf16Compare(a, b string) int {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

func TestCompareIsUTF16Order(t *testing.T) {
	t.Parallel()
	cases := []struct {
		a, b string
		want int
	}{
		{"\U0001F600x", "\uFF01x", -1}, // Go's byte order says +1
		{"\uFF01", "\U0001F600", 1},
		{"a\U0001F600", "a\uE000", -1},
		{"\U0001F600", "\U0001F601", -1},
		{"\u00e9", "\U0001F600", -1},
		{"abc", "abd", -1},
		{"ab", "abc", -1},
		{"", "", 0},
		{"x\U0001F600", "x\U0001F600", 0},
	}
	for _, c := range cases {
		if got := Compare(c.a, c.b); got != c.want {
			t.Errorf("Compare(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := Compare(c.b, c.a); got != -c.want {
			t.Errorf("Compare(%q, %q) = %d, want %d", c.b, c.a, got, -c.want)
		}
	}
	if strings.Compare("\U0001F600x", "\uFF01x") != 1 {
		t.Fatal("the case Compare exists for no longer differs in Go's order")
	}
}

func FuzzCompare(f *testing.F) {
	f.Add("\U0001F600x", "\uFF01x")
	f.Add("a", "ab")
	f.Add("\u00e9t\u00e9", "\U00010000")
	f.Fuzz(func(t *testing.T, a, b string) {
		if !utf8.ValidString(a) || !utf8.ValidString(b) {
			return // keys are validated UTF-8 before they reach the service
		}
		if got, want := Compare(a, b), sign(utf16Compare(a, b)); got != want {
			t.Fatalf("Compare(%q, %q) = %d, UTF-16 order says %d", a, b, got, want)
		}
	})
}
