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
	"github.com/tablepatterns/tablepatterns/retry"
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
	// had to be written.
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
	// Repaired counts the entities whose listing Repair wrote; 0 for Verify.
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
		if err != nil {
			return cp, err
		}
		cp.Scanned += len(page.Items)
		cp.Written += n
		cp.Skipped += skipped
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

// each runs fn on every item on retry.Schedule, item i writing partition part(items[i]):
// at most n at once and at most 2 (ScheduleOptions.PartitionConcurrency's default) at
// once in one partition, each call's context marked with its partition so that the
// client's Gate slows a busy partition alone; it counts the true results. The first
// error stops the calls not yet started.
func each[V any](ctx context.Context, n int, items []V, part func(v V) string, fn func(ctx context.Context, v V) (bool, error)) (int, error) {
	parts := make([]string, len(items))
	for i, v := range items {
		parts[i] = part(v)
	}
	var count atomic.Int64
	err := retry.Schedule(ctx, parts, &retry.ScheduleOptions{Concurrency: max(n, 1)}, func(ctx context.Context, i int) error {
		ok, err := fn(ctx, items[i])
		if ok {
			count.Add(1)
		}
		return err
	})
	return int(count.Load()), err
}

// fixEach runs fix on every entity of a page (of a backfill) or on every drifted entity
// (of a repair: op names which), on each (part names the partition each writes), and
// counts those it wrote and those it skipped: an entity whose stored value cannot be indexed (errs.ErrInvalidInput) is
// logged as skipped by op and passed over, so that one bad entity neither stops its
// partition nor gets the job cancelled.
func fixEach[T any](ctx context.Context, op string, n int, log *zap.Logger, items []T, part func(v T) string, fix func(ctx context.Context, v T) (bool, error)) (written, skipped int, err error) {
	var s atomic.Int64
	written, err = each(ctx, n, items, part, func(ctx context.Context, v T) (bool, error) {
		w, err := fix(ctx, v)
		if errors.Is(err, errs.ErrInvalidInput) {
			log.Warn("indexentity: "+op+" skipped an entity whose value cannot be indexed (Verify reports it)", errs.LogField(err))
			s.Add(1)
			return false, nil
		}
		return w, err
	})
	return written, int(s.Load()), err
}
