package bloblog

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/retry"
)

// ErrClosed is returned by Write and Flush after Close.
var ErrClosed = errors.New("bloblog: writer closed")

// Writer buffers log records of one source and appends them to append blobs named
// <source>/YYYY/MM/DD/hhmm/NNNNNN.log. It flushes when FlushBytes are buffered, every
// FlushInterval, on Flush and on Close. It is safe for concurrent use.
//
// Each Writer owns the blobs it creates: it never appends to a blob another writer (or an
// earlier run) created, so several writers, even of one source, never interleave or
// duplicate records. Records are appended in the order their Write calls returned.
type Writer struct {
	container *container.Client
	cname     string
	source    string
	id        string
	opts      Options

	mu      sync.Mutex
	pending map[time.Time]*batch // by period start
	// buffered counts the bytes accepted and not yet stored, those of a flush in progress
	// included: it is what MaxBuffered bounds.
	buffered int
	space    chan struct{} // closed when a flush stores bytes (room for blocked writers)
	closed   bool

	flushMu sync.Mutex                // one flush at a time
	blobs   map[time.Time]*appendable // the current blob of each period (under flushMu)

	kick     chan struct{}
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once

	stats struct {
		records, bytes, flushes, appends, created, failures atomic.Int64
	}
}

// batch is the buffered records of one period.
type batch struct {
	data     []byte
	min, max time.Time
}

// appendable is a writer's current blob of one period.
type appendable struct {
	seq        int
	name       string
	size       int64
	blocks     int
	start, end time.Time // the metadata's range: a superset of the records' times
	// unresolved is the length of an append whose outcome is unknown (a failure after the
	// request may have reached the service). Its bytes lead the period's buffer; the next
	// flush checks the blob's size to tell whether they are stored.
	unresolved int
	full       bool // start the next blob before appending
}

