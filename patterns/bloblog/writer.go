package bloblog

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/appendblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/logx"
	"github.com/tablepatterns/tablepatterns/retry"
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

// Metadata names of a log blob (lowercase: Azurite lowercases names, the service keeps them).
const (
	metaStart   = "starttime"
	metaEnd     = "endtime"
	metaWriter  = "writer"
	metaVersion = "logversion"
	logVersion  = "1.0"
)

// ErrClosed is returned by Write and Flush after Close.
var ErrClosed = errors.New("bloblog: writer closed")

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

// flush appends the buffered records, period by period in time order. What could not be
// stored goes back to the front of its period's buffer.
func (w *Writer) flush(ctx context.Context) error {
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	w.mu.Lock()
	taken := w.pending
	w.pending = map[time.Time]*batch{}
	w.mu.Unlock()
	if len(taken) == 0 {
		return nil
	}
	w.stats.flushes.Add(1)
	starts := make([]time.Time, 0, len(taken))
	for s := range taken {
		starts = append(starts, s)
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
	var err error
	for i, s := range starts {
		b := taken[s]
		var n int
		n, err = w.appendPeriod(ctx, s, b)
		b.data = b.data[n:]
		w.stored(n)
		if err != nil {
			w.restore(starts[i:], taken)
			w.stats.failures.Add(1)
			return err
		}
	}
	return nil
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

// appendPeriod appends b's records to the period's blobs, in blocks of at most
// MaxAppendBytes cut at line ends, starting new blobs as they fill. It returns how many
// bytes of b.data are stored.
func (w *Writer) appendPeriod(ctx context.Context, start time.Time, b *batch) (int, error) {
	done := 0
	for done < len(b.data) {
		ab, err := w.current(ctx, start, b)
		if err != nil {
			return done, err
		}
		if ab.unresolved > 0 {
			// An append of an earlier flush failed ambiguously; its bytes lead b.data.
			st, err := w.probe(ctx, ab, ab.unresolved)
			if err != nil {
				return done, err
			}
			switch st {
			case stored:
				ab.size += int64(ab.unresolved)
				ab.blocks++
				w.stats.appends.Add(1)
				w.stats.bytes.Add(int64(ab.unresolved))
				done += ab.unresolved
			case moved:
				ab.full = true
			}
			ab.unresolved = 0
			continue
		}
		room := min(int64(MaxAppendBytes), w.opts.MaxBlobBytes-ab.size)
		block := b.data[done:]
		if int64(len(block)) > room {
			block = block[:room]
			cut := bytes.LastIndexByte(block, '\n')
			if cut < 0 {
				if ab.size == 0 {
					// One record larger than MaxBlobBytes: it gets a blob of its own.
					block = b.data[done : done+bytes.IndexByte(b.data[done:], '\n')+1]
				} else {
					ab.full = true
					continue
				}
			} else {
				block = block[:cut+1]
			}
		}
		if err := w.cover(ctx, ab, b.min, b.max); err != nil {
			return done, err
		}
		if err := w.appendBlock(ctx, ab, block); errors.Is(err, errMoved) {
			continue // on to the period's next blob
		} else if err != nil {
			return done, err
		}
		done += len(block)
		w.stats.bytes.Add(int64(len(block)))
		if ab.size >= w.opts.MaxBlobBytes || ab.blocks >= MaxBlocks {
			ab.full = true
		}
	}
	return done, nil
}

// current returns the period's blob to append to, creating the next one when there is none
// yet or the current one is full.
func (w *Writer) current(ctx context.Context, start time.Time, b *batch) (*appendable, error) {
	ab := w.blobs[start]
	if ab != nil && !ab.full {
		return ab, nil
	}
	seq := 1
	if ab != nil {
		seq = ab.seq + 1
	} else {
		last, err := w.lastSeq(ctx, start)
		if err != nil {
			return nil, err
		}
		seq = last + 1
	}
	for ; seq <= MaxSequence; seq++ {
		name := blobName(w.source, start, seq)
		created, err := w.create(ctx, name, b.min, b.max)
		if err != nil {
			return nil, err
		}
		if created {
			ab = &appendable{seq: seq, name: name, start: b.min, end: b.max}
			w.blobs[start] = ab
			w.stats.created.Add(1)
			w.prune(start)
			return ab, nil
		}
	}
	return nil, errs.Invalid("period", "%s already holds %d blobs", periodDir(w.source, start), MaxSequence)
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

// lastSeq lists the period's directory for the highest blob number in use.
func (w *Writer) lastSeq(ctx context.Context, start time.Time) (int, error) {
	dir := periodDir(w.source, start)
	last := 0
	var marker *string
	for {
		op := retry.Op{Name: "list blobs", Resource: w.cname + "/" + dir}
		page, err := retry.DoValue(ctx, w.opts.Retry, op, func(ctx context.Context, _ int) (container.ListBlobsFlatResponse, error) {
			p := w.container.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &dir, Marker: marker})
			r, err := p.NextPage(ctx)
			return r, errs.Wrap(err, op.Name, op.Resource, "", "")
		})
		if err != nil {
			return 0, err
		}
		if page.Segment != nil {
			for _, it := range page.Segment.BlobItems {
				if it != nil && it.Name != nil {
					if n, ok := parseSeq(dir, *it.Name); ok && n > last {
						last = n
					}
				}
			}
		}
		if page.NextMarker == nil || *page.NextMarker == "" {
			return last, nil
		}
		marker = page.NextMarker
	}
}

// create creates an empty append blob if the name is free. It reports false when another
// writer holds the name. A retry after a lost response finds the blob it created: the
// writer id in the metadata tells.
func (w *Writer) create(ctx context.Context, name string, first, last time.Time) (bool, error) {
	c := w.container.NewAppendBlobClient(name)
	any := azcore.ETagAny
	opts := &appendblob.CreateOptions{
		Metadata:         w.metadata(first, last),
		HTTPHeaders:      &blob.HTTPHeaders{BlobContentType: ptr("text/plain; charset=utf-8")},
		AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: &any}},
	}
	op := retry.Op{Name: "create append blob", Resource: w.cname + "/" + name}
	created := false
	err := retry.Do(ctx, w.opts.Retry, op, func(ctx context.Context, attempt int) error {
		_, err := c.Create(ctx, opts)
		err = errs.Wrap(err, op.Name, op.Resource, "", "")
		if err == nil {
			created = true
			return nil
		}
		if !errors.Is(err, errs.ErrAlreadyExists) && !isConditionNotMet(err) {
			return err
		}
		if attempt == 1 {
			return nil // someone else's
		}
		props, perr := c.GetProperties(ctx, nil)
		if perr != nil {
			return errs.Wrap(perr, "get blob properties", op.Resource, "", "")
		}
		created = metaValue(props.Metadata, metaWriter) == w.id
		return nil
	})
	return created, err
}

