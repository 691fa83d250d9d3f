package keys

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

func TestJoinSplit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		parts []string
		want  string
	}{
		{parts: []string{"Sales", "000123"}, want: "Sales!000123"},
		{parts: []string{"empid", "000123", "2012"}, want: "empid!000123!2012"},
		{parts: []string{""}, want: ""},
		{parts: []string{"", ""}, want: "!"},
		{parts: []string{"a", ""}, want: "a!"},
		{parts: []string{"New York"}, want: `New"20York`},
		{parts: []string{"a!b"}, want: `a"21b`},
		{parts: []string{`say "hi"`}, want: `say"20"22hi"22`},
		{parts: []string{"#1"}, want: `"231`},
		{parts: []string{"a.b@example.com"}, want: "a.2Eb@example.2Ecom"},
		{parts: []string{"dir/file?q"}, want: "dir.2Ffile>3Fq"},
		{parts: []string{`C:\x[1]`}, want: `C:[5Cx[5B1]`},
		{parts: []string{"~\x7f\u0080\u009f\u00a0"}, want: "~7E~7F~80~9F\u00a0"},
		{parts: []string{"\x00\t\n\x1f"}, want: `"00"09"0A"1F`},
		{parts: []string{"o'brien", "50%+", "日本語", "🙂"}, want: "o'brien!50%+!日本語!🙂"},
	}
	for _, tt := range tests {
		got := Join(tt.parts...)
		if got != tt.want {
			t.Errorf("Join(%q) = %q, want %q", tt.parts, got, tt.want)
		}
		if err := Validate(got); err != nil {
			t.Errorf("Join(%q) = %q is not a valid key: %v", tt.parts, got, err)
		}
		back, err := Split(got)
		if err != nil || !slices.Equal(back, tt.parts) {
			t.Errorf("Split(%q) = %q, %v, want %q", got, back, err, tt.parts)
		}
		if c, _ := Escaped().Join(tt.parts...); c != got {
			t.Errorf("Escaped().Join(%q) = %q, want %q", tt.parts, c, got)
		}
	}
	if got := Join(); got != "" {
		t.Errorf("Join() = %q, want empty", got)
	}
	if got := Join("a\xffb"); got != "a\uFFFDb" {
		t.Errorf("Join(invalid UTF-8) = %q, want U+FFFD", got)
	}
}

func TestSplitRefuses(t *testing.T) {
	t.Parallel()
	for _, key := range []string{
		"a b",        // unescaped space
		`a"`,         // truncated escape
		`a"2`,        // truncated escape
		`a"2e`,       // lowercase hex
		`a"41`,       // 'A' does not need escaping
		`."2E`,       // raw '.'
		".41",        // escape of a character outside the '.' group
		"a/b",        // forbidden
		"a#b",        // forbidden
		"a\x00b",     // forbidden
		"a\u0085b",   // forbidden
		"a\xffb",     // invalid UTF-8
		"~7D",        // '}' does not belong to the '~' group
		"[5D",        // ']' does not belong to the '[' group
		">40",        // '@' does not belong to the '>' group
		`"24`,        // '$' does not belong to the '"' group
		"x~A0",       // U+00A0 stands for itself
		"ok!bad\x7f", // forbidden after a separator
	} {
		if parts, err := Split(key); !errors.Is(err, errs.ErrInvalidInput) {
			t.Errorf("Split(%q) = %q, %v, want ErrInvalidInput", key, parts, err)
		}
	}
}

// TestEscapedOrderAllPairs checks the order of every pair of single characters from
// U+0000 to U+02FF and a few above, alone and followed by another part.
func TestEscapedOrderAllPairs(t *testing.T) {
	t.Parallel()
	var runes []rune
	for r := rune(0); r < 0x300; r++ {
		runes = append(runes, r)
	}
	runes = append(runes, 0xD7FF, 0xE000, 0xFFFD, 0xFFFF, 0x10000, 0x1F642, utf8.MaxRune)
	enc := make([]string, len(runes))
	for i, r := range runes {
		enc[i] = Join(string(r))
	}
	for i := range runes {
		withMore := Join(string(runes[i]), "")
		for j := range runes {
			want := cmpInt(int64(runes[i]), int64(runes[j]))
			if got := strings.Compare(enc[i], enc[j]); got != want {
				t.Fatalf("order of %U vs %U: %q vs %q = %d, want %d", runes[i], runes[j], enc[i], enc[j], got, want)
			}
			if want == 0 {
				want = 1 // [r, ""] > [r]
			}
			if got := strings.Compare(withMore, enc[j]); got != want {
				t.Fatalf("order of [%U, \"\"] vs [%U]: %d, want %d", runes[i], runes[j], got, want)
			}
		}
	}
}

