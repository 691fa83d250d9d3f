package retry

import (
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/logx"
)

// ErrTransient is the sentinel of an operation that kept failing with transient errors
// until the policy gave up. Every *ExhaustedError unwraps to it. It is the same value as
// the SDK's other re-exports of it, so errors.Is works whichever one a caller names.
var ErrTransient = errs.ErrTransient

// The defaults of Policy, for interactive calls (a request handler waiting on a table).
// With them the waits are about 0.3 s, 0.7 s, 1.4 s, 3.1 s, 6.3 s and 10 s (each ±20 %
// of its variable part), about 22 s in all: long enough to ride out the few seconds a
// partition is offline while the service moves it ("Designing a scalable partitioning strategy"), short enough for a caller
// that waits.
const (
	DefaultDelay      = 200 * time.Millisecond // z
	DefaultMinDelay   = 100 * time.Millisecond // zmin
	DefaultMaxDelay   = 10 * time.Second       // zmax
	DefaultMaxRetries = 6
	DefaultMaxElapsed = time.Minute
)

// Off is the value that turns a setting off where Policy says so (-1).
const Off = -1

// Policy configures retries: the backoff formula of "Designing a scalable partitioning strategy", with x the retry number
// (1 for the first retry), z = Delay, zmin = MinDelay and zmax = MaxDelay:
//
//	y = Rand(0.8z, 1.2z) * (2^x - 1)
//	wait = Min(zmin + y, zmax)
//
// The zero value means the defaults: in every field 0 means "the default", and -1 (Off)
// turns the setting off where noted. Other negative values are invalid (see Validate).
// A Policy is a plain value: copy it and change fields freely.
type Policy struct {
	// Delay is z, the default backoff the jitter and the exponent apply to.
	// Defaults to DefaultDelay (200 ms). Off (-1) means 0: every wait is MinDelay, the
	// fixed backoff strategy of "Designing a scalable partitioning strategy".
	Delay time.Duration
	// MinDelay is zmin, added to every wait. Defaults to DefaultMinDelay (100 ms), or to
	// MaxDelay when that is set lower. Off (-1) means 0.
	MinDelay time.Duration
	// MaxDelay is zmax, the longest single wait. Defaults to DefaultMaxDelay (10 s).
	// Off (-1) means no cap (MaxElapsed still applies).
	MaxDelay time.Duration
	// MaxRetries is the number of retries after the first attempt, so fn runs at most
	// MaxRetries+1 times. Defaults to DefaultMaxRetries (6). Off (-1) means no retries.
	MaxRetries int
	// MaxElapsed bounds the time from the first attempt to the start of the last one: no
	// wait starts that would end after it. Defaults to DefaultMaxElapsed (1 min).
	// Off (-1) means no limit (MaxRetries still applies).
	MaxElapsed time.Duration
	// Logger receives one Warn entry per retry. Defaults to zap.NewNop().
	Logger *zap.Logger
	// MeterProvider receives Do's metrics (MetricAttempts, MetricWait). Defaults to the
	// global provider (otel.GetMeterProvider) at the time of each call; a
	// noop.NewMeterProvider() turns them off. Give a comparable value (the SDK's
	// *MeterProvider is a pointer): Policies are compared with ==.
	MeterProvider metric.MeterProvider
}

// BatchPolicy returns the policy of the partitioning article's code sample, for batch jobs
// and queue workers that can afford to wait: z = 30 s (defaultBackoff), zmin = 3 s
// (backoffMin), zmax = 90 s (backoffMax), 5 retries (the sample's retryCount), and at most
// 10 minutes in all. The waits are about 27-39 s, then 75-90 s, then 90 s. Each call
// returns a fresh copy, as Conflict does: there is no shared default to change by accident.
func BatchPolicy() Policy {
	return Policy{
		Delay:      30 * time.Second,
		MinDelay:   3 * time.Second,
		MaxDelay:   90 * time.Second,
		MaxRetries: 5,
		MaxElapsed: 10 * time.Minute,
	}
}

