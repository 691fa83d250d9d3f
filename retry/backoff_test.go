package retry

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// bounds is the formula of "Designing a scalable partitioning strategy" written out independently of the implementation.
func bounds(z, zmin, zmax time.Duration, x int) (lo, hi time.Duration) {
	f := math.Exp2(float64(x)) - 1
	lo = min(zmin+time.Duration(0.8*float64(z)*f), zmax)
	hi = min(zmin+time.Duration(1.2*float64(z)*f), zmax)
	return lo, hi
}

func TestBackOffFormulaBounds(t *testing.T) {
	t.Parallel()
	p := Policy{Delay: 10 * time.Millisecond, MinDelay: 5 * time.Millisecond, MaxDelay: 2 * time.Second, MaxRetries: 10, MaxElapsed: Off}
	const samples = 2000
	const retries = 10
	var below, above [retries + 1]int
	for range samples {
		b := p.NewBackOff()
		for x := 1; x <= retries; x++ {
			d := b.NextBackOff()
			lo, hi := bounds(p.Delay, p.MinDelay, p.MaxDelay, x)
			if d < lo-1 || d > hi+1 { // 1 ns of float rounding
				t.Fatalf("retry %d: wait %v outside [%v, %v]", x, d, lo, hi)
			}
			if lo == hi {
				continue
			}
			if d < (lo+hi)/2 {
				below[x]++
			} else {
				above[x]++
			}
		}
		if d := b.NextBackOff(); d != backoff.Stop {
			t.Fatalf("after %d retries NextBackOff = %v, want Stop", retries, d)
		}
	}
	// Retries 1 to 7 are below the cap (5 ms + 12 ms * 127 < 2 s): the jitter must show up
	// in both halves of ±20 %, and retry 10 must sit at zmax.
	for x := 1; x <= 7; x++ {
		if below[x] < samples/4 || above[x] < samples/4 {
			t.Errorf("retry %d: %d waits in the lower half, %d in the upper half of %d", x, below[x], above[x], samples)
		}
	}
	if lo, hi := bounds(p.Delay, p.MinDelay, p.MaxDelay, 10); lo != p.MaxDelay || hi != p.MaxDelay {
		t.Errorf("retry 10 bounds %v %v, want zmax", lo, hi)
	}
}

func TestBackOffDefaults(t *testing.T) {
	t.Parallel()
	b := Policy{}.NewBackOff()
	var total time.Duration
	for x := 1; x <= DefaultMaxRetries; x++ {
		d := b.NextBackOff()
		lo, hi := bounds(DefaultDelay, DefaultMinDelay, DefaultMaxDelay, x)
		if d < lo-1 || d > hi+1 {
			t.Fatalf("default retry %d: %v outside [%v, %v]", x, d, lo, hi)
		}
		total += d
	}
	if d := b.NextBackOff(); d != backoff.Stop {
		t.Fatalf("default policy gave a retry %d: %v", DefaultMaxRetries+1, d)
	}
	if total > DefaultMaxElapsed {
		t.Errorf("default waits add up to %v, above MaxElapsed %v", total, DefaultMaxElapsed)
	}
}

func TestBackOffMaxRetriesAndReset(t *testing.T) {
	t.Parallel()
	p := Policy{Delay: time.Millisecond, MinDelay: time.Millisecond, MaxDelay: 4 * time.Millisecond, MaxRetries: 3}
	b := p.NewBackOff()
	for round := range 2 {
		for x := 1; x <= 3; x++ {
			d := b.NextBackOff()
			lo, hi := bounds(p.Delay, p.MinDelay, p.MaxDelay, x)
			if d < lo-1 || d > hi+1 {
				t.Fatalf("round %d retry %d: %v outside [%v, %v]", round, x, d, lo, hi)
			}
		}
		for range 3 {
			if d := b.NextBackOff(); d != backoff.Stop {
				t.Fatalf("round %d: NextBackOff past MaxRetries = %v, want Stop", round, d)
			}
		}
		b.Reset()
	}
	if d := NoRetry().NewBackOff().NextBackOff(); d != backoff.Stop {
		t.Errorf("NoRetry NextBackOff = %v, want Stop", d)
	}
}

func TestBackOffFixedAndUncapped(t *testing.T) {
	t.Parallel()
	fixed := Policy{Delay: Off, MinDelay: 3 * time.Millisecond, MaxRetries: 4}.NewBackOff()
	for x := 1; x <= 4; x++ {
		if d := fixed.NextBackOff(); d != 3*time.Millisecond {
			t.Fatalf("fixed backoff retry %d = %v, want 3ms", x, d)
		}
	}
	uncapped := newExpBackOff(Policy{Delay: time.Second, MinDelay: Off, MaxDelay: Off, MaxRetries: 40, MaxElapsed: Off}, time.Now, func() float64 { return 0.5 })
	for x := 1; x <= 40; x++ {
		d := uncapped.NextBackOff()
		if want := time.Duration(float64(time.Second) * (math.Exp2(float64(x)) - 1)); x < 30 && d != want {
			t.Fatalf("uncapped retry %d = %v, want %v", x, d, want)
		}
		if d <= 0 {
			t.Fatalf("uncapped retry %d overflowed: %v", x, d)
		}
	}
}

