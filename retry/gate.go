package retry

import (
	"context"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"go.opentelemetry.io/otel/metric"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// Gate is one send rate shared by every request of a client: the answer to sustained
// throttling. Each operation's backoff (Policy) calms that operation only; the others, and
// new ones, keep offering the client's whole concurrency, so that under a partition's or an
// account's limit the client sends far more requests than the service admits (a retry
// storm: "Designing a scalable partitioning strategy" asks clients to back off, not to
// retry harder). The Gate limits nothing until more than Threshold of the service's
// answers over the last two seconds (and at least five of them) are 503 (ServerBusy) or 429; then, at most once per
// CutInterval, it limits the client to Cut times the requests the service accepted per
// second over those two seconds, raises that limit by Raise on every accepted answer, and
// lifts it after Quiet without a throttled answer. A request that gives up while it waits
// returns its slot.
//
// Known limits (the next engineer's to lift): it is one rate per client, so a partition
// throttled by another client's load, or one hot partition among cold ones, slows the
// client's requests to every partition; a client idle long after its first request gets
// a deeper first cut than a new one; and a request already waiting does not notice a
// lift.
//
// Install it as a policy of the Azure SDK client (account.NewClients and
// repo.TableClientOptions do, one Gate per client): it waits before each attempt, so a
// request held by the Gate is never sent late into a context that has ended. A Gate is
// safe for concurrent use.
//
// It records how long it held requests, the throttled answers it saw and its cuts as
// OpenTelemetry metrics (MetricGateWait, MetricGateThrottled, MetricGateCuts).
type Gate struct {
	cut, raise  float64
	threshold   float64
	cutInterval time.Duration
	quiet       time.Duration
	now         func() time.Time
	metrics     *instruments

	mu       sync.Mutex
	rate     float64     // requests/s; 0 = no limit
	slot     time.Time   // when the next request may start
	lastCut  time.Time   // the last throttled answer that cut the rate
	lastBusy time.Time   // the last throttled answer
	first    time.Time   // the first request of the current episode
	sent     int         // requests sent since first
	accepted []time.Time // accepted answers of the last two seconds
	refused  []time.Time // throttled answers of the last two seconds
}

// GateOptions configures a Gate. nil or zero fields give the defaults.
type GateOptions struct {
	// Cut is the fraction of the accepted rate the Gate limits the client to when the
	// service throttles it. Defaults to 0.7.
	Cut float64
	// Raise is the factor by which each accepted answer raises the limit. Defaults to 1.01.
	Raise float64
	// CutInterval is the least time between two cuts. Defaults to 1 s.
	CutInterval time.Duration
	// Quiet is how long without a throttled answer lifts the limit. Defaults to 10 s.
	Quiet time.Duration
	// Threshold is the share of throttled answers over the last two seconds above which
	// the Gate cuts: a few 503s among many accepted answers are the service moving a
	// partition, not a limit the client exceeds. Defaults to 0.2.
	Threshold float64
	// MeterProvider receives the Gate's metrics (MetricGateWait, MetricGateThrottled,
	// MetricGateCuts). Defaults to the global provider (otel.GetMeterProvider); a
	// noop.NewMeterProvider() turns them off.
	MeterProvider metric.MeterProvider
}

// NewGate returns a Gate with opts (nil: the defaults).
//
// Errors: an *InvalidInputError (ErrInvalidInput) for a Cut outside (0, 1), a Raise below
// 1 or infinite, a Threshold outside [0, 1), NaN in any of them, or a negative duration.
func NewGate(opts *GateOptions) (*Gate, error) {
	var o GateOptions
	if opts != nil {
		o = *opts
	}
	if o.Cut == 0 {
		o.Cut = 0.7
	}
	if o.Raise == 0 {
		o.Raise = 1.01
	}
	if o.CutInterval == 0 {
		o.CutInterval = time.Second
	}
	if o.Quiet == 0 {
		o.Quiet = 10 * time.Second
	}
	if o.Threshold == 0 {
		o.Threshold = 0.2
	}
	// Each check is written as the negation of what is valid, so that NaN (for which
	// every comparison is false) is refused too: a NaN Cut would make the limit NaN and
	// the Gate limit nothing under throttling.
	switch {
	case !(o.Cut > 0 && o.Cut < 1):
		return nil, invalidGate("Cut", "must be between 0 and 1")
	case !(o.Raise >= 1 && o.Raise <= math.MaxFloat64):
		return nil, invalidGate("Raise", "must be at least 1 and finite")
	case !(o.Threshold >= 0 && o.Threshold < 1):
		return nil, invalidGate("Threshold", "must be between 0 and 1")
	case !(o.CutInterval >= 0 && o.Quiet >= 0):
		return nil, invalidGate("CutInterval/Quiet", "must not be negative")
	}
	return &Gate{cut: o.Cut, raise: o.Raise, threshold: o.Threshold, cutInterval: o.CutInterval, quiet: o.Quiet, now: time.Now,
		metrics: instrumentsOf(o.MeterProvider)}, nil
}

// Do implements policy.Policy: it waits for the request's turn, sends it and learns from
// the answer.
func (g *Gate) Do(req *policy.Request) (*http.Response, error) {
	ctx, host := req.Raw().Context(), req.Raw().URL.Hostname()
	held, err := g.wait(ctx)
	g.metrics.gate(ctx, host, held, false, false)
	if err != nil {
		return nil, err
	}
	resp, err := req.Next()
	if err == nil {
		throttled := resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests
		g.metrics.gate(ctx, host, 0, throttled, g.observe(throttled))
	}
	return resp, err
}

// Wait blocks until the next request may start, or until ctx ends (its error).
func (g *Gate) Wait(ctx context.Context) error {
	held, err := g.wait(ctx)
	g.metrics.gate(ctx, "", held, false, false)
	return err
}

// wait is Wait, and returns how long it held the request.
func (g *Gate) wait(ctx context.Context) (time.Duration, error) {
	d := g.reserve()
	if d <= 0 {
		return 0, ctx.Err()
	}
	start := time.Now()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		g.unreserve()
		return time.Since(start), ctx.Err()
	case <-t.C:
		return time.Since(start), nil
	}
}

