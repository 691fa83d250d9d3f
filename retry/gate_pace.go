package retry

import "time"

// A Schedule's tasks are alike (the chunks of one bulk path: transactions of up to 100
// entities), and the service's partitions share one target, so the rate at which one
// partition of a Schedule met its limit is the best first guess of every other
// partition's: without it,
// each partition meets its limit once (a refused request) before its own rate is known.
// The Gate takes the guess only for the requests of the Schedule that learnt it (through
// the task's context), so that a busy partition never slows another client's requests.

// learnt records, as the Schedule's guess, the rate partition limiter l was just cut
// from: the cut leaves the refused partition room to drain what it sent over its limit,
// which a partition that was not refused has no need of.
func (h *readyHints) learnt(l *limiter) {
	l.mu.Lock()
	rate, at := l.rate/l.cut, l.lastCut
	l.mu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.paceRate, h.paceAt = rate, at
}

// pace starts partition limiter l at the Schedule's guess when l has no rate of its own:
// its requests are then spaced at the rate another partition met its limit at, instead
// of finding that limit by a refusal.
func (h *readyHints) pace(l *limiter) {
	h.mu.Lock()
	rate, at := h.paceRate, h.paceAt
	h.mu.Unlock()
	if rate > 0 {
		l.adopt(rate, at)
	}
}

// adopt sets the rate of a limiter that has none to rate, learnt at time at by another
// partition; the guess lapses like a cut, Quiet after at. The next request waits a whole
// interval after the limiter's last one (a partition that sent some already has used its
// burst), except the first request of a new limiter.
func (g *limiter) adopt(rate float64, at time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	if g.rate > 0 || now.Sub(at) > g.quiet {
		return
	}
	g.rate, g.lastBusy = rate, at
	if g.sent == 0 {
		return
	}
	if next := g.lastUsed.Add(time.Duration(float64(time.Second) / rate)); next.After(g.slot) {
		g.slot = next
	}
}
