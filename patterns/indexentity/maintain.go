package indexentity

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/patterns/internal/maintain"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"go.uber.org/zap"
)

// BackfillOptions configures one call of BackfillPartition. nil means the zero value,
// whose every field is its documented default.
type BackfillOptions struct {
	// After resumes a backfill after this RowKey: the Checkpoint.After of a run that
	// stopped. Defaults to "": the partition from its start.
	After string
	// Limit is how many entities the call processes at most (it stops at the end of the
	// page that reaches it). Defaults to 0: the rest of the partition.
	Limit int
	// PageSize is how many entities one page reads, and so how far apart the checkpoints
	// are. Defaults to 1,000 (the service's page).
	PageSize int
	// Checkpoint, if set, is called after each page with the progress so far: store it
	// where a rerun finds it. An error from it stops the backfill and is returned.
	// Defaults to nil: the checkpoint is only returned.
	Checkpoint func(ctx context.Context, cp Checkpoint) error
}

func (o *BackfillOptions) withDefaults() (BackfillOptions, error) {
	var out BackfillOptions
	if o != nil {
		out = *o
	}
	if out.PageSize < 0 || out.PageSize > repo.MaxPageSize {
		return out, errs.TooLarge("BackfillOptions.PageSize", "must be between 0 (default) and the service's page size", out.PageSize, repo.MaxPageSize)
	}
	if out.Limit < 0 {
		return out, errs.Invalid("BackfillOptions.Limit", "must not be negative, got %d", out.Limit)
	}
	if out.After != "" {
		if err := codec.ValidateKey("BackfillOptions.After", out.After); err != nil {
			return out, err
		}
	}
	return out, nil
}

// Checkpoint is the progress of a backfill of one partition: every entity whose RowKey
// is at most After is listed (as of when it was read).
type Checkpoint struct {
	// PartitionKey is the partition backfilled.
	PartitionKey string `json:"pk"`
	// After is the RowKey of the last entity done ("" for none).
	After string `json:"after,omitempty"`
	// Done reports that the partition's end was reached.
	Done bool `json:"done,omitempty"`
	// Scanned counts the entities read by this call, and Written those whose listing
	// had to be written. When a page stops at a failure, Written and Skipped count its
	// writes and skips too (see Report.Repaired), while After and Scanned stay at the
	// last page finished.
	Scanned, Written int `json:"-"`
	// Skipped counts the entities passed over because their stored value cannot be
	// indexed (a key over the service's limit: data written around the index). Each is
	// logged and the backfill goes on; Verify reports them as Missing.
	Skipped int `json:"-"`
}

// Drift names a kind of difference between the entities and the index's lists.
type Drift string

const (
	// Missing: an entity has a value and is listed nowhere.
	Missing Drift = "missing"
	// Stale: an entity is listed under another value (an old one) and not under its own.
	Stale Drift = "stale"
	// Orphan: an entry for an entity that is gone, or that is listed under its own value
	// too.
	Orphan Drift = "orphan"
)

// Sample is one drifted entry found by Verify.
type Sample struct {
	// Drift is what is wrong.
	Drift Drift
	// Key is the entity's.
	Key Key
	// Value is the value the entity is listed under wrongly (Stale, Orphan), or the one
	// it is missing from (Missing).
	Value string
}

// Report is what Verify (and Repair) found in one partition.
type Report struct {
	// PartitionKey is the partition checked.
	PartitionKey string
	// Entities counts the entities read and Entries the list entries of them.
	Entities, Entries int
	// Missing, Stale and Orphan count the drift of each kind.
	Missing, Stale, Orphan int
	// Samples holds the first VerifyOptions.Samples drifts.
	Samples []Sample
	// Repaired counts the entities whose listing Repair wrote; 0 for Verify. It counts
	// every write confirmed, also when Repair returns an error: the first failure starts
	// no other entity's repair, and those already running finish under the caller's ctx
	// (only its end cancels them), since a write whose client gave up may land all the
	// same and could not be counted.
	Repaired int
	found    []Sample
}

// Drift returns Missing + Stale + Orphan: zero when the lists match the entities.
func (r *Report) Drift() int { return r.Missing + r.Stale + r.Orphan }

