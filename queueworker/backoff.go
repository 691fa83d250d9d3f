package queueworker

import (
	"math"
	"time"
)

// pollBackoff yields the waits between dequeues of an empty queue: MinPollInterval, then
// doubling up to MaxPollInterval, each with ±20 % jitter (never above the maximum), as the
// WebJobs queue listener's randomized exponential backoff. Reset starts over. It is used
// by the one fetch goroutine only.
type pollBackoff struct {
	min, max time.Duration
	cur      time.Duration // the un-jittered interval of the last wait, 0 after Reset
	rand     func() float64
}

// newPollBackoff returns the polling backoff between minD and maxD, jittered by rnd
// (values in [0, 1); rand.Float64 outside tests).
func newPollBackoff(minD, maxD time.Duration, rnd func() float64) *pollBackoff {
	return &pollBackoff{min: minD, max: maxD, rand: rnd}
}

// Next returns the wait before the next dequeue and grows the interval.
func (p *pollBackoff) Next() time.Duration {
	if p.cur == 0 {
		p.cur = p.min
	} else {
		p.cur = min(2*p.cur, p.max)
	}
	d := time.Duration(float64(p.cur) * (0.8 + 0.4*p.rand()))
	return min(d, p.max)
}

// Reset makes the next wait MinPollInterval again (a message arrived).
func (p *pollBackoff) Reset() { p.cur = 0 }

// retryDelay is the visibility a failed message is released with after its n-th delivery:
// Min(Rand(0.8z, 1.2z) * (2^n - 1), zmax), the formula of retry.Policy with zmin = 0.
func retryDelay(z, zmax time.Duration, n int64, rnd func() float64) time.Duration {
	if z <= 0 || n < 1 {
		return 0
	}
	y := float64(z) * (0.8 + 0.4*rnd()) * (math.Exp2(float64(min(n, 62))) - 1)
	return time.Duration(min(y, float64(zmax)))
}
