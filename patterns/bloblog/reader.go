package bloblog

import (
	"bytes"
	"context"
	"io"
	"iter"
	"sort"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/fanout"
	"github.com/tablepatterns/tablepatterns/internal/logx"
	"github.com/tablepatterns/tablepatterns/retry"
)

// ReaderOptions configures a Reader. The zero value (or nil) gives the documented defaults.
type ReaderOptions struct {
	// Period is the writers' Options.Period. Any period of an hour or less reads blobs of
	// writers with any period of an hour or less; longer periods must match the writers'.
	// Defaults to DefaultPeriod (1 hour).
	Period time.Duration
	// Concurrency bounds the blobs downloaded at once. Defaults to 4.
	Concurrency int
	// Retry is the policy for transient failures of each request. Defaults to retry's
	// defaults.
	Retry retry.Policy
	// Logger receives retry logs. Defaults to none (a no-op logger).
	Logger *zap.Logger
}

// Reader reads the records of a time range back, by listing blob name prefixes. It is
// safe for concurrent use.
type Reader struct {
	container *container.Client
	cname     string
	opts      ReaderOptions
}

// NewReader returns a Reader of the log blobs in the container. It sends nothing.
//
// Errors: errs.ErrInvalidInput for a nil client, a bad container name or invalid options.
func NewReader(blobs *azblob.Client, containerName string, opts *ReaderOptions) (*Reader, error) {
	if blobs == nil {
		return nil, errs.Invalid("blob client", "is nil")
	}
	if err := codec.ValidateContainerName(containerName); err != nil {
		return nil, err
	}
	var o ReaderOptions
	if opts != nil {
		o = *opts
	}
	if o.Period == 0 {
		o.Period = DefaultPeriod
	}
	if o.Concurrency == 0 {
		o.Concurrency = 4
	}
	o.Logger = logx.OrNop(o.Logger)
	o.Retry = o.Retry.Or(retry.Policy{Logger: o.Logger}).WithDefaults()
	if err := validatePeriod("ReaderOptions.Period", o.Period); err != nil {
		return nil, err
	}
	if o.Concurrency < 1 {
		return nil, errs.Invalid("ReaderOptions.Concurrency", "must be at least 1, got %d", o.Concurrency)
	}
	if err := o.Retry.Validate(); err != nil {
		return nil, err
	}
	return &Reader{container: blobs.ServiceClient().NewContainerClient(containerName), cname: containerName, opts: o}, nil
}

// LogBlob describes one log blob.
type LogBlob struct {
	// Name is the blob's name, <source>/YYYY/MM/DD/hhmm/NNNNNN.log.
	Name string
	// Period is the start of the period the blob's directory names.
	Period time.Time
	// First and Last are the metadata's first and last record times: every record of the
	// blob lies between them (they may be wider). Zero when the metadata is missing.
	First, Last time.Time
	// Size is the blob's length in bytes.
	Size int64
}

// List returns the blobs of source that may hold records in [from, to), in name order
// (period, then number), by listing name prefixes and skipping blobs whose metadata range
// lies outside the range. For periods of an hour or less it lists one prefix per hour
// the range touches ("queue/2014/07/31/18", which covers every period of the hour); for
// longer periods one per period ("queue/2014/07/31/1200").
//
// Cost: one list request per hour (or longer period) per 5,000 blobs.
//
// Errors: errs.ErrInvalidInput (source, times; nothing sent), errs.ErrTransient,
// *errs.ServiceError (errs.ErrNotFound when the container does not exist), ctx's error.
func (r *Reader) List(ctx context.Context, source string, from, to time.Time) ([]LogBlob, error) {
	if err := r.checkRange(source, from, to); err != nil {
		return nil, err
	}
	var out []LogBlob
	for _, prefix := range r.prefixes(source, from, to) {
		blobs, err := r.list(ctx, source, prefix, from, to)
		if err != nil {
			return nil, err
		}
		out = append(out, blobs...)
	}
	return out, nil
}

func (r *Reader) checkRange(source string, from, to time.Time) error {
	if err := validateSource(source); err != nil {
		return err
	}
	if err := checkTime("from", from); err != nil {
		return err
	}
	if err := checkTime("to", to); err != nil {
		return err
	}
	if !from.Before(to) {
		return errs.Invalid("to", "must be after from")
	}
	return nil
}

// prefixes returns the name prefixes to list for [from, to), in time order.
func (r *Reader) prefixes(source string, from, to time.Time) []string {
	step := r.opts.Period
	layout := "2006/01/02/1504"
	if step <= time.Hour {
		// One prefix per hour covers every period of the hour, whatever its length.
		step, layout = time.Hour, "2006/01/02/15"
	}
	var out []string
	for s := periodStart(from, step); s.Before(to); s = s.Add(step) {
		out = append(out, source+"/"+s.Format(layout))
	}
	return out
}

