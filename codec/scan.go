package codec

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// The decoder reads a flat JSON object of scalars (what the Table service returns for one
// entity). scanner is a small hand-written tokenizer: it never allocates for names or
// numbers, and only allocates for strings that are kept.

type vkind uint8

const (
	vString vkind = iota + 1
	vNumber
	vTrue
	vFalse
	vNull
	vComposite // a nested object or array, skipped (never part of an entity)
)

// token is one JSON value. For strings, raw is the text between the quotes with escapes
// intact; esc says it contains a backslash, wide that it contains non-ASCII bytes.
type token struct {
	kind vkind
	raw  []byte
	esc  bool
	wide bool
	off  int
}

type scanner struct {
	d []byte
	i int
}

type syntaxError struct {
	off    int
	reason string
}

func (s *scanner) ws() {
	for s.i < len(s.d) {
		switch s.d[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) fail(reason string) *syntaxError { return &syntaxError{off: s.i, reason: reason} }

// begin consumes the opening brace of the object.
func (s *scanner) begin() *syntaxError {
	s.ws()
	if s.i >= len(s.d) || s.d[s.i] != '{' {
		return s.fail("expected a JSON object")
	}
	s.i++
	return nil
}

// next reads the next member of the object. ok is false at the closing brace, after which
// only white space may follow.
func (s *scanner) next(first bool) (name token, val token, ok bool, err *syntaxError) {
	s.ws()
	if s.i >= len(s.d) {
		return name, val, false, s.fail("unexpected end of input")
	}
	if s.d[s.i] == '}' {
		s.i++
		s.ws()
		if s.i != len(s.d) {
			return name, val, false, s.fail("data after the object")
		}
		return name, val, false, nil
	}
	if !first {
		if s.d[s.i] != ',' {
			return name, val, false, s.fail("expected ',' or '}'")
		}
		s.i++
		s.ws()
	}
	if s.i >= len(s.d) || s.d[s.i] != '"' {
		return name, val, false, s.fail("expected a property name")
	}
	if name, err = s.str(); err != nil {
		return name, val, false, err
	}
	s.ws()
	if s.i >= len(s.d) || s.d[s.i] != ':' {
		return name, val, false, s.fail("expected ':'")
	}
	s.i++
	s.ws()
	val, err = s.value()
	return name, val, err == nil, err
}

func (s *scanner) value() (token, *syntaxError) {
	if s.i >= len(s.d) {
		return token{}, s.fail("unexpected end of input")
	}
	switch c := s.d[s.i]; {
	case c == '"':
		return s.str()
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	case c == 't':
		return s.literal("true", vTrue)
	case c == 'f':
		return s.literal("false", vFalse)
	case c == 'n':
		return s.literal("null", vNull)
	case c == '{' || c == '[':
		return s.composite()
	}
	return token{}, s.fail("unexpected character " + strconv.QuoteRune(rune(s.d[s.i])))
}

func (s *scanner) literal(lit string, k vkind) (token, *syntaxError) {
	if len(s.d)-s.i < len(lit) || string(s.d[s.i:s.i+len(lit)]) != lit {
		return token{}, s.fail("invalid literal")
	}
	t := token{kind: k, raw: s.d[s.i : s.i+len(lit)], off: s.i}
	s.i += len(lit)
	return t, nil
}

func (s *scanner) str() (token, *syntaxError) {
	t := token{kind: vString, off: s.i}
	s.i++ // opening quote
	start := s.i
	for s.i < len(s.d) {
		c := s.d[s.i]
		switch {
		case c == '"':
			t.raw = s.d[start:s.i]
			s.i++
			return t, nil
		case c == '\\':
			t.esc = true
			s.i += 2
		case c < 0x20:
			return t, s.fail("control character in string")
		case c >= utf8.RuneSelf:
			t.wide = true
			s.i++
		default:
			s.i++
		}
	}
	s.i = len(s.d)
	return t, s.fail("unterminated string")
}

func (s *scanner) number() (token, *syntaxError) {
	t := token{kind: vNumber, off: s.i}
	d, i := s.d, s.i
	if i < len(d) && d[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(d) && d[i] == '0' {
		i++
	} else if digits() == 0 {
		s.i = i
		return t, s.fail("invalid number")
	}
	if i < len(d) && d[i] == '.' {
		i++
		if digits() == 0 {
			s.i = i
			return t, s.fail("invalid number")
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if digits() == 0 {
			s.i = i
			return t, s.fail("invalid number")
		}
	}
	t.raw = d[s.i:i]
	s.i = i
	return t, nil
}

// composite skips a nested object or array (matching brackets, strings honoured).
func (s *scanner) composite() (token, *syntaxError) {
	t := token{kind: vComposite, off: s.i}
	depth := 0
	for s.i < len(s.d) {
		switch s.d[s.i] {
		case '"':
			if _, err := s.str(); err != nil {
				return t, err
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				s.i++
				t.raw = s.d[t.off:s.i]
				return t, nil
			}
		}
		s.i++
	}
	return t, s.fail("unterminated object or array")
}

// text returns the decoded string value of t (which must be a string token) as bytes; it
// returns raw itself when no decoding is needed, so the result must not be retained.
func (t *token) text(buf []byte) []byte {
	if !t.esc && (!t.wide || utf8.Valid(t.raw)) {
		return t.raw
	}
	return unescape(buf[:0], t.raw)
}

// string returns the decoded string value of t as a new string.
func (t *token) string() string {
	if !t.esc && (!t.wide || utf8.Valid(t.raw)) {
		return string(t.raw)
	}
	b := unescape(make([]byte, 0, len(t.raw)), t.raw)
	return unsafe.String(unsafe.SliceData(b), len(b)) // b is never written again
}

// unescape decodes JSON escapes; invalid UTF-8 and unpaired surrogates become U+FFFD,
// as encoding/json does.
func unescape(dst, raw []byte) []byte {
	for i := 0; i < len(raw); {
		c := raw[i]
		if c == '\\' && i+1 < len(raw) {
			e := raw[i+1]
			i += 2
			switch e {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r, ok := hex4(raw, i)
				if !ok {
					dst = utf8.AppendRune(dst, utf8.RuneError)
					continue
				}
				i += 4
				if utf16.IsSurrogate(r) {
					r2, ok2 := rune(-1), false
					if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
						r2, ok2 = hex4(raw, i+2)
					}
					if dec := utf16.DecodeRune(r, r2); ok2 && dec != utf8.RuneError {
						r = dec
						i += 6
					} else {
						r = utf8.RuneError
					}
				}
				dst = utf8.AppendRune(dst, r)
			default: // '"', '\\', '/' and anything else: the character itself
				dst = append(dst, e)
			}
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, c)
			i++
			continue
		}
		r, size := utf8.DecodeRune(raw[i:])
		if r == utf8.RuneError && size == 1 {
			dst = utf8.AppendRune(dst, utf8.RuneError)
		} else {
			dst = append(dst, raw[i:i+size]...)
		}
		i += size
	}
	return dst
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		v, ok := unhex(c)
		if !ok {
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	return r, true
}
