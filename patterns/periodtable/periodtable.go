package periodtable

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/fanout"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
	"go.uber.org/zap"
)

// horizon returns the instant before which periods are expired: writes to a period that
// ends at or before it are refused. The zero time when Retention is 0.
func (p *Tables[T]) horizon() time.Time {
	if p.opts.Retention == 0 {
		return time.Time{}
	}
	return p.opts.Clock().Add(-p.opts.Retention)
}

// writable returns the period table that holds at, refusing expired and sealed periods.
func (p *Tables[T]) writable(at time.Time) (Table, error) {
	pt, err := p.scheme.TableFor(at)
	if err != nil {
		return Table{}, err
	}
	if h := p.horizon(); !h.IsZero() && !pt.End.After(h) {
		return Table{}, errs.Invalid("time", "%v is in the period of %s, which ended more than the retention (%v) ago: its table is or will be dropped, and re-creating a dropped name is not allowed", at.UTC(), pt.Name, p.opts.Retention)
	}
	if s := p.opts.SealAfter; s > 0 && !pt.End.After(p.opts.Clock().Add(-s)) {
		return Table{}, errs.Invalid("time", "%v is in the period of %s, which ended more than SealAfter (%v) ago: it is sealed (archived or about to be), and is not written or re-created", at.UTC(), pt.Name, s)
	}
	return pt, nil
}

// write routes v to its period's table and runs do there, creating the table on first use.
func (p *Tables[T]) write(ctx context.Context, v *T, do func(*repo.Table[T]) error) error {
	at, err := p.timeOf(v)
	if err != nil {
		return err
	}
	pt, err := p.writable(at)
	if err != nil {
		return err
	}
	t := p.repoTable(pt.Name)
	err = do(t)
	if !isTableNotFound(err) {
		return err
	}
	// The table may have been dropped (or archived) while the write was in flight: check
	// the period again, by the clock of now, before creating the name again.
	if _, err := p.writable(at); err != nil {
		return err
	}
	if err := p.create(ctx, t); err != nil {
		return err
	}
	return do(t)
}

// Insert stores v in the table of the period of its time property, creating the table if
// this is the period's first write. One request (three for the first write of a period:
// the insert that finds no table, the create, the insert). Every step can be repeated, so
// a process stopped between them leaves nothing to repair; but a rerun of an Insert that
// did store v meets errs.ErrAlreadyExists: use Upsert for writes that may be run again.
//
// Errors: errs.ErrInvalidInput (nothing sent: v's limits, a time property that is not a time, a
// period past the retention), errs.ErrAlreadyExists, errs.ErrTableBeingDeleted (the period's table
// was dropped), errs.ErrTransient, *errs.ServiceError.
func (p *Tables[T]) Insert(ctx context.Context, v *T) error {
	return p.write(ctx, v, func(t *repo.Table[T]) error { return t.Insert(ctx, v) })
}

// Upsert inserts or replaces (or merges, see repo.UpsertOptions) v in the table of the
// period of its time property, like Insert. It is idempotent.
//
// Errors: as Insert, without errs.ErrAlreadyExists.
func (p *Tables[T]) Upsert(ctx context.Context, v *T, opts *repo.UpsertOptions) error {
	return p.write(ctx, v, func(t *repo.Table[T]) error { return t.Upsert(ctx, v, opts) })
}

// Get reads the entity with keys pk and rk from the table of the period that holds at.
//
// Errors: errs.ErrNotFound (no such entity, or no table for that period), errs.ErrInvalidInput,
// errs.ErrTransient, *errs.ServiceError.
func (p *Tables[T]) Get(ctx context.Context, at time.Time, pk, rk string) (T, error) {
	pt, err := p.scheme.TableFor(at)
	if err != nil {
		var zero T
		return zero, err
	}
	return p.repoTable(pt.Name).Get(ctx, pk, rk)
}

// Prepare creates the table of the period that holds at, if it does not exist: run it
// ahead of a period (tomorrow's table today) so that the first writes of the period do not
// pay for the creation, and so that the service can warm the new table up before the load
// arrives (the Azure Table storage design guide: a new table is throttled at first). Idempotent.
//
// Errors: errs.ErrInvalidInput (an expired or out-of-range period), errs.ErrTableBeingDeleted,
// errs.ErrTransient, *errs.ServiceError.
func (p *Tables[T]) Prepare(ctx context.Context, at time.Time) (Table, error) {
	pt, err := p.writable(at)
	if err != nil {
		return Table{}, err
	}
	return pt, p.create(ctx, p.repoTable(pt.Name))
}

// ListOptions selects the period tables List returns. The zero value (or nil) lists all.
type ListOptions struct {
	// From and To select the tables whose periods overlap [From, To). A zero From or To
	// leaves that side open.
	From, To time.Time
	// EndBefore, if set, keeps only the tables whose periods ended at or before it: the
	// tables older than a cutoff, e.g. the ones an archiver exports then drops.
	EndBefore time.Time
}