func TestBackOffMaxElapsed(t *testing.T) {
	t.Parallel()
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	// rand 0.5: waits are exactly zmin + z*(2^x-1) = 1s, 3s, 7s, 15s.
	p := Policy{Delay: time.Second, MinDelay: Off, MaxDelay: time.Hour, MaxRetries: 100, MaxElapsed: 12 * time.Second}
	b := newExpBackOff(p, clock, func() float64 { return 0.5 })
	for _, want := range []time.Duration{time.Second, 3 * time.Second, 7 * time.Second} {
		d := b.NextBackOff()
		if d != want {
			t.Fatalf("NextBackOff = %v, want %v", d, want)
		}
		now = now.Add(d + 100*time.Millisecond) // the wait and an attempt
	}
	// 11.3 s elapsed; 15 s more would end past 12 s.
	if d := b.NextBackOff(); d != backoff.Stop {
		t.Fatalf("NextBackOff past MaxElapsed = %v, want Stop", d)
	}
	if d := b.NextBackOff(); d != backoff.Stop {
		t.Fatalf("NextBackOff after Stop = %v, want Stop", d)
	}
	b.Reset()
	if d := b.NextBackOff(); d != time.Second {
		t.Fatalf("NextBackOff after Reset = %v, want 1s (clock restarted)", d)
	}
	// A first wait longer than MaxElapsed is never started.
	b = newExpBackOff(Policy{Delay: time.Minute, MaxElapsed: time.Second}, clock, func() float64 { return 0 })
	if d := b.NextBackOff(); d != backoff.Stop {
		t.Fatalf("NextBackOff = %v, want Stop", d)
	}
}

func TestPolicyDefaultsAndValidate(t *testing.T) {
	t.Parallel()
	d := Policy{}.WithDefaults()
	if d.Delay != DefaultDelay || d.MinDelay != DefaultMinDelay || d.MaxDelay != DefaultMaxDelay ||
		d.MaxRetries != DefaultMaxRetries || d.MaxElapsed != DefaultMaxElapsed || d.Logger == nil {
		t.Fatalf("WithDefaults = %+v", d)
	}
	if got := (Policy{MaxDelay: 50 * time.Millisecond}).WithDefaults().MinDelay; got != 50*time.Millisecond {
		t.Errorf("MinDelay default under a low MaxDelay = %v, want 50ms", got)
	}
	if got := (Policy{MaxRetries: Off, MaxElapsed: Off}).WithDefaults(); got.MaxRetries != Off || got.MaxElapsed != Off {
		t.Errorf("WithDefaults changed Off values: %+v", got)
	}
	valid := []Policy{{}, BatchPolicy(), NoRetry(), {Delay: Off, MinDelay: Off, MaxDelay: Off, MaxRetries: Off, MaxElapsed: Off}, {MaxDelay: time.Millisecond}}
	for _, p := range valid {
		if err := p.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v", p, err)
		}
	}
	invalid := []Policy{
		{Delay: -2}, {MinDelay: -time.Second}, {MaxDelay: -5}, {MaxElapsed: -time.Minute}, {MaxRetries: -2},
		{MinDelay: time.Second, MaxDelay: time.Millisecond},
	}
	for _, p := range invalid {
		var ie *errs.InvalidInputError
		if err := p.Validate(); !errors.As(err, &ie) || !errors.Is(err, errs.ErrInvalidInput) {
			t.Errorf("Validate(%+v) = %v, want *errs.InvalidInputError", p, err)
		}
	}
}

func TestOrFillsOnlyZeroFields(t *testing.T) {
	own := Policy{Delay: time.Second, MaxRetries: Off}
	got := own.Or(Conflict())
	want := Policy{Delay: time.Second, MinDelay: Conflict().MinDelay, MaxDelay: Conflict().MaxDelay, MaxRetries: Off, MaxElapsed: Conflict().MaxElapsed}
	if got != want {
		t.Fatalf("Or: %+v, want %+v", got, want)
	}
	if err := Conflict().Validate(); err != nil {
		t.Fatalf("Conflict() is invalid: %v", err)
	}
}

// The presets are functions that return a fresh copy; changing what one call
// returned changes nothing for the next caller.
func TestPresetsAreFreshCopies(t *testing.T) {
	for name, preset := range map[string]func() Policy{"BatchPolicy": BatchPolicy, "NoRetry": NoRetry, "Conflict": Conflict} {
		want := preset()
		if err := want.Validate(); err != nil {
			t.Fatalf("%s() is invalid: %v", name, err)
		}
		changed := preset()
		changed.MaxRetries, changed.Delay = 99, time.Hour
		if got := preset(); got != want {
			t.Errorf("%s() after a caller changed its copy = %+v, want %+v", name, got, want)
		}
	}
	if b := BatchPolicy(); b.Delay != 30*time.Second || b.MinDelay != 3*time.Second || b.MaxDelay != 90*time.Second || b.MaxRetries != 5 || b.MaxElapsed != 10*time.Minute {
		t.Errorf("BatchPolicy() = %+v, want the partitioning article's sample", b)
	}
	if NoRetry().MaxRetries != Off {
		t.Errorf("NoRetry() = %+v, want MaxRetries Off", NoRetry())
	}
}
