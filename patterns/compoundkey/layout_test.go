package compoundkey_test

import (
	"errors"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/tablepatterns/tablepatterns/patterns/compoundkey"
	"github.com/tablepatterns/tablepatterns/repo"
)

var (
	employeeKey = compoundkey.MustLayout("empid", 1, nil)
	reviewKey   = compoundkey.MustLayout("empid", 2, nil)
)

// A Layout builds the key of its parts and parses it back, in the readable and the escaped
// encoding; bad parts, prefixes and keys are refused with ErrInvalidInput; a range fixes
// its leading parts exactly.
func TestLayout(t *testing.T) {
	t.Parallel()
	esc := compoundkey.MustLayout("review", 2, &compoundkey.LayoutOptions{Escaped: true})
	bare := compoundkey.MustLayout("", 2, nil)
	cases := []struct {
		l     compoundkey.Layout
		parts []string
		key   string
	}{
		{reviewKey, []string{"000123", "2012"}, "empid_000123_2012"},
		{employeeKey, []string{"000123"}, "empid_000123"},
		{bare, []string{"Sales", "2012"}, "Sales_2012"},
		{esc, []string{"o'brien_x", "a/b"}, "review!o'brien_x!a.2Fb"},
	}
	for _, c := range cases {
		key, err := c.l.Key(c.parts...)
		if err != nil || key != c.key {
			t.Errorf("Key(%q) = %q, %v; want %q", c.parts, key, err, c.key)
			continue
		}
		parts, err := c.l.Parse(key)
		if err != nil || !slices.Equal(parts, c.parts) {
			t.Errorf("Parse(%q) = %q, %v", key, parts, err)
		}
	}
	refused := map[string]func() error{
		"too few parts":           func() error { _, err := reviewKey.Key("000123"); return err },
		"too many parts":          func() error { _, err := employeeKey.Key("1", "2"); return err },
		"separator in a part":     func() error { _, err := reviewKey.Key("000_123", "2012"); return err },
		"forbidden character":     func() error { _, err := reviewKey.Key("000123", "20/12"); return err },
		"parse another prefix":    func() error { _, err := reviewKey.Parse("email_000123_2012"); return err },
		"parse too few parts":     func() error { _, err := reviewKey.Parse("empid_000123"); return err },
		"parse too many parts":    func() error { _, err := employeeKey.Parse("empid_000123_2012"); return err },
		"range of a whole key":    func() error { _, _, err := reviewKey.Range("000123", "2012"); return err },
		"no part":                 func() error { _, err := compoundkey.NewLayout("empid", 0, nil); return err },
		"separator in the prefix": func() error { _, err := compoundkey.NewLayout("emp_id", 1, nil); return err },
	}
	for name, f := range refused {
		if err := f(); !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("%s: %v, want ErrInvalidInput", name, err)
		}
	}
	// Ranges fix leading parts exactly.
	lo, hi, err := reviewKey.Range("000123")
	if err != nil || lo != "empid_000123_" || hi != "empid_000123`" {
		t.Fatalf("Range = %q %q %v", lo, hi, err)
	}
	for _, k := range []string{"empid_000123", "empid_0001234_2012", "empid_000124_2012"} {
		if k >= lo && k < hi {
			t.Errorf("%q is in the range of employee 000123", k)
		}
	}
}

// Review is the guide's yearly review: RowKey "empid_<id>_<year>".
type Review struct {
	Department    string `table:",pk"`
	RowKey        string `table:",rk"`
	ManagerRating int32  `table:"ManagerRating"`
	PeerRating    int32  `table:"PeerRating"`
	Comments      string `table:"Comments"`
}

func FuzzLayoutRoundTrip(f *testing.F) {
	f.Add("000123", "2012", false)
	f.Add("o'brien!", "a_b", true)
	f.Add("", "", false)
	f.Fuzz(func(t *testing.T, a, b string, escaped bool) {
		l := compoundkey.MustLayout("empid", 2, &compoundkey.LayoutOptions{Escaped: escaped})
		key, err := l.Key(a, b)
		if err != nil {
			if escaped {
				t.Fatalf("the escaped layout refused %q %q: %v", a, b, err)
			}
			return
		}
		parts, err := l.Parse(key)
		if err != nil {
			t.Fatalf("Parse(Key(%q, %q) = %q): %v", a, b, key, err)
		}
		// Invalid UTF-8 is replaced by U+FFFD, as encoding/json does when the key is sent.
		if escaped && utf8.ValidString(a) && utf8.ValidString(b) && (parts[0] != a || parts[1] != b) {
			t.Fatalf("round trip of %q %q gave %q", a, b, parts)
		}
		if lo, hi, err := l.Range(a); err == nil && !(key >= lo && (hi == "" || key < hi)) {
			t.Fatalf("key %q is outside the range of its first part %q: [%q, %q)", key, a, lo, hi)
		}
	})
}
