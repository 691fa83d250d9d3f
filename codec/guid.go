package codec

import (
	"crypto/rand"
	"strconv"
)

// GUID is an Edm.Guid: 16 bytes in the order of their canonical text form
// "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (big-endian, as RFC 9562 writes it; not the
// mixed-endian byte order of .NET's Guid.ToByteArray). The zero GUID is a valid value.
type GUID [16]byte

const hexDigits = "0123456789abcdef"

// NewGUID returns a random (version 4) GUID read from crypto/rand.
func NewGUID() GUID {
	var g GUID
	_, _ = rand.Read(g[:]) // crypto/rand.Read never returns an error (Go 1.24+)
	g[6] = g[6]&0x0f | 0x40
	g[8] = g[8]&0x3f | 0x80
	return g
}

// ParseGUID parses "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" in either case, optionally
// wrapped in braces as .NET writes it ("{...}"). The error is an *InvalidInputError
// wrapping ErrInvalidInput.
func ParseGUID(s string) (GUID, error) {
	g, ok := parseGUID([]byte(s))
	if !ok {
		return GUID{}, invalid("", "GUID", "malformed GUID "+strconv.Quote(s))
	}
	return g, nil
}

func parseGUID(b []byte) (g GUID, ok bool) {
	if len(b) == 38 && b[0] == '{' && b[37] == '}' {
		b = b[1:37]
	}
	if len(b) != 36 || b[8] != '-' || b[13] != '-' || b[18] != '-' || b[23] != '-' {
		return g, false
	}
	j := 0
	for i := 0; i < 36; {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			i++
			continue
		}
		hi, ok1 := unhex(b[i])
		lo, ok2 := unhex(b[i+1])
		if !ok1 || !ok2 {
			return GUID{}, false
		}
		g[j] = hi<<4 | lo
		j++
		i += 2
	}
	return g, true
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// String returns the canonical lowercase form "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx".
func (g GUID) String() string {
	var buf [36]byte
	return string(g.appendText(buf[:0]))
}

func (g GUID) appendText(dst []byte) []byte {
	for i, c := range g {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, hexDigits[c>>4], hexDigits[c&0xf])
	}
	return dst
}

// MarshalText implements encoding.TextMarshaler; it never fails.
func (g GUID) MarshalText() ([]byte, error) {
	return g.appendText(make([]byte, 0, 36)), nil
}

// UnmarshalText implements encoding.TextUnmarshaler, accepting what ParseGUID accepts.
// The error is an *InvalidInputError wrapping ErrInvalidInput.
func (g *GUID) UnmarshalText(text []byte) error {
	v, ok := parseGUID(text)
	if !ok {
		return invalid("", "GUID", "malformed GUID "+strconv.Quote(string(text)))
	}
	*g = v
	return nil
}

// IsZero reports whether g is the all-zero GUID.
func (g GUID) IsZero() bool { return g == GUID{} }