// cover widens the blob's metadata range, before the append, to include [first, last]: the
// metadata is always a superset of the times in the blob, so a reader that skips blobs by
// their metadata never misses a record, even after a crash between the two requests.
func (w *Writer) cover(ctx context.Context, ab *appendable, first, last time.Time) error {
	if !first.Before(ab.start) && !last.After(ab.end) {
		return nil
	}
	start, end := ab.start, ab.end
	if first.Before(start) {
		start = first
	}
	if last.After(end) {
		end = last
	}
	op := retry.Op{Name: "set blob metadata", Resource: w.cname + "/" + ab.name}
	c := w.container.NewBlobClient(ab.name)
	err := retry.Do(ctx, w.opts.Retry, op, func(ctx context.Context, _ int) error {
		_, err := c.SetMetadata(ctx, w.metadata(start, end), nil)
		return errs.Wrap(err, op.Name, op.Resource, "", "")
	})
	if err == nil {
		ab.start, ab.end = start, end
	}
	return err
}

// appendBlock appends block at the blob's known end. The append is conditional on that
// position, so a retry after a lost response cannot store the block twice: it fails with
// a precondition, and the blob's size then tells whether the first try was stored.
// It returns errMoved when the blob grew behind the writer's back (it is then marked full).
func (w *Writer) appendBlock(ctx context.Context, ab *appendable, block []byte) error {
	c := w.container.NewAppendBlobClient(ab.name)
	pos := ab.size
	op := retry.Op{Name: "append block", Resource: w.cname + "/" + ab.name}
	err := retry.Do(ctx, w.opts.Retry, op, func(ctx context.Context, _ int) error {
		_, err := c.AppendBlock(ctx, streaming.NopCloser(bytes.NewReader(block)), &appendblob.AppendBlockOptions{
			AppendPositionAccessConditions: &appendblob.AppendPositionAccessConditions{AppendPosition: &pos},
		})
		err = errs.Wrap(err, op.Name, op.Resource, "", "")
		if !isConditionNotMet(err) {
			return err
		}
		switch st, err := w.probe(ctx, ab, len(block)); {
		case err != nil:
			return err
		case st == stored:
			return nil // an earlier try of ours, whose response was lost
		default:
			return errMoved
		}
	})
	switch {
	case err == nil:
		ab.size += int64(len(block))
		ab.blocks++
		w.stats.appends.Add(1)
		return nil
	case errors.Is(err, errMoved):
		ab.full = true // never write behind someone else
		return errMoved
	}
	// The last try may have been stored: the next flush checks before anything else.
	ab.unresolved = len(block)
	return err
}

// errMoved is an append refused because the blob grew behind the writer's back.
var errMoved = errors.New("bloblog: the append blob was changed by someone else")

type blockState int

const (
	notStored blockState = iota // the blob ends where the writer thinks
	stored                      // the blob ends just after the block
	moved                       // anything else: someone else appended
)

// probe reads the blob's size to tell whether a block of n bytes appended at the writer's
// known end is stored.
func (w *Writer) probe(ctx context.Context, ab *appendable, n int) (blockState, error) {
	c := w.container.NewBlobClient(ab.name)
	op := retry.Op{Name: "get blob properties", Resource: w.cname + "/" + ab.name}
	props, err := retry.DoValue(ctx, w.opts.Retry, op, func(ctx context.Context, _ int) (blob.GetPropertiesResponse, error) {
		p, err := c.GetProperties(ctx, nil)
		return p, errs.Wrap(err, op.Name, op.Resource, "", "")
	})
	if err != nil {
		return notStored, err
	}
	var size int64
	if props.ContentLength != nil {
		size = *props.ContentLength
	}
	switch size {
	case ab.size + int64(n):
		return stored, nil
	case ab.size:
		return notStored, nil
	}
	return moved, nil
}

func (w *Writer) metadata(start, end time.Time) map[string]*string {
	return map[string]*string{
		metaStart:   ptr(formatTime(start)),
		metaEnd:     ptr(formatTime(end)),
		metaWriter:  ptr(w.id),
		metaVersion: ptr(logVersion),
	}
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

func isConditionNotMet(err error) bool {
	var se *errs.ServiceError
	return errors.As(err, &se) && se.StatusCode == 412
}

func metaValue(meta map[string]*string, name string) string {
	for k, v := range meta {
		if v != nil && strings.EqualFold(k, name) {
			return *v
		}
	}
	return ""
}

func ptr[V any](v V) *V { return &v }