// unreserve gives back a slot whose request gave up, so that the requests behind it do
// not wait for it.
func (g *Gate) unreserve() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.rate > 0 {
		if s := g.slot.Add(-time.Duration(float64(time.Second) / g.rate)); s.After(g.now()) {
			g.slot = s
		}
	}
}

// reserve takes the next start slot and returns how long to wait for it.
func (g *Gate) reserve() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	if g.rate > 0 && now.Sub(g.lastBusy) > g.quiet {
		g.rate, g.first, g.sent = 0, time.Time{}, 0 // quiet long enough: no limit
	}
	if g.first.IsZero() {
		g.first = now
	}
	g.sent++
	if g.rate == 0 {
		return 0
	}
	at := now
	if g.slot.After(now) {
		at = g.slot
	}
	g.slot = at.Add(time.Duration(float64(time.Second) / g.rate))
	return at.Sub(now)
}

// Observe records one answer: throttled (503, 429) or accepted.
func (g *Gate) Observe(throttled bool) {
	g.metrics.gate(context.Background(), "", 0, throttled, g.observe(throttled))
}

// observe is Observe, and reports whether the answer cut the rate.
func (g *Gate) observe(throttled bool) (cut bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	g.accepted = recent(g.accepted, now)
	g.refused = recent(g.refused, now)
	if !throttled {
		g.accepted = append(g.accepted, now)
		if g.rate > 0 {
			g.rate *= g.raise
		}
		return false
	}
	g.lastBusy = now
	g.refused = append(g.refused, now)
	if len(g.refused) < minRefused || float64(len(g.refused)) <= g.threshold*float64(len(g.refused)+len(g.accepted)) {
		return false // scattered refusals (or too few to judge): not a limit the client exceeds
	}
	if !g.lastCut.IsZero() && now.Sub(g.lastCut) < g.cutInterval {
		return false
	}
	g.lastCut = now
	base := float64(len(g.accepted)) / 2 // accepted per second over the last two seconds
	if since := now.Sub(g.first); since < 2*time.Second {
		// Early in an episode refusals come back before the accepted answers: judge by
		// what was sent so far, over at least a second.
		base = float64(g.sent) / max(since.Seconds(), 1)
	}
	if g.rate > 0 {
		base = min(base, g.rate) // never raise the limit on a throttled answer
	}
	g.rate = max(g.cut*base, 1)
	return true
}

// minRefused is the fewest throttled answers in two seconds that can show a limit: fewer
// are too few to tell a limit from chance.
const minRefused = 5

// recent drops the times older than two seconds before now.
func recent(ts []time.Time, now time.Time) []time.Time {
	i := 0
	for i < len(ts) && now.Sub(ts[i]) > 2*time.Second {
		i++
	}
	return ts[i:]
}

// Rate returns the current limit in requests per second, 0 when there is none.
func (g *Gate) Rate() float64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.rate
}

func invalidGate(field, reason string) error {
	return errs.Invalid("retry.GateOptions."+field, "%s", reason)
}
