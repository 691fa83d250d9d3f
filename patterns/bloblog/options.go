package bloblog

import (
	"time"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/logx"
	"github.com/tablepatterns/tablepatterns/retry"
	"go.uber.org/zap"
)

// Service limits and defaults.
const (
	// MaxAppendBytes is the largest block one append sends (the service accepts 4 MiB per
	// Append Block on every API version; newer versions accept up to 100 MiB).
	MaxAppendBytes = 4 << 20
	// MaxBlocks is the number of blocks an append blob holds at most.
	MaxBlocks = 50000
	// DefaultPeriod is the default time span of one blob directory (hhmm), one hour as in
	// Storage Analytics.
	DefaultPeriod = time.Hour
	// DefaultFlushBytes is the default buffered size that triggers a flush.
	DefaultFlushBytes = 1 << 20
	// DefaultFlushInterval is the default longest time a record waits in the buffer.
	DefaultFlushInterval = 15 * time.Second
	// DefaultMaxBuffered is the default buffered size at which Write blocks.
	DefaultMaxBuffered = 16 << 20
	// DefaultMaxBlobBytes is the default size at which a writer starts the period's next blob.
	DefaultMaxBlobBytes = 64 << 20
)

// Options configures a Writer. The zero value (or nil) gives the documented defaults.
type Options struct {
	// Period is the time span of one blob directory <source>/YYYY/MM/DD/hhmm/: a whole
	// number of minutes that divides a day. Readers must use the same. Defaults to
	// DefaultPeriod (1 hour).
	Period time.Duration
	// FlushBytes starts a flush when this many bytes of records are buffered. Defaults to
	// DefaultFlushBytes (1 MiB); at most MaxAppendBytes.
	FlushBytes int
	// FlushInterval flushes the buffer at least this often. Defaults to
	// DefaultFlushInterval (15 s); -1 flushes only on size, Flush and Close.
	FlushInterval time.Duration
	// MaxBuffered is the buffered size at which Write blocks until a flush makes room
	// (backpressure rather than unbounded memory). Defaults to DefaultMaxBuffered (16 MiB);
	// at least FlushBytes.
	MaxBuffered int
	// MaxBlobBytes is the size after which the writer starts the period's next blob
	// (NNNNNN+1). Defaults to DefaultMaxBlobBytes (64 MiB).
	MaxBlobBytes int64
	// Retry is the policy for transient failures of each request. Defaults to retry's
	// defaults.
	Retry retry.Policy
	// Logger receives background flush failures and retry logs. Defaults to none (a
	// no-op logger). A blob log has no table to take a logger from.
	Logger *zap.Logger
}

func (o *Options) withDefaults() Options {
	var out Options
	if o != nil {
		out = *o
	}
	if out.Period == 0 {
		out.Period = DefaultPeriod
	}
	if out.FlushBytes == 0 {
		out.FlushBytes = DefaultFlushBytes
	}
	if out.FlushInterval == 0 {
		out.FlushInterval = DefaultFlushInterval
	}
	if out.MaxBuffered == 0 {
		out.MaxBuffered = max(DefaultMaxBuffered, out.FlushBytes)
	}
	if out.MaxBlobBytes == 0 {
		out.MaxBlobBytes = DefaultMaxBlobBytes
	}
	out.Logger = logx.OrNop(out.Logger)
	out.Retry = out.Retry.Or(retry.Policy{Logger: out.Logger}).WithDefaults()
	return out
}

func (o Options) validate() error {
	if err := validatePeriod("Options.Period", o.Period); err != nil {
		return err
	}
	switch {
	case o.FlushBytes < 1 || o.FlushBytes > MaxAppendBytes:
		return errs.Invalid("Options.FlushBytes", "must be 1 to %d, got %d", MaxAppendBytes, o.FlushBytes)
	case o.FlushInterval < -1:
		return errs.Invalid("Options.FlushInterval", "must be positive, 0 (default) or -1 (off), got %v", o.FlushInterval)
	case o.MaxBuffered < o.FlushBytes:
		return errs.Invalid("Options.MaxBuffered", "must be at least FlushBytes (%d), got %d", o.FlushBytes, o.MaxBuffered)
	case o.MaxBlobBytes < 1:
		return errs.Invalid("Options.MaxBlobBytes", "must be positive, got %d", o.MaxBlobBytes)
	}
	return o.Retry.Validate()
}
