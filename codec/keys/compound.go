package keys

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// Compound joins several values into one key and splits them again (the Azure Table storage design guide, compound key
// pattern; Tablestore's primary key design guide, concatenated keys). There are two encodings:
//
//   - The zero value (also returned by Escaped, used by the package functions Join and Split)
//     accepts any parts. It separates them with '!' and escapes every character that is
//     forbidden in keys or that would break the order, so that any parts round-trip and
//     for parts lists a < b (compared part by part, a shorter list first when it is a
//     prefix of the other), Join(a...) < Join(b...) as strings.
//   - New(sep) gives the readable style of the guide, "empid_000123_2012" with sep "_":
//     parts are written as they are, and Join refuses a part that contains the separator
//     or a character forbidden in keys. The order of the parts is kept only if sep sorts
//     below every character the parts use (Tablestore's primary key design guide: '_' sorts above the digits, so
//     "a_1" > "a1" is fine but "ab_1" > "ab1_1" may surprise); use the escaped encoding
//     when that is not known.
//
// A Compound is a small value, safe for concurrent use.
//
// # The escaped encoding
//
// The separator is '!' (U+0021), the lowest character that can appear in a key apart
// from the space. Every character below it, and every character a key may not contain,
// is written as a leader followed by its code in two uppercase hex digits, where the
// leader is the closest allowed character below it, which is itself escaped the same way:
//
//	U+0000 to U+0023 (controls, space, '!', '"', '#')  ->  '"' + hex   (space is "\"20")
//	'.'  '/'                                           ->  ".2E" ".2F"
//	'>'  '?'                                           ->  ">3E" ">3F"
//	'['  '\'                                           ->  "[5B" "[5C"
//	'~' U+007F to U+009F                               ->  "~7E" ... "~9F"
//
// Every other character stands for itself. Since an escape starts with a character that
// sorts exactly where the escaped character would, and the hex codes of a group are in
// code-point order, the encoding keeps the order of every string, and the separator sorts
// below every character of an encoded part. A part grows by at most three times. Split
// accepts only keys that Join can produce, so Join(Split(k)) == k for every key it accepts.
type Compound struct {
	// Sep is the separator of the plain encoding: exactly one character allowed in keys,
	// e.g. "_". "" selects the escaped encoding, whose separator is "!". A literal
	// Compound{Sep: "_"} is the same as New("_"), except that an invalid Sep is reported
	// by each call instead of by New.
	Sep string
}

// Escaped returns the order-preserving escaped encoding, the zero value of Compound, which
// Join and Split use. It is a function, not a variable, so that no caller can change the
// encoding that other packages' keys depend on.
func Escaped() Compound { return Compound{} }

// escapedSep separates parts in the escaped encoding.
const escapedSep = '!'

// New returns the plain encoding with the separator sep, e.g. New("_") for the guide's
// "empid_000123_2012". sep must be exactly one character that is allowed in keys (a
// multi-character separator could not be split without ambiguity).
//
// It returns an *errs.InvalidInputError for an empty, multi-character or forbidden sep.
func New(sep string) (Compound, error) {
	if err := checkSep(sep); err != nil {
		return Compound{}, err
	}
	return Compound{Sep: sep}, nil
}

// MustNew is like New but panics if sep is invalid. It is meant for package-level
// variables initialised with a constant, like regexp.MustCompile.
func MustNew(sep string) Compound {
	c, err := New(sep)
	if err != nil {
		panic(err)
	}
	return c
}

func checkSep(sep string) error {
	r, size := utf8.DecodeRuneInString(sep)
	if size == 0 || size != len(sep) || (r == utf8.RuneError && size == 1) {
		return errs.Invalid("Sep", "want exactly one character, got %q", sep)
	}
	if forbidden(r) {
		return errs.Invalid("Sep", "character %U is not allowed in a key", r)
	}
	return nil
}

// separator returns the separator in use: "!" for the escaped encoding.
func (c Compound) separator() string {
	if c.Sep == "" {
		return string(escapedSep)
	}
	return c.Sep
}

// Join builds a key from parts. Zero parts give "", like one empty part, so Split("")
// returns one empty part.
//
// The escaped encoding never fails; invalid UTF-8 in a part is replaced by U+FFFD, as
// encoding/json does when the entity is sent (such a part does not round-trip). The plain
// encoding returns an *errs.InvalidInputError naming the part when a part contains the
// separator, invalid UTF-8 or a character forbidden in keys, or naming Sep when the
// separator itself is invalid.
func (c Compound) Join(parts ...string) (string, error) {
	if c.Sep == "" {
		return joinEscaped(parts), nil
	}
	if err := checkSep(c.Sep); err != nil {
		return "", err
	}
	for i, p := range parts {
		if strings.Contains(p, c.Sep) {
			return "", errs.Invalid(partField(i), "contains the separator %q", c.Sep)
		}
		if err := validateChars(partField(i), p); err != nil {
			return "", err
		}
	}
	return strings.Join(parts, c.Sep), nil
}

