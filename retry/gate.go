package retry

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

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
// second over those two seconds (at the first cut: the requests it offered), raises that limit
// by Raise on every accepted answer, and lifts it after Quiet without a throttled answer.
// It does not cut again when its last cut did not lower the share of throttled answers:
// such refusals (one hot partition among cold ones, another client's load) do not answer
// to this client's rate.
//
// Install it as a policy of the Azure SDK client (account.NewClients and
// repo.TableClientOptions do, one Gate per client): it waits before each attempt, so a
// request held by the Gate is never sent late into a context that has ended. A Gate is
// safe for concurrent use.
type Gate struct {
	cut, raise  float64
	threshold   float64
	cutInterval time.Duration
	quiet       time.Duration
	now         func() time.Time

	mu            sync.Mutex
	rate          float64     // requests/s; 0 = no limit
	epoch         int         // changes with every cut and lift: waits taken before are re-judged
	slot          time.Time   // when the next request may start
	lastCut       time.Time   // the last throttled answer that cut the rate
	lastShare     float64     // the share of throttled answers at the last cut
	lastThrottled time.Time   // the last throttled answer
	sent          []time.Time // requests of the last two seconds
	accepted      []time.Time // accepted answers of the last two seconds
	refused       []time.Time // throttled answers of the last two seconds
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
}

// NewGate returns a Gate with opts (nil: the defaults).
//
// Errors: an *InvalidInputError (ErrInvalidInput) for a Cut outside (0, 1), a Raise below
// 1, or a negative duration.
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
	switch {
	case o.Cut <= 0 || o.Cut >= 1:
		return nil, invalidGate("Cut", "must be between 0 and 1")
	case o.Raise < 1:
		return nil, invalidGate("Raise", "must be at least 1")
	case o.Threshold < 0 || o.Threshold >= 1:
		return nil, invalidGate("Threshold", "must be between 0 and 1")
	case o.CutInterval < 0 || o.Quiet < 0:
		return nil, invalidGate("CutInterval/Quiet", "must not be negative")
	}
	return &Gate{cut: o.Cut, raise: o.Raise, threshold: o.Threshold, cutInterval: o.CutInterval, quiet: o.Quiet, now: time.Now}, nil
}

// Do implements policy.Policy: it waits for the request's turn, sends it and learns from
// the answer.
func (g *Gate) Do(req *policy.Request) (*http.Response, error) {
	if err := g.Wait(req.Raw().Context()); err != nil {
		return nil, err
	}
	resp, err := req.Next()
	if err == nil {
		g.Observe(resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests)
	}
	return resp, err
}

// Wait blocks until the next request may start, or until ctx ends (its error). A request
// that gives up returns its place, and a limit lifted meanwhile lets it start at once.
func (g *Gate) Wait(ctx context.Context) error {
	d, epoch := g.reserve()
	for d > 0 {
		step := min(d, waitStep)
		t := time.NewTimer(step)
		select {
		case <-ctx.Done():
			t.Stop()
			g.unreserve(epoch)
			return ctx.Err()
		case <-t.C:
		}
		d -= step
		if g.lifted(epoch) {
			break
		}
	}
	return ctx.Err()
}

// waitStep is how often a waiting request looks whether the limit was lifted.
const waitStep = 250 * time.Millisecond

// reserve takes the next start slot and returns how long to wait for it, and the epoch of
// the limit it was taken under.
func (g *Gate) reserve() (time.Duration, int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	g.liftIfQuiet(now)
	g.sent = append(recent(g.sent, now), now)
	if g.rate == 0 {
		return 0, g.epoch
	}
	at := now
	if g.slot.After(now) {
		at = g.slot
	}
	g.slot = at.Add(g.interval())
	return at.Sub(now), g.epoch
}

// unreserve gives back a slot whose request gave up.
func (g *Gate) unreserve(epoch int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if epoch == g.epoch && g.rate > 0 {
		if s := g.slot.Add(-g.interval()); s.After(g.now()) {
			g.slot = s
		}
	}
}

// lifted reports whether the limit of epoch was lifted since.
func (g *Gate) lifted(epoch int) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.liftIfQuiet(g.now())
	return g.epoch != epoch
}

func (g *Gate) interval() time.Duration { return time.Duration(float64(time.Second) / g.rate) }

// liftIfQuiet lifts the limit once no answer was throttled for Quiet.
func (g *Gate) liftIfQuiet(now time.Time) {
	if g.rate > 0 && now.Sub(g.lastThrottled) > g.quiet {
		g.rate, g.slot, g.lastShare = 0, time.Time{}, 0
		g.epoch++
	}
}

// Observe records one answer: throttled (503, 429) or accepted.
func (g *Gate) Observe(throttled bool) {
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
		return
	}
	g.lastThrottled = now
	g.refused = append(g.refused, now)
	share := float64(len(g.refused)) / float64(len(g.refused)+len(g.accepted))
	if len(g.refused) < minRefused || share <= g.threshold {
		return // scattered refusals (or too few to judge): not a limit the client exceeds
	}
	if !g.lastCut.IsZero() && now.Sub(g.lastCut) < g.cutInterval {
		return
	}
	if g.rate > 0 && share >= 0.8*g.lastShare {
		// The last cut did not lower the share refused: these refusals do not answer to
		// this client's rate (a hot partition among cold ones, another client's load).
		// Cutting again would only starve the requests that do get through.
		return
	}
	g.lastCut, g.lastShare = now, share
	var base float64
	if g.rate == 0 {
		// The first cut of an episode: refusals come back before the accepted answers, so
		// judge by what was offered over the last two seconds.
		if sent := recent(g.sent, now); len(sent) > 0 {
			base = float64(len(sent)) / max(now.Sub(sent[0]).Seconds(), 1)
		}
	} else {
		base = min(float64(len(g.accepted))/2, g.rate) // never raise the limit on a refusal
	}
	g.rate = max(g.cut*base, 1)
	g.epoch++
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