// list lists one prefix, keeping the blobs of periods overlapping [from, to) whose
// metadata range overlaps it too.
func (r *Reader) list(ctx context.Context, source, prefix string, from, to time.Time) ([]LogBlob, error) {
	var out []LogBlob
	var marker *string
	for {
		op := retry.Op{Name: "list blobs", Resource: r.cname + "/" + prefix}
		page, err := retry.DoValue(ctx, r.opts.Retry, op, func(ctx context.Context, _ int) (container.ListBlobsFlatResponse, error) {
			p := r.container.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &prefix, Marker: marker, Include: container.ListBlobsInclude{Metadata: true}})
			resp, err := p.NextPage(ctx)
			return resp, errs.Wrap(err, op.Name, op.Resource, "", "")
		})
		if err != nil {
			return nil, err
		}
		if page.Segment != nil {
			for _, it := range page.Segment.BlobItems {
				if b, ok := r.keep(source, it, from, to); ok {
					out = append(out, b)
				}
			}
		}
		if page.NextMarker == nil || *page.NextMarker == "" {
			return out, nil
		}
		marker = page.NextMarker
	}
}

func (r *Reader) keep(source string, it *container.BlobItem, from, to time.Time) (LogBlob, bool) {
	if it == nil || it.Name == nil {
		return LogBlob{}, false
	}
	start, ok := parsePeriodStart(source, *it.Name)
	if !ok {
		return LogBlob{}, false
	}
	if _, ok := parseSeq(periodDir(source, start), *it.Name); !ok {
		return LogBlob{}, false
	}
	// A reader of a period of an hour or less reads the blobs of writers of any such period
	// (see Options.Period): the blob's period may be up to an hour long, whatever the
	// reader's. The metadata range below narrows it exactly.
	span := r.opts.Period
	if span <= time.Hour {
		span = time.Hour
	}
	if !start.Before(to) || !start.Add(span).After(from) {
		return LogBlob{}, false
	}
	b := LogBlob{Name: *it.Name, Period: start}
	if it.Properties != nil && it.Properties.ContentLength != nil {
		b.Size = *it.Properties.ContentLength
	}
	first, ok1 := parseTime(metaValue(it.Metadata, metaStart))
	last, ok2 := parseTime(metaValue(it.Metadata, metaEnd))
	if ok1 && ok2 {
		b.First, b.Last = first, last
		if last.Before(from) || !first.Before(to) {
			return LogBlob{}, false
		}
	}
	return b, true
}

// Read returns the records of source with from <= Time < to, in time order (records of
// equal time in the order they were written). It lists the range's blobs (see List),
// downloads them period by period, at most Concurrency at once, and holds one period's
// records in memory at a time. Iteration stops at the first error, yielded with the zero
// Record; breaking out of the loop stops the reads.
//
// Cost: List's requests, then one download per blob listed.
//
// Errors: as List; a blob that is not in the line format gives an error naming it and the
// line.
func (r *Reader) Read(ctx context.Context, source string, from, to time.Time) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		if err := r.checkRange(source, from, to); err != nil {
			yield(Record{}, err)
			return
		}
		for _, prefix := range r.prefixes(source, from, to) {
			blobs, err := r.list(ctx, source, prefix, from, to)
			if err != nil {
				yield(Record{}, err)
				return
			}
			// Blobs of one prefix may span several periods (sub-hour periods); their
			// records are merged and sorted together, which keeps the time order.
			recs, err := r.fetch(ctx, blobs, from, to)
			if err != nil {
				yield(Record{}, err)
				return
			}
			for _, rec := range recs {
				if !yield(rec, nil) {
					return
				}
			}
		}
	}
}

// fetch downloads the blobs and returns their records in [from, to), sorted by time.
func (r *Reader) fetch(ctx context.Context, blobs []LogBlob, from, to time.Time) ([]Record, error) {
	per := make([][]Record, len(blobs))
	err := fanout.Do(ctx, len(blobs), r.opts.Concurrency, func(ctx context.Context, i int) error {
		content, err := r.download(ctx, blobs[i].Name)
		if err != nil {
			return err
		}
		recs, err := parseBlobRange(blobs[i].Name, content, formatTime(ceilTick(from)), formatTime(ceilTick(to)))
		if err != nil {
			return err
		}
		per[i] = recs
		return nil
	})
	if err != nil {
		return nil, err
	}
	var all []Record
	for _, recs := range per {
		all = append(all, recs...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Time.Before(all[j].Time) })
	return all, nil
}

func (r *Reader) download(ctx context.Context, name string) ([]byte, error) {
	op := retry.Op{Name: "download blob", Resource: r.cname + "/" + name}
	return retry.DoValue(ctx, r.opts.Retry, op, func(ctx context.Context, _ int) ([]byte, error) {
		resp, err := r.container.NewBlobClient(name).DownloadStream(ctx, nil)
		if err != nil {
			return nil, errs.Wrap(err, op.Name, op.Resource, "", "")
		}
		defer resp.Body.Close()
		var buf bytes.Buffer
		if resp.ContentLength != nil && *resp.ContentLength > 0 {
			buf.Grow(int(*resp.ContentLength) + bytes.MinRead)
		}
		if _, err := io.Copy(&buf, resp.Body); err != nil {
			return nil, errs.Wrap(err, op.Name, op.Resource, "", "")
		}
		return buf.Bytes(), nil
	})
}

// ceilTick returns the first 100 ns tick at or after t: record times are whole ticks, so a
// record at tick k is before any end inside tick k, and a from inside tick k excludes it.
func ceilTick(t time.Time) time.Time {
	if c := t.Truncate(100 * time.Nanosecond); !c.Equal(t) {
		return c.Add(100 * time.Nanosecond)
	}
	return t
}
