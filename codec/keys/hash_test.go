package keys

import (
	"errors"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

func TestHashPrefix(t *testing.T) {
	t.Parallel()
	// md5("200001") = ee8f...
	tests := []struct {
		key  string
		n    int
		want string
	}{
		{key: "200001", n: 4, want: "ee8f_200001"},
		{key: "200001", n: 0, want: "ee8f_200001"},
		{key: "200001", n: 1, want: "e_200001"},
		{key: "", n: 4, want: "d41d_"},
		{key: "200002", n: 4, want: "7db8_200002"},
	}
	for _, tt := range tests {
		got := HashPrefix(tt.key, tt.n)
		if got != tt.want {
			t.Errorf("HashPrefix(%q, %d) = %q, want %q", tt.key, tt.n, got, tt.want)
		}
		if back, err := StripHashPrefix(got); err != nil || back != tt.key {
			t.Errorf("StripHashPrefix(%q) = %q, %v", got, back, err)
		}
	}
	if got := HashPrefix("k", 99); len(got) != 32+2 {
		t.Errorf("HashPrefix(k, 99) = %q, want 32 hex digits", got)
	}
	for _, bad := range []string{"", "200001", "_200001", "ee8g_200001", "EE8F_200001", "ee8e_200001", strings.Repeat("a", 33) + "_x"} {
		if k, err := StripHashPrefix(bad); !errors.Is(err, errs.ErrInvalidInput) {
			t.Errorf("StripHashPrefix(%q) = %q, %v, want ErrInvalidInput", bad, k, err)
		}
	}
}

func TestBucket(t *testing.T) {
	t.Parallel()
	const buckets = 16
	counts := make([]int, buckets)
	for i := range 16000 {
		k := padUint(uint64(200000+i), 6)
		b := Bucket(k, buckets)
		if b < 0 || b >= buckets {
			t.Fatalf("Bucket(%q) = %d", k, b)
		}
		if b != Bucket(k, buckets) {
			t.Fatal("Bucket is not deterministic")
		}
		counts[b]++
		bk := BucketKey(k, buckets)
		if !strings.HasPrefix(bk, BucketPrefix(b, buckets)) {
			t.Fatalf("BucketKey(%q) = %q, prefix %q", k, bk, BucketPrefix(b, buckets))
		}
		gb, gk, err := SplitBucketKey(bk)
		if err != nil || gb != b || gk != k {
			t.Fatalf("SplitBucketKey(%q) = %d, %q, %v", bk, gb, gk, err)
		}
	}
	for b, c := range counts { // expected 1000 each; sequential keys must spread
		if c < 850 || c > 1150 {
			t.Errorf("bucket %d got %d of 16000 sequential keys", b, c)
		}
	}
	// Stability: these values are persisted in keys and must never change.
	for _, tt := range []struct {
		key           string
		buckets, want int
	}{{"200001", 16, 0}, {"200002", 16, 2}, {"Sales", 100, 97}} {
		if got := Bucket(tt.key, tt.buckets); got != tt.want {
			t.Errorf("Bucket(%q, %d) = %d, want %d", tt.key, tt.buckets, got, tt.want)
		}
	}
	if Bucket("x", 0) != 0 || Bucket("x", 1) != 0 || BucketKey("x", 0) != "0_x" {
		t.Error("buckets < 2 must give bucket 0")
	}
	tests := []struct {
		bucket, buckets int
		want            string
	}{
		{0, 10, "0_"}, {9, 10, "9_"}, {7, 16, "07_"}, {99, 100, "99_"}, {5, 101, "005_"}, {-1, 16, "15_"}, {17, 16, "01_"},
	}
	for _, tt := range tests {
		if got := BucketPrefix(tt.bucket, tt.buckets); got != tt.want {
			t.Errorf("BucketPrefix(%d, %d) = %q, want %q", tt.bucket, tt.buckets, got, tt.want)
		}
	}
	for _, bad := range []string{"", "x", "_x", "a_x", "-1_x", "99999999999999999999_x"} {
		if _, _, err := SplitBucketKey(bad); !errors.Is(err, errs.ErrInvalidInput) {
			t.Errorf("SplitBucketKey(%q) error = %v, want ErrInvalidInput", bad, err)
		}
	}
}

func FuzzHashPrefix(f *testing.F) {
	f.Add("200001", 4)
	f.Add("", 0)
	f.Add("a_b_c", 32)
	f.Fuzz(func(t *testing.T, key string, n int) {
		s := HashPrefix(key, n)
		back, err := StripHashPrefix(s)
		if err != nil || back != key {
			t.Fatalf("StripHashPrefix(HashPrefix(%q, %d) = %q) = %q, %v", key, n, s, back, err)
		}
	})
}

func FuzzStripHashPrefix(f *testing.F) {
	f.Add("ee8f_200001")
	f.Add("e_200001")
	f.Add("zz_x")
	f.Fuzz(func(t *testing.T, s string) {
		key, err := StripHashPrefix(s)
		if err != nil {
			return
		}
		if got := HashPrefix(key, strings.IndexByte(s, '_')); got != s {
			t.Fatalf("HashPrefix(StripHashPrefix(%q)) = %q", s, got)
		}
	})
}
