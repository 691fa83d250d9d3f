package keys

import (
	"cmp"
	"unicode/utf8"
)

// Compare orders two keys as the Table service (and Azurite) does: by UTF-16 code units.
// It returns -1, 0 or +1, like strings.Compare, and agrees with it except where the first
// difference puts a character above U+FFFF (stored as a surrogate pair, D800–DFFF)
// against one in U+E000–U+FFFF: the service sorts the first before the second, Go's
// byte order after. Use it wherever a key read from the service is compared with
// another ("did the listing advance", "is this key past the checkpoint").
func Compare(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return cmp.Compare(len(a), len(b))
	}
	// The bytes before i are equal, so both strings have a character starting at the
	// same offset at or before i.
	start := i
	for start > 0 && !utf8.RuneStart(a[start]) {
		start--
	}
	ra, _ := utf8.DecodeRuneInString(a[start:])
	rb, _ := utf8.DecodeRuneInString(b[start:])
	if c := cmp.Compare(firstUnit(ra), firstUnit(rb)); c != 0 {
		return c
	}
	if c := cmp.Compare(ra, rb); c != 0 {
		return c // both above U+FFFF, or neither: code point order is UTF-16 order
	}
	return cmp.Compare(a[i], b[i]) // invalid UTF-8 on either side: bytes decide
}

// firstUnit returns the first UTF-16 code unit of r: r itself in the Basic Multilingual
// Plane, its high surrogate above it.
func firstUnit(r rune) rune {
	if r < 0x10000 {
		return r
	}
	return 0xD800 + (r-0x10000)>>10
}
