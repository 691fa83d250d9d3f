package keys

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

func TestPad(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n       int64
		width   int
		want    string
		wantErr bool
	}{
		{n: 123, width: 8, want: "00000123"},
		{n: 0, width: 1, want: "0"},
		{n: 9, width: 1, want: "9"},
		{n: 10, width: 1, wantErr: true},
		{n: 999999, width: 6, want: "999999"},
		{n: 1000000, width: 6, wantErr: true},
		{n: math.MaxInt64, width: 19, want: "9223372036854775807"},
		{n: 1, width: 19, want: "0000000000000000001"},
		{n: -1, width: 5, wantErr: true},
		{n: 1, width: 0, wantErr: true},
		{n: 1, width: 20, wantErr: true},
	}
	for _, tt := range tests {
		got, err := Pad(tt.n, tt.width)
		if tt.wantErr {
			var ie *errs.InvalidInputError
			if !errors.As(err, &ie) || !errors.Is(err, errs.ErrInvalidInput) {
				t.Errorf("Pad(%d, %d) error = %v, want *errs.InvalidInputError", tt.n, tt.width, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Pad(%d, %d) = %q, %v, want %q", tt.n, tt.width, got, err, tt.want)
			continue
		}
		back, err := ParsePad(got)
		if err != nil || back != tt.n {
			t.Errorf("ParsePad(%q) = %d, %v, want %d", got, back, err, tt.n)
		}
	}
}

func TestParsePadRefuses(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "-1", "+1", " 1", "1 ", "12a", "0x10", "9223372036854775808", "99999999999999999999", "１２"} {
		if v, err := ParsePad(s); !errors.Is(err, errs.ErrInvalidInput) {
			t.Errorf("ParsePad(%q) = %d, %v, want ErrInvalidInput", s, v, err)
		}
	}
}

func TestPadDesc(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n     int64
		width int
		want  string
	}{
		{n: 0, width: 3, want: "999"},
		{n: 1, width: 3, want: "998"},
		{n: 999, width: 3, want: "000"},
		{n: 0, width: 19, want: "9999999999999999999"},
		{n: math.MaxInt64, width: 19, want: "0776627963145224192"},
	}
	for _, tt := range tests {
		got, err := PadDesc(tt.n, tt.width)
		if err != nil || got != tt.want {
			t.Errorf("PadDesc(%d, %d) = %q, %v, want %q", tt.n, tt.width, got, err, tt.want)
			continue
		}
		back, err := ParsePadDesc(got)
		if err != nil || back != tt.n {
			t.Errorf("ParsePadDesc(%q) = %d, %v, want %d", got, back, err, tt.n)
		}
	}
	if _, err := PadDesc(1000, 3); !errors.Is(err, errs.ErrInvalidInput) {
		t.Errorf("PadDesc(1000, 3) error = %v, want ErrInvalidInput", err)
	}
	if _, err := PadDesc(-1, 3); !errors.Is(err, errs.ErrInvalidInput) {
		t.Errorf("PadDesc(-1, 3) error = %v, want ErrInvalidInput", err)
	}
	// 10^19-1 - 0776627963145224191 = MaxInt64+1: not something PadDesc makes.
	if v, err := ParsePadDesc("0776627963145224191"); !errors.Is(err, errs.ErrInvalidInput) {
		t.Errorf("ParsePadDesc(overflow) = %d, %v, want ErrInvalidInput", v, err)
	}
}

func FuzzPad(f *testing.F) {
	f.Add(int64(0), int64(1), uint8(1))
	f.Add(int64(123), int64(1234), uint8(8))
	f.Add(int64(math.MaxInt64), int64(math.MaxInt64-1), uint8(19))
	f.Add(int64(-5), int64(5), uint8(3))
	f.Fuzz(func(t *testing.T, a, b int64, w uint8) {
		width := int(w)
		pa, errA := Pad(a, width)
		pb, errB := Pad(b, width)
		if errA != nil || errB != nil {
			return
		}
		if len(pa) != width || len(pb) != width {
			t.Fatalf("Pad widths %q %q, want %d", pa, pb, width)
		}
		if got := strings.Compare(pa, pb); got != cmpInt(a, b) {
			t.Fatalf("Pad order: %d vs %d gives %q vs %q (%d)", a, b, pa, pb, got)
		}
		if back, err := ParsePad(pa); err != nil || back != a {
			t.Fatalf("ParsePad(%q) = %d, %v, want %d", pa, back, err, a)
		}
		da, _ := PadDesc(a, width)
		db, _ := PadDesc(b, width)
		if got := strings.Compare(da, db); got != -cmpInt(a, b) {
			t.Fatalf("PadDesc order: %d vs %d gives %q vs %q (%d)", a, b, da, db, got)
		}
		if back, err := ParsePadDesc(da); err != nil || back != a {
			t.Fatalf("ParsePadDesc(%q) = %d, %v, want %d", da, back, err, a)
		}
	})
}

func FuzzParsePad(f *testing.F) {
	for _, s := range []string{"0", "000123", "9223372036854775807", "9223372036854775808", "-1", "", "1a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if v, err := ParsePad(s); err == nil {
			if p, err := Pad(v, len(s)); err != nil || p != s {
				t.Fatalf("Pad(ParsePad(%q)) = %q, %v", s, p, err)
			}
		}
		if v, err := ParsePadDesc(s); err == nil {
			if p, err := PadDesc(v, len(s)); err != nil || p != s {
				t.Fatalf("PadDesc(ParsePadDesc(%q)) = %q, %v", s, p, err)
			}
		}
	})
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
