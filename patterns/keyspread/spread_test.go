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

func TestBuckets(t *testing.T) {
	t.Parallel()
	b, err := keyspread.NewBuckets(16)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]int{}
	for i := 200001; i < 201001; i++ {
		natural := fmt.Sprint(i)
		pk := b.Key(natural)
		bucket, got, err := b.Split(pk)
		if err != nil || got != natural || !strings.HasPrefix(pk, b.Prefix(bucket)) {
			t.Fatalf("Split(%q) = %d, %q, %v", pk, bucket, got, err)
		}
		seen[bucket]++
		by := b.KeyBy("2014-07-31T18", natural)
		if _, n, err := b.Split(by); err != nil || n != "2014-07-31T18" {
			t.Fatalf("Split(%q) = %q, %v", by, n, err)
		}
	}
	// 1,000 sequential keys use every bucket, none with more than twice its fair share.
	if len(seen) != 16 {
		t.Fatalf("%d buckets used", len(seen))
	}
	for k, n := range seen {
		if n > 2*1000/16 {
			t.Fatalf("bucket %d holds %d of 1000 keys", k, n)
		}
	}
	for _, n := range []int{0, -1, keyspread.MaxBuckets + 1} {
		if _, err := keyspread.NewBuckets(n); !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("NewBuckets(%d): %v", n, err)
		}
	}
	small, _ := keyspread.NewBuckets(4)
	if _, _, err := small.Split(b.Prefix(15) + "x"); !errors.Is(err, repo.ErrInvalidInput) {
		t.Errorf("a key of 16 buckets split as one of 4: %v", err)
	}
	if _, _, err := b.Split("nobucket"); !errors.Is(err, repo.ErrInvalidInput) {
		t.Errorf("Split of an unbucketed key: %v", err)
	}
}

func TestHashPrefix(t *testing.T) {
	t.Parallel()
	h, err := keyspread.NewHashPrefix(0)
	if err != nil {
		t.Fatal(err)
	}
	pk := h.Key("200001")
	if pk != "ee8f_200001" {
		t.Fatalf("Key(200001) = %q", pk)
	}
	if n, err := h.Split(pk); err != nil || n != "200001" {
		t.Fatalf("Split = %q, %v", n, err)
	}
	six, _ := keyspread.NewHashPrefix(6)
	if _, err := h.Split(six.Key("200001")); !errors.Is(err, repo.ErrInvalidInput) {
		t.Errorf("a 6-digit prefix split as 4: %v", err)
	}
	if _, err := h.Split("0000_200001"); !errors.Is(err, repo.ErrInvalidInput) {
		t.Errorf("a wrong hash accepted: %v", err)
	}
	if _, err := keyspread.NewHashPrefix(33); !errors.Is(err, repo.ErrInvalidInput) {
		t.Errorf("33 digits: %v", err)
	}
}

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

func second[A any](_ A, err error) error { return err }
