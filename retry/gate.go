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

// Gate is the send rates of a client: the answer to sustained throttling. Each
// operation's backoff (Policy) calms that operation only; the others, and new ones, keep
// offering the client's whole concurrency, so that under a partition's or an account's
// limit the client sends far more requests than the service admits (a retry storm:
// "Designing a scalable partitioning strategy" asks clients to back off, not to retry
// harder).
//
// It keeps one rate per scope (see Scope). The client's rate answers the account's limit
// (and any throttled answer whose scope is unknown): it limits nothing until more than
// Threshold of the service's answers over the last two seconds (and at least five of
// them) are throttled; then, at most once per CutInterval, it limits the client to Cut
// times the requests the service accepted per second over those two seconds, raises that
// limit by Raise on every accepted answer, and lifts it after Quiet without a throttled
// answer. Each partition's rate answers that partition's "The server is busy.". It is cut
// from the first such answer (a partition serves a few requests per second, too few to
// wait for five), at most once per CutInterval: to PartitionCut times the requests the
// partition accepted per second so far in the episode (over at least a second), then
// PartitionCut times the limit that met the refusal; each cut holds the partition's next
// request a whole interval (its bucket is empty); it rises by PartitionRaise per accepted
// answer and is lifted after Quiet. Within one Schedule, the rate a partition was cut to
// also paces the Schedule's other partitions that have no rate yet (their tasks are
// alike and partitions share one target), so that each does not meet its limit once
// before its rate is known. A request waits for its partition's turn, then for the
// client's; a busy partition therefore slows its own requests only, and cold
// partitions keep their pace while a hot one is throttled.
//
// A request's partition is its context's mark (WithPartition; Schedule marks its tasks,
// whose requests in flight per partition are bounded, which the partition's estimate
// needs); an unmarked request is judged at the client's scope only, as are all
// requests of a client that many writers share without a bound per partition. A request
// that gives up while it waits returns its slots.
//
// Known limits: a client idle long after its first request gets a deeper first cut than a
// new one; a request already waiting does not notice a lift; the Gate tracks at most
// 4,096 partitions at once (beyond, and until idle ones are dropped, a new partition is
// judged at the client's scope); a partition's rate counts requests, not entities, so a
// mix of single-entity requests and transactions in one partition is paced by the mix it
// saw; a partition paced at another's rate keeps it (rising per accepted answer) until
// Quiet after it was learnt, for every request of the client to that partition.
//
// Install it as a policy of the Azure SDK client (account.NewClients and
// repo.TableClientOptions do, one Gate per client): it waits before each attempt, so a
// request held by the Gate is never sent late into a context that has ended. A Gate is
// safe for concurrent use.
//
// It records how long it held requests, the throttled answers it saw and its cuts as
// OpenTelemetry metrics (MetricGateWait, MetricGateThrottled, MetricGateCuts). The
// metrics never carry a partition key (it may hold an indexed value).
type Gate struct {
	limiter            // the client's scope
	partCut, partRaise float64
	metrics            *instruments

	pmu   sync.Mutex
	parts map[string]*limiter
}

// limiter is one adaptive send rate: the client's, or one partition's.
type limiter struct {
	cut, raise  float64
	threshold   float64
	minRefused  int
	cutInterval time.Duration
	quiet       time.Duration
	now         func() time.Time
	// partitionScope is set for a partition's limiter: its early cut is taken from its
	// accepted answers, and a cut pushes its next slot a whole interval away.
	partitionScope bool

	mu       sync.Mutex
	rate     float64     // requests/s; 0 = no limit
	slot     time.Time   // when the next request may start
	lastCut  time.Time   // the last throttled answer that cut the rate
	lastBusy time.Time   // the last throttled answer
	lastUsed time.Time   // the last request or answer (to drop idle partitions)
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
	// the Gate cuts the client's rate: a few 503s among many accepted answers are the
	// service moving a partition, not a limit the client exceeds. Defaults to 0.2.
	Threshold float64
	// PartitionCut is Cut for a busy partition's own rate. It is gentler than Cut because
	// what it is taken of is close to the partition's true rate: at the first cut, what
	// the partition alone accepted; later, the limit that met the refusal. Defaults to 0.9.
	PartitionCut float64
	// PartitionRaise is Raise for a busy partition's own rate. After a cut to
	// PartitionCut of the limit that met the refusal, about ten accepted answers bring
	// the rate back, so that a busy partition is refused about once per ten requests
	// (measured in BENCHMARKS.md, "Throttled bulk writes"). Defaults to 1.01.
	PartitionRaise float64
	// MeterProvider receives the Gate's metrics (MetricGateWait, MetricGateThrottled,
	// MetricGateCuts). Defaults to the global provider (otel.GetMeterProvider); a
	// noop.NewMeterProvider() turns them off.
	MeterProvider metric.MeterProvider
}

