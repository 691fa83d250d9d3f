package retry

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// NewBackOff returns a fresh backoff.BackOff (cenkalti/backoff/v4) that yields the waits of
// the "Designing a scalable partitioning strategy" formula, with jitter, for the policy with its defaults. The first
// NextBackOff is the wait before retry 1; NextBackOff returns backoff.Stop once MaxRetries
// waits were given or when the next wait would end past MaxElapsed from the creation (or
// the last Reset), and keeps returning it until Reset. Reset starts over at retry 1 and
// restarts the MaxElapsed clock.
//
// It does not validate p: negative values other than Off act as Off; call Validate first.
// The BackOff is not safe for concurrent use: make one per operation.
func (p Policy) NewBackOff() backoff.BackOff {
	return newExpBackOff(p, time.Now, rand.Float64)
}

// expBackOff implements the formula. now and rand are fields so that tests can drive it.
type expBackOff struct {
	z, zmin, zmax float64 // nanoseconds; zmax is +Inf when off
	maxRetries    int     // 0 when off
	maxElapsed    time.Duration
	now           func() time.Time
	rand          func() float64 // [0, 1)

	retries int // x of the last wait given
	start   time.Time
	stopped bool
}

func newExpBackOff(p Policy, now func() time.Time, rnd func() float64) *expBackOff {
	p = p.WithDefaults()
	b := &expBackOff{
		z:          float64(max(p.Delay, 0)),
		zmin:       float64(max(p.MinDelay, 0)),
		zmax:       math.Inf(1),
		maxRetries: max(p.MaxRetries, 0),
		maxElapsed: p.MaxElapsed,
		now:        now,
		rand:       rnd,
	}
	if p.MaxDelay > 0 {
		b.zmax = float64(p.MaxDelay)
	}
	b.Reset()
	return b
}

// Reset implements backoff.BackOff.
func (b *expBackOff) Reset() {
	b.retries = 0
	b.stopped = false
	b.start = b.now()
}

// NextBackOff implements backoff.BackOff.
func (b *expBackOff) NextBackOff() time.Duration {
	if b.stopped || b.retries >= b.maxRetries {
		b.stopped = true
		return backoff.Stop
	}
	d := b.delay(b.retries + 1)
	if b.maxElapsed > 0 && b.now().Sub(b.start)+d > b.maxElapsed {
		b.stopped = true
		return backoff.Stop
	}
	b.retries++
	return d
}

// delay computes Min(zmin + Rand(0.8z, 1.2z) * (2^x - 1), zmax) for retry x >= 1.
func (b *expBackOff) delay(x int) time.Duration {
	jittered := b.z * (0.8 + 0.4*b.rand())
	y := b.zmin + jittered*(math.Exp2(float64(min(x, 1023)))-1)
	y = min(y, b.zmax, 1<<62) // 146 years; float64(MaxInt64) would overflow the conversion
	return time.Duration(y)
}
