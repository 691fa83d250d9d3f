package keys

import (
	"strconv"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// MaxPadWidth is the widest padding Pad accepts: an int64 has at most 19 digits.
const MaxPadWidth = 19

// pow10[w] is 10^w; pow10[19] fits in a uint64.
var pow10 = func() [MaxPadWidth + 1]uint64 {
	var p [MaxPadWidth + 1]uint64
	p[0] = 1
	for i := 1; i <= MaxPadWidth; i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// Pad formats the non-negative n with leading zeros to exactly width digits, so that
// numbers of the same width sort as strings in numeric order: Pad(123, 6) is "000123".
//
// It returns an *errs.InvalidInputError when n is negative, when width is outside
// [1, MaxPadWidth] or when n has more than width digits (truncating would break the order).
func Pad(n int64, width int) (string, error) {
	if err := checkWidth(width); err != nil {
		return "", err
	}
	if n < 0 {
		return "", errs.Invalid("n", "Pad takes a non-negative number, got %d", n)
	}
	if uint64(n) >= pow10[width] {
		return "", errs.Invalid("n", "%d does not fit in %d digits", n, width)
	}
	return padUint(uint64(n), width), nil
}

// ParsePad parses a string made by Pad (any width) back to its number.
//
// It returns an *errs.InvalidInputError when s is empty, longer than MaxPadWidth, contains
// anything but the ASCII digits 0-9 (no sign, no spaces) or does not fit in an int64.
func ParsePad(s string) (int64, error) {
	v, err := parseDigits("s", s)
	if err != nil {
		return 0, err
	}
	if v > 1<<63-1 {
		return 0, errs.Invalid("s", "%q overflows int64", s)
	}
	return int64(v), nil
}

// PadDesc formats n like Pad but inverted, (10^width - 1) - n, so that larger numbers sort
// first: PadDesc(1, 3) is "998" and PadDesc(2, 3) is "997". Use it for a RowKey that must
// list the highest version, score or sequence number first.
//
// It returns the same errors as Pad.
func PadDesc(n int64, width int) (string, error) {
	if _, err := Pad(n, width); err != nil {
		return "", err
	}
	return padUint(pow10[width]-1-uint64(n), width), nil
}

// ParsePadDesc parses a string made by PadDesc back to its number; the width is the
// length of s.
//
// It returns an *errs.InvalidInputError for the inputs ParsePad refuses, and when the
// number it encodes does not fit in an int64 (a string PadDesc cannot produce).
func ParsePadDesc(s string) (int64, error) {
	v, err := parseDigits("s", s)
	if err != nil {
		return 0, err
	}
	n := pow10[len(s)] - 1 - v
	if n > 1<<63-1 {
		return 0, errs.Invalid("s", "%q encodes a number that overflows int64", s)
	}
	return int64(n), nil
}

func checkWidth(width int) error {
	if width < 1 || width > MaxPadWidth {
		return errs.Invalid("width", "must be between 1 and %d, got %d", MaxPadWidth, width)
	}
	return nil
}

// padUint formats v with leading zeros to width digits; v must fit.
func padUint(v uint64, width int) string {
	var buf [MaxPadWidth + 1]byte
	b := strconv.AppendUint(buf[:0], v, 10)
	if len(b) >= width {
		return string(b)
	}
	out := make([]byte, width)
	pad := width - len(b)
	for i := range pad {
		out[i] = '0'
	}
	copy(out[pad:], b)
	return string(out)
}

// parseDigits parses 1 to MaxPadWidth ASCII digits; 19 digits always fit in a uint64.
func parseDigits(field, s string) (uint64, error) {
	if len(s) == 0 || len(s) > MaxPadWidth {
		return 0, errs.Invalid(field, "want 1 to %d digits, got %d characters", MaxPadWidth, len(s))
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, errs.Invalid(field, "%q is not made of digits 0-9", s)
		}
		v = v*10 + uint64(c-'0')
	}
	return v, nil
}