// NewGate returns a Gate with opts (nil: the defaults).
//
// Errors: an *InvalidInputError (ErrInvalidInput) for a Cut or PartitionCut outside
// (0, 1), a Raise or PartitionRaise below 1 or infinite, a Threshold outside [0, 1), NaN in
// any of them, or a negative duration.
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
	if o.PartitionCut == 0 {
		o.PartitionCut = 0.9
	}
	if o.PartitionRaise == 0 {
		o.PartitionRaise = 1.01
	}
	// Each check is written as the negation of what is valid, so that NaN (for which
	// every comparison is false) is refused too: a NaN Cut would make the limit NaN and
	// the Gate limit nothing under throttling.
	switch {
	case !(o.Cut > 0 && o.Cut < 1):
		return nil, invalidGate("Cut", "must be between 0 and 1")
	case !(o.Raise >= 1 && o.Raise <= math.MaxFloat64):
		return nil, invalidGate("Raise", "must be at least 1 and finite")
	case !(o.PartitionCut > 0 && o.PartitionCut < 1):
		return nil, invalidGate("PartitionCut", "must be between 0 and 1")
	case !(o.PartitionRaise >= 1 && o.PartitionRaise <= math.MaxFloat64):
		return nil, invalidGate("PartitionRaise", "must be at least 1 and finite")
	case !(o.Threshold >= 0 && o.Threshold < 1):
		return nil, invalidGate("Threshold", "must be between 0 and 1")
	case !(o.CutInterval >= 0 && o.Quiet >= 0):
		return nil, invalidGate("CutInterval/Quiet", "must not be negative")
	}
	return &Gate{
		limiter: limiter{cut: o.Cut, raise: o.Raise, threshold: o.Threshold, minRefused: minRefused,
			cutInterval: o.CutInterval, quiet: o.Quiet, now: time.Now},
		partCut: o.PartitionCut, partRaise: o.PartitionRaise,
		metrics: instrumentsOf(o.MeterProvider),
		parts:   map[string]*limiter{},
	}, nil
}

// Do implements policy.Policy: it waits for the request's turn in its partition and in
// the client, sends it and learns from the answer.
func (g *Gate) Do(req *policy.Request) (*http.Response, error) {
	ctx, host := req.Raw().Context(), req.Raw().URL.Hostname()
	var part *limiter
	key, ok := PartitionOf(ctx)
	if ok {
		part = g.partition(key)
	}
	h := hintsOf(ctx)
	if h != nil && part != nil {
		h.pace(part)
	}
	held, err := g.waitBoth(ctx, part)
	g.metrics.gate(ctx, host, held, false, false)
	if err != nil {
		return nil, err
	}
	if h != nil && part != nil {
		h.heldUntil(key, part.nextFree())
		defer func() { h.heldUntil(key, part.nextFree()) }() // and after the answer, which may cut
	}
	resp, err := req.Next()
	if err == nil {
		scope := responseScope(resp)
		var cut bool
		switch {
		case scope == ScopeNone:
			g.limiter.observe(false)
			if part != nil {
				part.observe(false)
			}
		case scope == ScopePartition && part != nil:
			if cut = part.observe(true); cut && h != nil {
				h.learnt(part)
			}
		default:
			cut = g.limiter.observe(true)
		}
		g.metrics.gate(ctx, host, 0, scope != ScopeNone, cut)
	}
	return resp, err
}

// waitBoth waits for the partition's turn (part may be nil), then for the client's, and
// returns how long it held the request. A request that gives up returns the slot it took.
func (g *Gate) waitBoth(ctx context.Context, part *limiter) (time.Duration, error) {
	var held time.Duration
	if part != nil {
		d, err := part.wait(ctx)
		held += d
		if err != nil {
			return held, err
		}
	}
	d, err := g.limiter.wait(ctx)
	held += d
	if err != nil && part != nil {
		part.unreserve()
	}
	return held, err
}

// maxPartitions bounds the partitions a Gate keeps a rate for at once.
const maxPartitions = 4096

// partition returns the limiter of partition key, made on first use; nil when the Gate
// already tracks maxPartitions partitions that are not idle.
func (g *Gate) partition(key string) *limiter {
	g.pmu.Lock()
	defer g.pmu.Unlock()
	if l := g.parts[key]; l != nil {
		return l
	}
	now := g.limiter.now()
	if len(g.parts) >= maxPartitions {
		for k, l := range g.parts {
			if l.idle(now) {
				delete(g.parts, k)
			}
		}
		if len(g.parts) >= maxPartitions {
			return nil
		}
	}
	l := &limiter{cut: g.partCut, raise: g.partRaise, threshold: 0, minRefused: 1, partitionScope: true,
		cutInterval: g.limiter.cutInterval, quiet: g.limiter.quiet, now: g.limiter.now, lastUsed: now}
	g.parts[key] = l
	return l
}