// List returns the existing tables of the scheme, oldest period first, with one request
// per 1,000 tables (a query on the table names, which sort as their periods do). Other
// tables of the account are not returned, even those whose names start with the prefix.
//
// Errors: errs.ErrTransient, *errs.ServiceError.
func (p *Tables[T]) List(ctx context.Context, opts *ListOptions) ([]Table, error) {
	var o ListOptions
	if opts != nil {
		o = *opts
	}
	f := p.scheme.listFilter(o.From, o.To)
	if err := f.Err(); err != nil {
		return nil, err
	}
	text := f.String()
	lo := &aztables.ListTablesOptions{Filter: &text}
	var out []Table
	for {
		var resp aztables.ListTablesResponse
		err := retry.Do(ctx, p.topts.Retry, retry.Op{Name: "list tables", Resource: p.scheme.Prefix}, func(ctx context.Context, _ int) error {
			var err error
			resp, err = p.svc.NewListTablesPager(lo).NextPage(ctx)
			return errs.Wrap(err, "list tables", p.scheme.Prefix, "", "")
		})
		if err != nil {
			return nil, err
		}
		for _, tp := range resp.Tables {
			if tp == nil || tp.Name == nil {
				continue
			}
			t, ok := p.scheme.Parse(*tp.Name)
			if !ok || (!o.From.IsZero() && !t.End.After(o.From)) || (!o.To.IsZero() && !t.Start.Before(o.To)) ||
				(!o.EndBefore.IsZero() && t.End.After(o.EndBefore)) {
				continue
			}
			out = append(out, t)
		}
		if resp.NextTableName == nil || *resp.NextTableName == "" {
			break
		}
		lo.NextTableName = resp.NextTableName
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out, nil
}

// Drop deletes one period table, with every entity in it, in one request: the guide's
// high-volume delete. A table already gone, or already being deleted, is success, so a
// drop can be run again after a crash.
//
// Errors: errs.ErrInvalidInput (nothing sent) when Retention is 0 or the period has not yet
// expired (it ends later than Retention ago: it may still be written, which would re-create
// the name), or the name is not one of the scheme's; errs.ErrTransient, *errs.ServiceError.
func (p *Tables[T]) Drop(ctx context.Context, t Table) error {
	pt, ok := p.scheme.Parse(t.Name)
	if !ok {
		return errs.Invalid("table", "%q is not a table of the scheme %s%s", t.Name, p.scheme.Prefix, p.scheme.Period)
	}
	if err := p.checkCutoff(pt.End); err != nil {
		return err
	}
	return p.drop(ctx, pt)
}

func (p *Tables[T]) drop(ctx context.Context, t Table) error {
	err := p.repoTable(t.Name).DeleteTable(ctx)
	if errors.Is(err, repo.ErrNotFound) || errors.Is(err, repo.ErrTableBeingDeleted) {
		err = nil // dropped earlier, by us or by a concurrent run
	}
	if err == nil {
		p.log.Info("period table dropped", zap.String("table", t.Name), zap.Time("start", t.Start), zap.Time("end", t.End))
	}
	return err
}

// checkCutoff refuses to drop periods that end after the write horizon minus the clock
// skew margin (a writer whose clock runs behind ours may still write them).
func (p *Tables[T]) checkCutoff(cutoff time.Time) error {
	if p.opts.Retention == 0 {
		return errs.Invalid("Options.Retention", "is 0 (keep everything): set it before dropping tables, so that writes to dropped periods are refused")
	}
	if h := p.horizon().Add(-p.opts.ClockSkew); cutoff.After(h) {
		return errs.Invalid("cutoff", "%v is later than the retention horizon minus the clock skew %v (%v): the periods before it may still be written", cutoff.UTC(), p.opts.ClockSkew, h.UTC())
	}
	return nil
}

// DropBefore drops every period table whose period ended at or before cutoff, one delete
// request per table, at most Options.Concurrency at once. It returns the tables it dropped
// (or found already gone). It is idempotent: after a crash, run it again.
//
// Errors: errs.ErrInvalidInput (nothing sent) when Retention is 0 or cutoff is later than
// Retention ago; then List's errors; a failed drop does not stop the others, and the
// errors of all failed drops are joined.
func (p *Tables[T]) DropBefore(ctx context.Context, cutoff time.Time) ([]Table, error) {
	if err := p.checkCutoff(cutoff); err != nil {
		return nil, err
	}
	old, err := p.List(ctx, &ListOptions{EndBefore: cutoff})
	if err != nil {
		return nil, err
	}
	ok := make([]bool, len(old))
	err = fanout.Each(ctx, len(old), p.opts.Concurrency, func(ctx context.Context, i int) error {
		if err := p.drop(ctx, old[i]); err != nil {
			return err
		}
		ok[i] = true
		return nil
	})
	dropped := old[:0:0]
	for i, t := range old {
		if ok[i] {
			dropped = append(dropped, t)
		}
	}
	return dropped, err
}

// DropExpired drops the tables of the periods that ended Retention + ClockSkew ago or
// earlier: the retention job, to run daily (or each period) from a timer or a worker.
//
// Errors: as DropBefore.
func (p *Tables[T]) DropExpired(ctx context.Context) ([]Table, error) {
	if p.opts.Retention == 0 {
		return nil, p.checkCutoff(time.Time{})
	}
	return p.DropBefore(ctx, p.horizon().Add(-p.opts.ClockSkew))
}