func (r *Report) add(s Sample, samples int) {
	switch s.Drift {
	case Missing:
		r.Missing++
	case Stale:
		r.Stale++
	case Orphan:
		r.Orphan++
	}
	if len(r.Samples) < samples {
		r.Samples = append(r.Samples, s)
	}
	r.found = append(r.found, s)
}

// VerifyOptions configures Verify and Repair. nil means the zero value.
type VerifyOptions struct {
	// Samples bounds Report.Samples. Defaults to 20; -1 keeps none.
	Samples int
}

func (o *VerifyOptions) samples() (int, error) {
	if o == nil {
		return maintain.Samples(0)
	}
	return maintain.Samples(o.Samples)
}

// compare fills r from the entities of a partition (key -> value, "" for none) and the
// values each is listed under.
func compare(r *Report, values map[string]string, listed map[string][]string, samples int, pk string) {
	for rk, v := range values {
		under := listed[rk]
		if v == "" {
			continue
		}
		if !slices.Contains(under, v) {
			if len(under) > 0 {
				r.add(Sample{Drift: Stale, Key: Key{pk, rk}, Value: under[0]}, samples)
			} else {
				r.add(Sample{Drift: Missing, Key: Key{pk, rk}, Value: v}, samples)
			}
		}
	}
	for rk, under := range listed {
		v, exists := values[rk]
		for _, w := range under {
			if w == v {
				continue
			}
			if exists && v != "" && !slices.Contains(under, v) && w == under[0] {
				continue // reported as Stale above
			}
			r.add(Sample{Drift: Orphan, Key: Key{pk, rk}, Value: w}, samples)
		}
		r.Entries += len(under)
	}
}

// backfillPages runs one page at a time of the entities selected by f through fix (which
// reports how many it wrote), with checkpoints.
func backfillPages[T any](ctx context.Context, t *repo.Table[T], pk string, o BackfillOptions, f filter.Expr, fix func(ctx context.Context, items []T) (written, skipped int, err error)) (Checkpoint, error) {
	cp := Checkpoint{PartitionKey: pk, After: o.After}
	if o.After != "" {
		f = filter.And(f, filter.Gt("RowKey", o.After))
	}
	pager := t.Pages(repo.Query{Filter: f, PageSize: o.PageSize})
	for pager.More() {
		page, err := pager.Next(ctx)
		if err != nil {
			return cp, err
		}
		n, skipped, err := fix(ctx, page.Items)
		cp.Written += n // a page stopped by a failure wrote these too
		cp.Skipped += skipped
		if err != nil {
			return cp, err
		}
		cp.Scanned += len(page.Items)
		if len(page.Items) > 0 {
			_, cp.After = t.Codec().Keys(&page.Items[len(page.Items)-1])
		}
		cp.Done = !pager.More()
		if o.Checkpoint != nil {
			if err := o.Checkpoint(ctx, cp); err != nil {
				return cp, err
			}
		}
		if o.Limit > 0 && cp.Scanned >= o.Limit {
			break
		}
	}
	cp.Done = !pager.More()
	return cp, nil
}

// fixEach runs fix on every entity of a page (of a backfill) or on every drifted entity
// (of a repair: op names which) on maintain.Each, at most n at once (part names the
// partition each writes), and counts those it wrote and those it skipped. The first
// failure starts no new call, and the calls already running finish under ctx, never
// cancelled by it, so that written counts every write confirmed: a cancelled write may
// land all the same. An entity whose stored value cannot be indexed
// (errs.ErrInvalidInput) is logged as skipped by op and passed over, so that one bad
// entity neither stops its partition nor gets the job cancelled. stopped is the seam of
// the same name (nil outside tests).
func fixEach[T any](ctx context.Context, op string, n int, log *zap.Logger, stopped func(), items []T, part func(v T) string, fix func(ctx context.Context, v T) (bool, error)) (written, skipped int, err error) {
	var w, s atomic.Int64
	err = maintain.Each(ctx, items, part, maintain.EachOptions{Concurrency: n, StopAtFailure: true, Stopped: stopped}, func(ctx context.Context, v T) error {
		wrote, err := fix(ctx, v)
		if errors.Is(err, errs.ErrInvalidInput) {
			log.Warn("indexentity: "+op+" skipped an entity whose value cannot be indexed (Verify reports it)", errs.LogField(err))
			s.Add(1)
			return nil
		}
		if wrote {
			w.Add(1)
		}
		return err
	})
	return int(w.Load()), int(s.Load()), err
}
