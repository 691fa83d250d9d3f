package filter

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzEq checks the injection boundary for string values: whatever the value, the filter
// is exactly one identifier, one operator and one string literal, and the literal decodes
// back to the value.
func FuzzEq(f *testing.F) {
	for _, v := range hostileValues {
		if len(v) <= 64 { // long seeds make minimization crawl
			f.Add(v)
		}
	}
	f.Add("")
	f.Add("Smith")
	f.Add("マーケティング")
	f.Add("\xff")
	f.Fuzz(func(t *testing.T, v string) {
		e := Eq("LastName", v)
		if !utf8.ValidString(v) {
			if e.Err() == nil {
				t.Fatalf("invalid UTF-8 %q accepted", v)
			}
			return
		}
		if err := e.Err(); err != nil {
			t.Fatalf("Eq(%q): %v", v, err)
		}
		toks, err := tokenize(e.String())
		if err != nil {
			t.Fatalf("%q does not tokenize: %v", e.String(), err)
		}
		if len(toks) != 3 ||
			toks[0].kind != tokIdent || toks[0].text != "LastName" ||
			toks[1].kind != tokKeyword || toks[1].text != "eq" ||
			toks[2].kind != tokString {
			t.Fatalf("value %q changed the structure: %v", v, toks)
		}
		if toks[2].value != v {
			t.Fatalf("literal decodes to %q, want %q", toks[2].value, v)
		}
	})
}

// FuzzName checks that every accepted property name is exactly one identifier token.
func FuzzName(f *testing.F) {
	for _, n := range []string{"LastName", "_x", "名前", "true", "Name eq 'x' or true", "A)", "a b", "1a", "X", "", "NaN"} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, name string) {
		e := Eq(name, "v")
		if e.Err() != nil {
			if e.String() != invalidText {
				t.Fatalf("refused name %q renders as %q", name, e.String())
			}
			return
		}
		toks, err := tokenize(e.String())
		if err != nil {
			t.Fatalf("%q does not tokenize: %v", e.String(), err)
		}
		if len(toks) != 3 || toks[0].kind != tokIdent || toks[0].text != name || toks[2].value != "v" {
			t.Fatalf("name %q changed the structure: %v", name, toks)
		}
	})
}

// FuzzRowKeyPrefix checks, through the rendered filter, that a key k is in the range of
// RowKeyPrefix(pk, p) exactly when k starts with p (in Go's string order).
func FuzzRowKeyPrefix(f *testing.F) {
	for _, s := range [][2]string{
		{"", "a"}, {"a", "a"}, {"a", "ab"}, {"a", "b"}, {"emp_00", "emp_001"}, {"emp_00", "emp_01"},
		{"a'", "a'b"}, {"a&", "a'"}, {"\ud7ff", "\ue000"}, {"\ud7ff", "\U00010000"},
		{"\uffff", "\U00010000"}, {"a\U0010FFFF", "b"}, {"\U0010FFFF", "\U0010FFFFx"},
		{"\U0001F600", "\U0001F601"}, {"z", "{"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, p, k string) {
		if !utf8.ValidString(p) || !utf8.ValidString(k) {
			return
		}
		e := RowKeyPrefix("pk", p)
		if err := e.Err(); err != nil {
			t.Fatalf("RowKeyPrefix(%q): %v", p, err)
		}
		lits, err := stringLiterals(e.String())
		if err != nil {
			t.Fatalf("%q does not tokenize: %v", e.String(), err)
		}
		if lits[0] != "pk" {
			t.Fatalf("partition literal %q", lits[0])
		}
		inRange := func(k string) bool {
			switch len(lits) {
			case 1:
				return true
			case 2:
				return k >= lits[1]
			case 3:
				return k >= lits[1] && k < lits[2]
			}
			t.Fatalf("unexpected filter %q", e.String())
			return false
		}
		if len(lits) > 1 && lits[1] != p {
			t.Fatalf("lower bound %q, want %q", lits[1], p)
		}
		if len(lits) == 3 && (!utf8.ValidString(lits[2]) || lits[2] <= p) {
			t.Fatalf("upper bound %q for prefix %q", lits[2], p)
		}
		for _, key := range []string{k, p + k, p} {
			if got, want := inRange(key), strings.HasPrefix(key, p); got != want {
				t.Fatalf("prefix %q, key %q: in range %v, has prefix %v (filter %q)", p, key, got, want, e.String())
			}
		}
	})
}
