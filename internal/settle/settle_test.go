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
		if got := w.Wait(c.arrived, t0, time.Time{}, t0.Add(c.age)); got != c.want {
			t.Errorf("%s: Wait = %v, want %v", c.name, got, c.want)
		}
	}
}

// A forged EnqueuedAt in the future is clamped to the queue's InsertionTime: the message
// ages by the service's clock and settles once Settle passed since it was stored.
func TestWaitClampsEnqueuedAtToInsertionTime(t *testing.T) {
	w, _ := New(time.Minute, time.Minute, "x")
	stored := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	forged := stored.Add(100 * 365 * 24 * time.Hour)
	if got := w.Wait(false, forged, stored, stored.Add(time.Minute)); got != 0 {
		t.Errorf("forged future EnqueuedAt, stored a Settle ago: Wait = %v, want 0", got)
	}
	if got := w.Wait(false, forged, stored, stored.Add(10*time.Second)); got != 10*time.Second {
		t.Errorf("forged future EnqueuedAt, stored 10 s ago: Wait = %v, want 10s (aged from InsertionTime)", got)
	}
	// An honest EnqueuedAt precedes InsertionTime and is kept: the window starts before
	// the queue stored the message, as the writer's deadline does.
	honest := stored.Add(-5 * time.Second)
	if got := w.Wait(false, honest, stored, honest.Add(time.Minute)); got != 0 {
		t.Errorf("honest EnqueuedAt: Wait = %v, want 0 a Settle after it", got)
	}
	if got := Sent(honest, stored); !got.Equal(honest) {
		t.Errorf("Sent(honest) = %v, want %v", got, honest)
	}
	if got := Sent(time.Time{}, stored); !got.Equal(stored) {
		t.Errorf("Sent(zero EnqueuedAt) = %v, want InsertionTime", got)
	}
	if got := Sent(forged, time.Time{}); !got.Equal(forged) {
		t.Errorf("Sent without InsertionTime = %v, want EnqueuedAt", got)
	}
}