func TestCompoundPlain(t *testing.T) {
	t.Parallel()
	c, err := New("_")
	if err != nil {
		t.Fatal(err)
	}
	if c != (Compound{Sep: "_"}) || c.separator() != "_" || Escaped().separator() != "!" {
		t.Fatalf("New(_) = %+v, Escaped separator %q", c, Escaped().separator())
	}
	for _, bad := range []Compound{{Sep: "__"}, {Sep: "/"}} {
		if _, err := bad.Join("a"); !errors.Is(err, errs.ErrInvalidInput) {
			t.Errorf("%+v.Join error = %v, want ErrInvalidInput", bad, err)
		}
		if _, err := bad.Split("a"); !errors.Is(err, errs.ErrInvalidInput) {
			t.Errorf("%+v.Split error = %v, want ErrInvalidInput", bad, err)
		}
	}
	k, err := c.Join("empid", "000123", "2012")
	if err != nil || k != "empid_000123_2012" {
		t.Fatalf("Join = %q, %v", k, err)
	}
	parts, err := c.Split(k)
	if err != nil || !slices.Equal(parts, []string{"empid", "000123", "2012"}) {
		t.Fatalf("Split(%q) = %q, %v", k, parts, err)
	}
	for _, bad := range [][]string{{"a_b"}, {"ok", "a/b"}, {"a\x01"}, {"a\xff"}} {
		if k, err := c.Join(bad...); !errors.Is(err, errs.ErrInvalidInput) {
			t.Errorf("Join(%q) = %q, %v, want ErrInvalidInput", bad, k, err)
		}
	}
	if _, err := c.Split("a/b"); !errors.Is(err, errs.ErrInvalidInput) {
		t.Errorf("Split(a/b) error = %v, want ErrInvalidInput", err)
	}
	lo, hi, err := c.Range("empid", "000123")
	if err != nil || lo != "empid_000123_" || hi != "empid_000123`" {
		t.Fatalf("Range = %q, %q, %v", lo, hi, err)
	}
	for key, in := range map[string]bool{
		"empid_000123_2012":  true,
		"empid_000123_":      true,
		"empid_000123":       false,
		"empid_0001234_2012": false,
		"empid_000124_2012":  false,
	} {
		if got := lo <= key && key < hi; got != in {
			t.Errorf("%q in Range = %v, want %v", key, got, in)
		}
	}
	if _, _, err := c.Range("a_b"); !errors.Is(err, errs.ErrInvalidInput) {
		t.Errorf("Range(a_b) error = %v, want ErrInvalidInput", err)
	}
}

func TestNewRefuses(t *testing.T) {
	t.Parallel()
	for _, sep := range []string{"", "__", "/", "#", "\x00", "\u0085", "\xff"} {
		if _, err := New(sep); !errors.Is(err, errs.ErrInvalidInput) {
			t.Errorf("New(%q) error = %v, want ErrInvalidInput", sep, err)
		}
	}
	if _, err := New("é"); err != nil {
		t.Errorf("New(é) error = %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("MustNew(\"\") did not panic")
		}
	}()
	MustNew("")
}

func TestEscapedRange(t *testing.T) {
	t.Parallel()
	lo, hi, err := Escaped().Range("Sales", "a.b")
	if err != nil {
		t.Fatal(err)
	}
	in := []string{Join("Sales", "a.b", ""), Join("Sales", "a.b", "x", "y"), Join("Sales", "a.b", "\x00")}
	out := []string{Join("Sales", "a.b"), Join("Sales", "a.bc"), Join("Sales", "a.b!"), Join("Sales", "a.b ", "x"), Join("Sales", "a.c", "x")}
	for _, k := range in {
		if !(lo <= k && k < hi) {
			t.Errorf("%q not in [%q, %q)", k, lo, hi)
		}
	}
	for _, k := range out {
		if lo <= k && k < hi {
			t.Errorf("%q in [%q, %q)", k, lo, hi)
		}
	}
}

func FuzzCompoundRoundTrip(f *testing.F) {
	f.Add("Sales", "000123", "2012", uint8(3))
	f.Add("a!b", "", "\x00#/?\\", uint8(2))
	f.Add("~\u007f\u0080", ".>[", "\"", uint8(3))
	f.Fuzz(func(t *testing.T, a, b, c string, n uint8) {
		parts := []string{a, b, c}[:1+int(n)%3]
		for _, p := range parts {
			if !utf8.ValidString(p) {
				return
			}
		}
		k := Join(parts...)
		if err := Validate(k); err != nil {
			t.Fatalf("Join(%q) = %q is not a valid key: %v", parts, k, err)
		}
		back, err := Split(k)
		if err != nil || !slices.Equal(back, parts) {
			t.Fatalf("Split(Join(%q)) = %q, %v", parts, back, err)
		}
		plain := MustNew("_")
		if pk, err := plain.Join(parts...); err == nil {
			if back, err := plain.Split(pk); err != nil || !slices.Equal(back, parts) {
				t.Fatalf("plain Split(Join(%q)) = %q, %v", parts, back, err)
			}
		}
	})
}

// FuzzCompoundOrder checks that comparing parts lists and comparing their keys agree.
func FuzzCompoundOrder(f *testing.F) {
	f.Add("a100", "6777", "a1001", "6777", uint8(2), uint8(2))
	f.Add("a", "", "a", "b", uint8(1), uint8(2))
	f.Add("a b", "", "a", "b", uint8(1), uint8(2))
	f.Add("a.", "x", "a/", "x", uint8(2), uint8(2))
	f.Add("~", "", "\u00a0", "", uint8(1), uint8(1))
	f.Add("", "z", "!", "", uint8(2), uint8(1))
	f.Fuzz(func(t *testing.T, a1, a2, b1, b2 string, na, nb uint8) {
		a := []string{a1, a2}[:1+int(na)%2]
		b := []string{b1, b2}[:1+int(nb)%2]
		for _, p := range append(slices.Clone(a), b...) {
			if !utf8.ValidString(p) {
				return
			}
		}
		want := slices.Compare(a, b)
		ka, kb := Join(a...), Join(b...)
		if got := strings.Compare(ka, kb); got != want {
			t.Fatalf("parts %q vs %q compare %d, keys %q vs %q compare %d", a, b, want, ka, kb, got)
		}
	})
}

func FuzzSplit(f *testing.F) {
	for _, k := range []string{"", "!", "a!b", `"20`, `"2`, "a.2Eb", "~9F", "x\xff"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		parts, err := Split(key)
		if err != nil {
			return
		}
		if Validate(key) != nil {
			t.Fatalf("Split accepted invalid key %q", key)
		}
		if got := Join(parts...); got != key {
			t.Fatalf("Join(Split(%q)) = %q", key, got)
		}
	})
}
