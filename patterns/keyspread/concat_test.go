package keyspread_test

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/patterns/keyspread"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Tablestore's primary key design guide: DeviceID, SellerID, CardID concatenated with padding and a low separator sort
// exactly as the tuples do.
func TestConcatKeepsOrder(t *testing.T) {
	t.Parallel()
	c, err := keyspread.NewConcat(keyspread.Field{Name: "DeviceID", Digits: 6}, keyspread.Field{Name: "SellerID"}, keyspread.Field{Name: "CardID", Digits: 6})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		device int
		seller string
		card   int
	}
	guide := []row{{16, "a100", 66661}, {54, "a100", 6777}, {54, "a1001", 6777}, {167, "a101", 283408}}
	want := []string{"000016!a100!066661", "000054!a100!006777", "000054!a1001!006777", "000167!a101!283408"}
	for i, r := range guide {
		k, err := c.Key(r.device, r.seller, r.card)
		if err != nil || k != want[i] {
			t.Fatalf("Key(%v) = %q, %v; want %q", r, k, err, want[i])
		}
		parts, err := c.Parse(k)
		if err != nil || parts[0] != fmt.Sprint(r.device) || parts[1] != r.seller || parts[2] != fmt.Sprint(r.card) {
			t.Fatalf("Parse(%q) = %q, %v", k, parts, err)
		}
	}
	// Random tuples, including sellers with characters that sort below letters.
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "b", "0", "1", ",", ":", " ", "!", "~", "é", "a1", "a10"}
	rows := make([]row, 500)
	for i := range rows {
		s := ""
		for n := rng.IntN(4); n >= 0; n-- {
			s += alphabet[rng.IntN(len(alphabet))]
		}
		rows[i] = row{rng.IntN(1000), s, rng.IntN(1000000)}
	}
	slices.SortFunc(rows, func(a, b row) int {
		return cmp.Or(cmp.Compare(a.device, b.device), strings.Compare(a.seller, b.seller), cmp.Compare(a.card, b.card))
	})
	var prev string
	for i, r := range rows {
		k, err := c.Key(r.device, r.seller, r.card)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && k < prev {
			t.Fatalf("key order differs from tuple order at %v: %q < %q", r, k, prev)
		}
		prev = k
	}
	// Partial keys bound ranges of the leading fields: DeviceID 15 to 99.
	lo, _ := c.Partial(15)
	hi, _ := c.Partial(100)
	for i, k := range want {
		in := k >= lo && k < hi
		if wantIn := guide[i].device >= 15 && guide[i].device < 100; in != wantIn {
			t.Fatalf("%q in [%q, %q) = %v", k, lo, hi, in)
		}
	}
	if p, _ := c.Prefix(54); !strings.HasPrefix(want[1], p) || strings.HasPrefix(want[0], p) {
		t.Fatalf("Prefix(54) = %q", p)
	}
	bad := map[string]error{
		"too few":    second(c.Key(1, "a")),
		"wrong type": second(c.Key("1", "a", 2)),
		"negative":   second(c.Key(-1, "a", 2)),
		"too wide":   second(c.Key(1234567, "a", 2)),
		"full pref":  second(c.Prefix(1, "a", 2)),
		"parse":      second(c.Parse("000016!a100")),
		"no fields":  second(keyspread.NewConcat()),
		"digits":     second(keyspread.NewConcat(keyspread.Field{Name: "x", Digits: 20})),
	}
	for name, err := range bad {
		if !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
