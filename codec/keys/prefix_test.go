package keys

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPrefixRange(t *testing.T) {
	t.Parallel()
	tests := []struct {
		prefix, hi string
	}{
		{prefix: "", hi: ""},
		{prefix: "empid_", hi: "empid`"},
		{prefix: "empid_000123", hi: "empid_000124"},
		{prefix: "a9", hi: "a:"},
		{prefix: "a.", hi: "a0"},           // skips '/'
		{prefix: "a\"", hi: "a$"},          // skips '#'
		{prefix: "a>", hi: "a@"},           // skips '?'
		{prefix: "a[", hi: "a]"},           // skips '\'
		{prefix: "a~", hi: "a\u00a0"},      // skips U+007F..U+009F
		{prefix: "a\ud7ff", hi: "a\ue000"}, // skips surrogates
		{prefix: "a\uffff", hi: "a\U00010000"},
		{prefix: "a\U0010FFFF", hi: "b"},
		{prefix: "\U0010FFFF\U0010FFFF", hi: ""},
		{prefix: "日本", hi: "日札"},
	}
	for _, tt := range tests {
		lo, hi := PrefixRange(tt.prefix)
		if lo != tt.prefix || hi != tt.hi {
			t.Errorf("PrefixRange(%q) = %q, %q, want %q, %q", tt.prefix, lo, hi, tt.prefix, tt.hi)
		}
	}
}

// FuzzPrefixRange checks that a valid key is in [lo, hi) exactly when it has the prefix.
func FuzzPrefixRange(f *testing.F) {
	f.Add("empid_", "empid_000123")
	f.Add("empid_", "empid`")
	f.Add("a.", "a0")
	f.Add("a~", "a\u00a0")
	f.Add("", "x")
	f.Add("a\U0010FFFF", "a\U0010FFFFz")
	f.Fuzz(func(t *testing.T, prefix, key string) {
		if !utf8.ValidString(prefix) || Validate(key) != nil {
			return
		}
		lo, hi := PrefixRange(prefix)
		in := lo <= key && (hi == "" || key < hi)
		if want := strings.HasPrefix(key, prefix); in != want {
			t.Fatalf("key %q in PrefixRange(%q) = [%q, %q): %v, want %v", key, prefix, lo, hi, in, want)
		}
	})
}