// Conflict returns the policy of optimistic-concurrency loops (see Optimistic): read,
// change, write with If-Match, and on 412 (or a 409 creation race) read again and retry.
// A conflict clears as soon as the winner's write is done, which takes milliseconds, so
// the waits start far below the defaults for transient failures (z = 10 ms, zmin = 2 ms,
// zmax = 500 ms); the jitter spreads the writers that lost together so that they do not
// meet again; and the retries are many (50, within 1 minute), because under contention
// each attempt only has its fair share of winning. Each call returns a fresh copy: there
// is no shared default to change by accident. Complete a caller's policy field by field
// with opts.Conflict.Or(retry.Conflict()).
func Conflict() Policy {
	return Policy{
		Delay:      10 * time.Millisecond,
		MinDelay:   2 * time.Millisecond,
		MaxDelay:   500 * time.Millisecond,
		MaxRetries: 50,
		MaxElapsed: time.Minute,
	}
}

// Or returns p with every zero field (Logger and MeterProvider included) taken from d: the
// way to give a policy from options the defaults of a preset, e.g. opts.Conflict.Or(Conflict()).
func (p Policy) Or(d Policy) Policy {
	if p.Delay == 0 {
		p.Delay = d.Delay
	}
	if p.MinDelay == 0 {
		p.MinDelay = d.MinDelay
	}
	if p.MaxDelay == 0 {
		p.MaxDelay = d.MaxDelay
	}
	if p.MaxRetries == 0 {
		p.MaxRetries = d.MaxRetries
	}
	if p.MaxElapsed == 0 {
		p.MaxElapsed = d.MaxElapsed
	}
	if p.Logger == nil {
		p.Logger = d.Logger
	}
	if p.MeterProvider == nil {
		p.MeterProvider = d.MeterProvider
	}
	return p
}

// NoRetry returns a policy that calls an operation once: Do returns its error as it is, or
// an *ExhaustedError when the error was retryable. Each call returns a fresh copy.
func NoRetry() Policy { return Policy{MaxRetries: Off} }

// WithDefaults returns p with every zero field replaced by its default. Off (-1) and
// invalid values are kept as they are.
func (p Policy) WithDefaults() Policy {
	if p.Delay == 0 {
		p.Delay = DefaultDelay
	}
	if p.MaxDelay == 0 {
		p.MaxDelay = DefaultMaxDelay
	}
	if p.MinDelay == 0 {
		p.MinDelay = DefaultMinDelay
		if p.MaxDelay > 0 && p.MaxDelay < p.MinDelay {
			p.MinDelay = p.MaxDelay
		}
	}
	if p.MaxRetries == 0 {
		p.MaxRetries = DefaultMaxRetries
	}
	if p.MaxElapsed == 0 {
		p.MaxElapsed = DefaultMaxElapsed
	}
	p.Logger = logx.OrNop(p.Logger)
	return p
}

// Validate checks p (before or after WithDefaults).
//
// It returns an *errs.InvalidInputError naming the field when a duration or MaxRetries is
// negative but not Off (-1), or when MinDelay is above MaxDelay. Do calls it first.
func (p Policy) Validate() error {
	for _, f := range []struct {
		name string
		v    time.Duration
	}{
		{"Delay", p.Delay}, {"MinDelay", p.MinDelay}, {"MaxDelay", p.MaxDelay}, {"MaxElapsed", p.MaxElapsed},
	} {
		if f.v < 0 && f.v != Off {
			return errs.Invalid("retry.Policy."+f.name, "must be >= 0 or -1 (off), got %v", f.v)
		}
	}
	if p.MaxRetries < Off {
		return errs.Invalid("retry.Policy.MaxRetries", "must be >= 0 or -1 (off), got %d", p.MaxRetries)
	}
	d := p.WithDefaults()
	if d.MaxDelay > 0 && d.MinDelay > d.MaxDelay {
		return errs.Invalid("retry.Policy.MinDelay", "%v is above MaxDelay %v", d.MinDelay, d.MaxDelay)
	}
	return nil
}
