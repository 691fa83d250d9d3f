package settle

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

func TestNewDefaultsAndRefuses(t *testing.T) {
	w, err := New(0, time.Minute, "Options.Settle")
	if err != nil || w.Settle() != time.Minute {
		t.Fatalf("New(0) = %v, %v; want the default", w.Settle(), err)
	}
	for _, d := range []time.Duration{-1, time.Second, Min - 1} {
		_, err := New(d, time.Minute, "Options.Settle")
		var ie *errs.InvalidInputError
		if !errors.As(err, &ie) || ie.Field != "Options.Settle" {
			t.Errorf("New(%v) = %v, want an invalid input naming the option", d, err)
		}
	}
}

func TestWriteDeadlineIsHalfTheWindow(t *testing.T) {
	w, _ := New(10*time.Second, time.Minute, "x")
	before := time.Now()
	ctx, cancel := w.Write(context.Background())
	defer cancel()
	dl, ok := ctx.Deadline()
	if !ok || dl.Before(before.Add(5*time.Second)) || dl.After(time.Now().Add(5*time.Second)) {
		t.Fatalf("deadline %v, want 5 s after the call", dl)
	}
}

func TestWait(t *testing.T) {
	w, _ := New(time.Minute, time.Minute, "x")
	t0 := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name    string
		arrived bool
		age     time.Duration
		want    time.Duration
	}{
		{"arrived", true, 0, 0},
		{"young: at least a second", false, 0, time.Second},
		{"grows with the age", false, 10 * time.Second, 10 * time.Second},
		{"never past the window", false, 40 * time.Second, 20 * time.Second},
		{"settled at the window", false, time.Minute, 0},
		{"settled after", false, time.Hour, 0},
	} {
		if got := w.Wait(c.arrived, t0, t0.Add(c.age)); got != c.want {
			t.Errorf("%s: Wait = %v, want %v", c.name, got, c.want)
		}
	}
}