// Split returns the parts of key. It accepts exactly the keys Join can produce.
//
// It returns an *errs.InvalidInputError when key contains invalid UTF-8 or a character
// forbidden in keys, or, for the escaped encoding, an unescaped character that must be
// escaped or a malformed escape; for the plain encoding also when Sep is invalid.
func (c Compound) Split(key string) ([]string, error) {
	if c.Sep == "" {
		return splitEscaped(key)
	}
	if err := checkSep(c.Sep); err != nil {
		return nil, err
	}
	if err := validateChars("key", key); err != nil {
		return nil, err
	}
	return strings.Split(key, c.Sep), nil
}

// Prefix returns Join(parts...) followed by the separator: the common beginning of every
// key that has parts as its leading parts and at least one more part.
//
// It returns the errors of Join.
func (c Compound) Prefix(parts ...string) (string, error) {
	k, err := c.Join(parts...)
	if err != nil {
		return "", err
	}
	return k + c.separator(), nil
}

// Range returns the bounds [lo, hi) of every key whose leading parts are parts and that has
// at least one more part, for a filter "RowKey ge lo and RowKey lt hi". With New("_"),
// Range("empid", "000123") selects "empid_000123_2012" and "empid_000123_2013" but not
// "empid_0001234_2012". The key made of parts alone is not in the range: read it with a
// point query. With no parts, it selects every key with at least two parts.
//
// It returns the errors of Join.
func (c Compound) Range(parts ...string) (lo, hi string, err error) {
	p, err := c.Prefix(parts...)
	if err != nil {
		return "", "", err
	}
	lo, hi = PrefixRange(p)
	return lo, hi, nil
}

// Join builds a key from parts with the escaped, order-preserving encoding (see
// Compound). It accepts any parts and never fails; invalid UTF-8 is replaced by U+FFFD.
func Join(parts ...string) string {
	return joinEscaped(parts)
}

// Split returns the parts of a key made by Join.
//
// It returns an *errs.InvalidInputError when key is not something Join produces: invalid
// UTF-8, a forbidden or unescaped character, a malformed escape.
func Split(key string) ([]string, error) {
	return splitEscaped(key)
}

// escapeLeader returns the leader byte that starts the escape of r, or 0 when r stands
// for itself. Each group is a leader and the characters just above it that need escaping.
func escapeLeader(r rune) byte {
	switch {
	case r <= 0x23: // controls, space, '!' (the separator), '"' (the leader), '#'
		return '"'
	case r == '.', r == '/':
		return '.'
	case r == '>', r == '?':
		return '>'
	case r == '[', r == '\\':
		return '['
	case r >= '~' && r <= 0x9F:
		return '~'
	}
	return 0
}

const upperHex = "0123456789ABCDEF"

func joinEscaped(parts []string) string {
	n := len(parts)
	for _, p := range parts {
		n += len(p) + len(p)/2 // a guess; escapes are rare
	}
	var b strings.Builder
	b.Grow(n)
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(escapedSep)
		}
		for _, r := range p { // invalid UTF-8 yields U+FFFD, which stands for itself
			if l := escapeLeader(r); l != 0 {
				b.WriteByte(l)
				b.WriteByte(upperHex[r>>4])
				b.WriteByte(upperHex[r&0xF])
				continue
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}

func splitEscaped(key string) ([]string, error) {
	parts := make([]string, 0, 1+strings.Count(key, string(escapedSep)))
	var b strings.Builder
	for i := 0; i < len(key); {
		r, size := utf8.DecodeRuneInString(key[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return nil, errs.Invalid("key", "invalid UTF-8 at byte %d", i)
		case r == escapedSep:
			parts = append(parts, b.String())
			b.Reset()
			i++
			continue
		}
		l := escapeLeader(r)
		if l == 0 {
			b.WriteString(key[i : i+size])
			i += size
			continue
		}
		if byte(r) != l {
			return nil, errs.Invalid("key", "character %U at byte %d must be escaped", r, i)
		}
		if i+3 > len(key) {
			return nil, errs.Invalid("key", "truncated escape at byte %d", i)
		}
		hi, ok1 := unhex(key[i+1])
		lo, ok2 := unhex(key[i+2])
		d := rune(hi<<4 | lo)
		if !ok1 || !ok2 || escapeLeader(d) != l {
			return nil, errs.Invalid("key", "malformed escape %q at byte %d", key[i:i+3], i)
		}
		b.WriteRune(d)
		i += 3
	}
	return append(parts, b.String()), nil
}

// unhex decodes one uppercase hex digit; lowercase is refused so that each key has one
// spelling.
func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func partField(i int) string {
	return "part " + strconv.Itoa(i)
}