// PartitionRate returns the current limit of partition's own rate in requests per second,
// 0 when there is none.
func (g *Gate) PartitionRate(partition string) float64 {
	g.pmu.Lock()
	l := g.parts[partition]
	g.pmu.Unlock()
	if l == nil {
		return 0
	}
	return l.currentRate()
}

// Wait blocks until the client's next request may start, or until ctx ends (its error).
// It does not wait for a partition's turn.
func (g *Gate) Wait(ctx context.Context) error {
	held, err := g.limiter.wait(ctx)
	g.metrics.gate(ctx, "", held, false, false)
	return err
}

// wait waits for the limiter's next slot and returns how long it held the request.
func (g *limiter) wait(ctx context.Context) (time.Duration, error) {
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
func (g *limiter) unreserve() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.rate > 0 {
		if s := g.slot.Add(-time.Duration(float64(time.Second) / g.rate)); s.After(g.now()) {
			g.slot = s
		}
	}
}

// reserve takes the next start slot and returns how long to wait for it.
func (g *limiter) reserve() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	g.lastUsed = now
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

// Observe records one answer at the client's scope: throttled (503, 429) or accepted.
func (g *Gate) Observe(throttled bool) {
	g.metrics.gate(context.Background(), "", 0, throttled, g.limiter.observe(throttled))
}

// observe records one answer and reports whether it cut the rate.
func (g *limiter) observe(throttled bool) (cut bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	g.lastUsed = now
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
	if len(g.refused) < g.minRefused || float64(len(g.refused)) <= g.threshold*float64(len(g.refused)+len(g.accepted)) {
		return false // scattered refusals (or too few to judge): not a limit the client exceeds
	}
	if !g.lastCut.IsZero() && now.Sub(g.lastCut) < g.cutInterval {
		return false
	}
	g.lastCut = now
	base := float64(len(g.accepted)) / 2 // accepted per second over the last two seconds
	if since := now.Sub(g.first); since < 2*time.Second {
		// Early in an episode a client's refusals come back before its accepted answers:
		// judge by what was sent so far, over at least a second. A partition has few
		// requests in flight, so its accepted answers are already in: what it accepted
		// is its rate, what was sent includes the refusals.
		n := g.sent
		if g.partitionScope {
			n = max(len(g.accepted), 1) // the first refusals may beat the first acceptance back
		}
		base = float64(n) / max(since.Seconds(), 1)
	}
	switch {
	case g.rate > 0 && g.partitionScope:
		// A partition answers about one transaction a second at a tenth of its target:
		// two seconds hold too few answers to measure its rate, and the gaps a cut leaves
		// would make each cut deeper than the last. The limit that met the refusal is the
		// better measure.
		base = g.rate
	case g.rate > 0:
		base = min(base, g.rate) // never raise the limit on a throttled answer
	}
	g.rate = max(g.cut*base, g.floor())
	if g.partitionScope {
		// The partition's bucket is empty now: the next request (often this one's retry)
		// waits a whole interval instead of meeting the same refusal.
		if next := now.Add(time.Duration(float64(time.Second) / g.rate)); next.After(g.slot) {
			g.slot = next
		}
	}
	return true
}

// floor is the lowest rate a cut sets: one request a second for the client; a fifth of
// that for a partition, since a partition's transactions of 100 entities are admitted
// about once a second at a tenth of its target.
func (g *limiter) floor() float64 {
	if g.partitionScope {
		return 0.2
	}
	return 1
}

// minRefused is the fewest throttled answers in two seconds that can show the client a
// limit: fewer are too few to tell a limit from chance.
const minRefused = 5

// idle reports whether the limiter has nothing to remember: no request or answer for
// longer than its quiet period and the two seconds of its windows.
func (g *limiter) idle(now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return now.Sub(g.lastUsed) > g.quiet+2*time.Second
}

// recent drops the times older than two seconds before now.
func recent(ts []time.Time, now time.Time) []time.Time {
	i := 0
	for i < len(ts) && now.Sub(ts[i]) > 2*time.Second {
		i++
	}
	return ts[i:]
}

// Rate returns the current limit of the client's rate in requests per second, 0 when
// there is none.
func (g *Gate) Rate() float64 { return g.limiter.currentRate() }

// nextFree returns the time before which the limiter holds a new request, zero if it
// would not hold one.
func (g *limiter) nextFree() time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.rate == 0 || !g.slot.After(g.now()) {
		return time.Time{}
	}
	return g.slot
}

func (g *limiter) currentRate() float64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.rate
}

func invalidGate(field, reason string) error {
	return errs.Invalid("retry.GateOptions."+field, "%s", reason)
}
