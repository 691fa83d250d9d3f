package keys

import (
	"unicode/utf8"
)

// PrefixRange returns the bounds [lo, hi) of every key that starts with prefix, for a
// filter "RowKey ge lo and RowKey lt hi": lo is prefix itself and hi is prefix with its
// last character replaced by the next character a key may contain (so "empid_" gives
// "empid`", and "a." gives "a0" since '/' cannot occur in a key). Trailing characters that
// have no successor (U+10FFFF) are dropped first.
//
// hi is "" when there is no upper bound: for the empty prefix (every key) and for a prefix
// made only of U+10FFFF. Callers must then omit the "lt" condition. Invalid UTF-8 in
// prefix is read as U+FFFD.
func PrefixRange(prefix string) (lo, hi string) {
	s := prefix
	for len(s) > 0 {
		r, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
		if next, ok := nextKeyRune(r); ok {
			return prefix, s + string(next)
		}
	}
	return prefix, ""
}

// nextKeyRune returns the smallest rune above r that may appear in a key.
func nextKeyRune(r rune) (rune, bool) {
	for r++; r <= utf8.MaxRune; r++ {
		if r >= 0xD800 && r <= 0xDFFF { // surrogates are not characters
			r = 0xE000
		}
		if !forbidden(r) {
			return r, true
		}
	}
	return 0, false
}
