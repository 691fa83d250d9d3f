package keys

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

func TestTicks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		t    time.Time
		want int64
	}{
		// Values of new DateTime(...).Ticks in .NET.
		{t: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), want: 0},
		{t: time.Unix(0, 0), want: 621355968000000000},
		{t: time.Date(2012, 1, 1, 0, 0, 0, 0, time.UTC), want: 634609728000000000},
		{t: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), want: MaxTicks},
		{t: time.Date(2012, 1, 1, 9, 0, 0, 150, time.FixedZone("JST", 9*3600)), want: 634609728000000001},
		// Clamped.
		{t: time.Time{}.Add(-time.Hour), want: 0},
		{t: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), want: MaxTicks},
		{t: time.Date(-50000, 1, 1, 0, 0, 0, 0, time.UTC), want: 0},
		{t: time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC), want: MaxTicks},
	}
	for _, tt := range tests {
		if got := Ticks(tt.t); got != tt.want {
			t.Errorf("Ticks(%v) = %d, want %d", tt.t, got, tt.want)
		}
	}
	got, err := FromTicks(634609728000000001)
	if want := time.Date(2012, 1, 1, 0, 0, 0, 100, time.UTC); err != nil || !got.Equal(want) || got.Location() != time.UTC {
		t.Errorf("FromTicks = %v, %v, want %v", got, err, want)
	}
	for _, bad := range []int64{-1, MaxTicks + 1} {
		if _, err := FromTicks(bad); !errors.Is(err, errs.ErrInvalidInput) {
			t.Errorf("FromTicks(%d) error = %v, want ErrInvalidInput", bad, err)
		}
	}
}

func TestInvertedTicks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		t    time.Time
		want string
	}{
		{t: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), want: "0000000000000000000"},
		{t: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), want: "3155378975999999999"},
		// DateTime.MaxValue.Ticks - new DateTime(2012, 1, 1).Ticks
		{t: time.Date(2012, 1, 1, 0, 0, 0, 0, time.UTC), want: "2520769247999999999"},
	}
	for _, tt := range tests {
		got := InvertedTicks(tt.t)
		if got != tt.want {
			t.Errorf("InvertedTicks(%v) = %q, want %q", tt.t, got, tt.want)
		}
		back, err := FromInvertedTicks(got)
		if err != nil || !back.Equal(tt.t.Truncate(100)) {
			t.Errorf("FromInvertedTicks(%q) = %v, %v, want %v", got, back, err, tt.t)
		}
	}
	for _, bad := range []string{"", "123", "00000000000000000000", "315537897599999999a", "3155378976000000000", "-155378975999999999"} {
		if _, err := FromInvertedTicks(bad); !errors.Is(err, errs.ErrInvalidInput) {
			t.Errorf("FromInvertedTicks(%q) error = %v, want ErrInvalidInput", bad, err)
		}
	}
}

func TestInvertedTicksUnique(t *testing.T) {
	t.Parallel()
	t1 := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	t2 := t1.Add(time.Millisecond)
	k1 := InvertedTicksUnique(t1, "zzz")
	k2 := InvertedTicksUnique(t2, "aaa")
	if !(k2 < k1) {
		t.Errorf("newer %q does not sort before older %q", k2, k1)
	}
	if a, b := InvertedTicksUnique(t1, "a"), InvertedTicksUnique(t1, "b"); a == b || a > b {
		t.Errorf("same tick: %q, %q", a, b)
	}
	got, id, err := SplitInvertedTicksUnique(k1)
	if err != nil || !got.Equal(t1) || id != "zzz" {
		t.Errorf("SplitInvertedTicksUnique(%q) = %v, %q, %v", k1, got, id, err)
	}
	for _, bad := range []string{"", InvertedTicks(t1), InvertedTicks(t1) + "-x", "x" + k1[1:]} {
		if _, _, err := SplitInvertedTicksUnique(bad); !errors.Is(err, errs.ErrInvalidInput) {
			t.Errorf("SplitInvertedTicksUnique(%q) error = %v, want ErrInvalidInput", bad, err)
		}
	}
}

// FuzzInvertedTicks checks the round trip (to 100 ns) and that newer times sort first.
func FuzzInvertedTicks(f *testing.F) {
	f.Add(int64(0), int64(0), int64(1), int64(0))
	f.Add(int64(1325376000), int64(100), int64(1325376000), int64(199))
	f.Add(int64(-62135596800), int64(0), int64(253402300799), int64(999999999))
	f.Add(int64(-62135596801), int64(0), int64(253402300800), int64(0))
	f.Fuzz(func(t *testing.T, s1, n1, s2, n2 int64) {
		a := time.Unix(s1, n1%1e9)
		b := time.Unix(s2, n2%1e9)
		ka, kb := InvertedTicks(a), InvertedTicks(b)
		if len(ka) != 19 || len(kb) != 19 {
			t.Fatalf("widths %q %q", ka, kb)
		}
		ta, tb := Ticks(a), Ticks(b)
		if got, want := strings.Compare(ka, kb), -cmpInt(ta, tb); got != want {
			t.Fatalf("order: %v (%d) vs %v (%d): %q vs %q = %d", a, ta, b, tb, ka, kb, got)
		}
		if ta > 0 && ta < MaxTicks { // not clamped: the order of times is kept to 100 ns
			if a.Before(b) && ta > tb || a.After(b) && ta < tb {
				t.Fatalf("Ticks not monotonic: %v %d, %v %d", a, ta, b, tb)
			}
			back, err := FromInvertedTicks(ka)
			if err != nil || !back.Equal(a.Truncate(100)) || Ticks(back) != ta {
				t.Fatalf("FromInvertedTicks(InvertedTicks(%v)) = %v, %v", a, back, err)
			}
		}
	})
}

func FuzzFromInvertedTicks(f *testing.F) {
	for _, s := range []string{"0000000000000000000", "3155378975999999999", "3155378976000000000", "2520769247999999999", "abc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tm, err := FromInvertedTicks(s)
		if err != nil {
			return
		}
		if got := InvertedTicks(tm); got != s {
			t.Fatalf("InvertedTicks(FromInvertedTicks(%q)) = %q", s, got)
		}
	})
}
