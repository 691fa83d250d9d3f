package filter

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A small OData $filter tokenizer, independent of the renderer, used to check that what
// the package writes parses into the structure it means.

type tokKind int

const (
	tokIdent tokKind = iota
	tokKeyword
	tokString
	tokBool
	tokInt
	tokLong
	tokDouble
	tokDateTime
	tokGUID
	tokBinary
	tokLParen
	tokRParen
)

var tokNames = [...]string{"ident", "kw", "string", "bool", "int", "long", "double", "datetime", "guid", "binary", "(", ")"}

type token struct {
	kind  tokKind
	text  string // raw text
	value string // decoded content of quoted literals
}

var keywords = map[string]bool{
	"and": true, "or": true, "not": true,
	"eq": true, "ne": true, "gt": true, "ge": true, "lt": true, "le": true,
}

func tokenize(s string) ([]token, error) {
	var toks []token
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ':
			i++
		case c == '(':
			toks = append(toks, token{kind: tokLParen, text: "("})
			i++
		case c == ')':
			toks = append(toks, token{kind: tokRParen, text: ")"})
			i++
		case c == '\'':
			v, n, err := quoted(s[i:])
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{kind: tokString, text: s[i : i+n], value: v})
			i += n
		case c == '-' || (c >= '0' && c <= '9'):
			n, k := number(s[i:])
			if n == 0 {
				return nil, fmt.Errorf("bad number at %d", i)
			}
			toks = append(toks, token{kind: k, text: s[i : i+n]})
			i += n
		default:
			r, _ := utf8.DecodeRuneInString(s[i:])
			if r != '_' && !unicode.IsLetter(r) {
				return nil, fmt.Errorf("unexpected %q at %d", r, i)
			}
			j := i
			for j < len(s) {
				r, size := utf8.DecodeRuneInString(s[j:])
				if r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
					break
				}
				j += size
			}
			word := s[i:j]
			if j < len(s) && s[j] == '\'' {
				kinds := map[string]tokKind{"datetime": tokDateTime, "guid": tokGUID, "X": tokBinary, "binary": tokBinary}
				k, ok := kinds[word]
				if !ok {
					return nil, fmt.Errorf("unknown literal prefix %q", word)
				}
				v, n, err := quoted(s[j:])
				if err != nil {
					return nil, err
				}
				toks = append(toks, token{kind: k, text: s[i : j+n], value: v})
				i = j + n
				continue
			}
			k := tokIdent
			switch {
			case keywords[word]:
				k = tokKeyword
			case word == "true" || word == "false":
				k = tokBool
			}
			toks = append(toks, token{kind: k, text: word})
			i = j
		}
	}
	return toks, nil
}

// quoted reads a quoted literal at the start of s, where two quotes in a row stand for one.
func quoted(s string) (value string, n int, err error) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] != '\'' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '\'' {
			b.WriteByte('\'')
			i++
			continue
		}
		return b.String(), i + 1, nil
	}
	return "", 0, fmt.Errorf("unterminated literal %.20q", s)
}

func number(s string) (int, tokKind) {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := func() int {
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - start
	}
	if digits() == 0 {
		return 0, 0
	}
	kind := tokInt
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return 0, 0
		}
		kind = tokDouble
	}
	if i < len(s) && s[i] == 'E' {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return 0, 0
		}
		kind = tokDouble
	}
	if kind == tokInt && i < len(s) && s[i] == 'L' {
		i++
		kind = tokLong
	}
	return i, kind
}

// shape is the token structure of s: identifiers and operators by text, literals by kind
// only. Two filters with the same shape differ only in their literal values.
func shape(s string) (string, error) {
	toks, err := tokenize(s)
	if err != nil {
		return "", err
	}
	parts := make([]string, len(toks))
	for i, t := range toks {
		switch t.kind {
		case tokIdent, tokKeyword:
			parts[i] = tokNames[t.kind] + ":" + t.text
		default:
			parts[i] = tokNames[t.kind]
		}
	}
	return strings.Join(parts, " "), nil
}

// stringLiterals returns the decoded string literals of s in order.
func stringLiterals(s string) ([]string, error) {
	toks, err := tokenize(s)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, t := range toks {
		if t.kind == tokString {
			out = append(out, t.value)
		}
	}
	return out, nil
}
