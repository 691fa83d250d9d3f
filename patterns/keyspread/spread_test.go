package keyspread_test

import (
	"errors"
	"fmt"
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

func second[A any](_ A, err error) error { return err }
