package bloblog

import (
	"bytes"
	"context"
	"errors"
	"sort"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/appendblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/retry"
)

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
			n, err := w.resolveUnknownAppend(ctx, ab)
			if err != nil {
				return done, err
			}
			done += n
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
		created, err = w.createdByUs(ctx, c, op.Resource)
		return err
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
		if isConditionNotMet(err) {
			return w.appendRefused(ctx, ab, len(block))
		}
		return err
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