// NewWriter returns a Writer of source's records into the container (which must exist;
// see CreateContainer). It starts the goroutine of the interval flush; stop it with Close.
// It sends nothing.
//
// Errors: errs.ErrInvalidInput for a nil client, a bad container or source name, or invalid
// options.
func NewWriter(blobs *azblob.Client, containerName, source string, opts *Options) (*Writer, error) {
	if blobs == nil {
		return nil, errs.Invalid("blob client", "is nil")
	}
	if err := codec.ValidateContainerName(containerName); err != nil {
		return nil, err
	}
	if err := validateSource(source); err != nil {
		return nil, err
	}
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	w := &Writer{
		container: blobs.ServiceClient().NewContainerClient(containerName), cname: containerName,
		source: source, id: hex.EncodeToString(id[:]), opts: o,
		pending: map[time.Time]*batch{}, space: make(chan struct{}), blobs: map[time.Time]*appendable{},
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	go w.loop()
	return w, nil
}

// CreateContainer creates the container of the log blobs; an existing one is success.
//
// Errors: errs.ErrInvalidInput (name), errs.ErrTransient, *errs.ServiceError.
func CreateContainer(ctx context.Context, blobs *azblob.Client, containerName string, policy retry.Policy) error {
	if err := codec.ValidateContainerName(containerName); err != nil {
		return err
	}
	c := blobs.ServiceClient().NewContainerClient(containerName)
	return retry.Do(ctx, policy, retry.Op{Name: "create container", Resource: containerName}, func(ctx context.Context, _ int) error {
		_, err := c.Create(ctx, nil)
		if err = errs.Wrap(err, "create container", containerName, "", ""); errors.Is(err, errs.ErrAlreadyExists) {
			return nil
		}
		return err
	})
}

// Write buffers r. It returns at once unless MaxBuffered bytes are already buffered; then
// it waits for a flush to make room, or for ctx. A record is safe once Flush or Close has
// returned nil.
//
// Errors: errs.ErrInvalidInput (a zero or out-of-range time, a record whose line exceeds
// MaxAppendBytes; nothing buffered), ErrClosed, ctx's error.
func (w *Writer) Write(ctx context.Context, r Record) error {
	if err := checkTime("Record.Time", r.Time); err != nil {
		return err
	}
	line := appendLine(make([]byte, 0, timeLen+2+len(r.Data)), r)
	if len(line) > MaxAppendBytes {
		return errs.TooLarge("Record.Data", "record line larger than one append block", len(line), MaxAppendBytes)
	}
	start := periodStart(r.Time, w.opts.Period)
	for {
		w.mu.Lock()
		if w.closed {
			w.mu.Unlock()
			return ErrClosed
		}
		if w.buffered == 0 || w.buffered+len(line) <= w.opts.MaxBuffered {
			b := w.pending[start]
			if b == nil {
				b = &batch{min: r.Time, max: r.Time}
				w.pending[start] = b
			}
			b.data = append(b.data, line...)
			if r.Time.Before(b.min) {
				b.min = r.Time
			}
			if r.Time.After(b.max) {
				b.max = r.Time
			}
			w.buffered += len(line)
			full := w.buffered >= w.opts.FlushBytes
			w.mu.Unlock()
			w.stats.records.Add(1)
			if full {
				w.signal()
			}
			return nil
		}
		space := w.space
		w.mu.Unlock()
		w.signal()
		select {
		case <-space:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (w *Writer) signal() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// loop runs the size- and interval-triggered flushes until Close.
func (w *Writer) loop() {
	defer close(w.done)
	var tick <-chan time.Time
	if w.opts.FlushInterval > 0 {
		t := time.NewTicker(w.opts.FlushInterval)
		defer t.Stop()
		tick = t.C
	}
	// After a failed flush the next one waits for a jittered, growing delay (the policy's),
	// so that writers blocked on a full buffer do not hammer a failing service.
	backoff := w.opts.Retry.NewBackOff()
	again := false // a failed flush left records: retry after the delay without a signal
	for {
		if !again {
			select {
			case <-w.stop:
				return
			case <-w.kick:
			case <-tick:
			}
		}
		again = false
		err := w.flush(context.Background())
		if err == nil {
			backoff.Reset()
			continue
		}
		// The records stay buffered; the next flush tries again. Flush and Close return such
		// errors to their callers; this one has none, so it is logged.
		w.opts.Logger.Warn("bloblog: background flush failed; records kept for the next flush",
			zap.String("container", w.cname), zap.String("source", w.source), zap.Error(err))
		d := backoff.NextBackOff()
		if d < 0 { // the policy is exhausted: keep trying at its longest wait
			backoff.Reset()
			d = w.opts.Retry.MaxDelay
			if d <= 0 {
				d = retry.DefaultMaxDelay
			}
		}
		t := time.NewTimer(d)
		select {
		case <-w.stop:
			t.Stop()
			return
		case <-t.C:
		}
		again = true
	}
}

// Flush appends every buffered record to its blob and returns when they are stored.
//
// Errors: ErrClosed, errs.ErrTransient (records stay buffered for the next flush),
// *errs.ServiceError (e.g. errs.ErrNotFound when the container does not exist), ctx's error.
func (w *Writer) Flush(ctx context.Context) error {
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if closed {
		return ErrClosed
	}
	return w.flush(ctx)
}

// Close stops accepting records, stops the interval flush and flushes every buffered
// record: no record whose Write returned nil is lost on a graceful close. If the final
// flush fails, Close returns its error and keeps the records; calling Close again retries.
//
// Errors: as Flush (never ErrClosed).
func (w *Writer) Close(ctx context.Context) error {
	w.mu.Lock()
	w.closed = true
	close(w.space) // wake blocked writers: they now see closed
	w.space = make(chan struct{})
	w.mu.Unlock()
	w.stopOnce.Do(func() { close(w.stop) })
	select {
	case <-w.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	return w.flush(ctx)
}

// restore puts unstored batches back in front of what was buffered since.
func (w *Writer) restore(starts []time.Time, taken map[time.Time]*batch) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range starts {
		old := taken[s]
		if len(old.data) == 0 {
			continue
		}
		if cur := w.pending[s]; cur != nil {
			old.data = append(old.data, cur.data...)
			if cur.min.Before(old.min) {
				old.min = cur.min
			}
			if cur.max.After(old.max) {
				old.max = cur.max
			}
		}
		w.pending[s] = old
	}
}

// stored releases n stored bytes from the buffer and wakes blocked writers.
func (w *Writer) stored(n int) {
	if n == 0 {
		return
	}
	w.mu.Lock()
	w.buffered -= n
	close(w.space)
	w.space = make(chan struct{})
	w.mu.Unlock()
}

// Stats counts a Writer's work since NewWriter.
type Stats struct {
	// Records counts records accepted by Write; Bytes the bytes of their lines stored.
	Records, Bytes int64
	// Flushes counts flushes that had records; Appends the append requests that stored a
	// block; Blobs the blobs created.
	Flushes, Appends, Blobs int64
	// FailedFlushes counts flushes that kept records for later.
	FailedFlushes int64
	// Buffered is the size of the records waiting for a flush.
	Buffered int
}

// Stats returns a snapshot of the counters.
func (w *Writer) Stats() Stats {
	w.mu.Lock()
	buffered := w.buffered
	w.mu.Unlock()
	return Stats{
		Records: w.stats.records.Load(), Bytes: w.stats.bytes.Load(),
		Flushes: w.stats.flushes.Load(), Appends: w.stats.appends.Load(), Blobs: w.stats.created.Load(),
		FailedFlushes: w.stats.failures.Load(), Buffered: buffered,
	}
}

// prune forgets the blobs of periods well before the newest one written: records for them
// are rare, and a later one simply starts a new blob there.
func (w *Writer) prune(newest time.Time) {
	for s, ab := range w.blobs {
		if ab.unresolved == 0 && s.Before(newest.Add(-2*w.opts.Period)) {
			delete(w.blobs, s)
		}
	}
}
