package periodtable

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/fanout"
	"github.com/tablepatterns/tablepatterns/internal/logx"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// Defaults of Options.
const (
	DefaultConcurrency = 4
	DefaultClockSkew   = 5 * time.Minute
)

// Options configures Tables. The zero value (or nil) gives the documented defaults.
type Options struct {
	// Retention is how long a period stays writable and kept: writes to a period that
	// ended Retention or more ago are refused, and DropExpired drops the tables of such
	// periods. Because writes are refused before a table can be dropped, this package never
	// re-creates a dropped table's name (the Azure Table storage design guide: "always use unique table names").
	// 0 means keep everything: writes are never refused, and DropBefore and DropExpired
	// refuse to drop anything.
	Retention time.Duration
	// SealAfter seals a period that long after it ended: writes to it are refused before
	// any request (errs.ErrInvalidInput), and its table is never created again, so that an
	// archiver (patterns/consistency, its SealGrace at least SealAfter) can export and
	// drop it with no writer left. 0 means Retention (writes refused once the period
	// expires; never, when Retention is 0); -1 means never sealed before Retention.
	SealAfter time.Duration
	// ClockSkew is the margin Drop, DropBefore and DropExpired keep on top of Retention,
	// for writers whose clocks run behind the dropper's. Defaults to DefaultClockSkew
	// (5 minutes); -1 means 0.
	ClockSkew time.Duration
	// Concurrency bounds the tables read at once by Query and dropped at once by DropBefore.
	// Defaults to DefaultConcurrency (4).
	Concurrency int
	// Clock is the time source of the retention rules. Defaults to time.Now.
	Clock func() time.Time
	// Table configures each period table (retry policy, logger, ...): Tables owns many
	// tables, so it builds them itself, and its logger is Table.Logger (none by default).
	// Table.Encryption, if set, is bound to each period table's own name
	// (codec.Encryption.Table): leave its Table empty (New refuses one), and read a period
	// table's entities elsewhere with an Encryption bound to that period table's name.
	// Its CreateWait is ignored: a period table found being deleted is never waited for
	// and re-created (CreateWait is -1 in the tables Table returns).
	Table repo.Options
}

// Tables is a set of tables of entities of type T, one per period (the Azure Table storage design guide, "high-volume
// delete pattern"; Tablestore's primary key design guide, hot and cold data in monthly tables). Writes are routed by
// the entity's time, queries over a time range fan out across the period tables, and
// retention drops whole tables. Tables is safe for concurrent use.
type Tables[T any] struct {
	svc      *aztables.ServiceClient
	scheme   Scheme
	timeProp string
	// timeIndex is the index path of the time field of a type with encrypted fields
	// (see timeOf); nil otherwise.
	timeIndex []int
	codec     *codec.Codec[T]
	opts      Options
	topts     repo.Options
	log       *zap.Logger

	mu     sync.Mutex
	tables map[string]*repo.Table[T]
}

// New returns the period tables of scheme for entities of type T. timeProperty names the
// time.Time property (stored name or Go field name) that routes each entity to its period's
// table: a sign-in attempt goes to the table of the day of its AttemptTime. Fan-out
// queries also filter on it in the tables at the ends of the range. For
// Tables[codec.Entity] (dynamic entities, e.g. in an archiver) any valid property name is
// accepted. New sends nothing: a period's table is created by the first write to it (or by
// Prepare).
//
// Errors: errs.ErrInvalidInput (an *errs.InvalidInputError) for a nil client, an invalid
// scheme or options, an empty timeProperty or one T does not have, or a T codec cannot map.
func New[T any](svc *aztables.ServiceClient, scheme Scheme, timeProperty string, opts *Options) (*Tables[T], error) {
	if svc == nil {
		return nil, errs.Invalid("service client", "is nil")
	}
	if err := scheme.Validate(); err != nil {
		return nil, err
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Concurrency == 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Concurrency < 1 {
		return nil, errs.Invalid("Options.Concurrency", "must be at least 1, got %d", o.Concurrency)
	}
	switch {
	case o.ClockSkew == 0:
		o.ClockSkew = DefaultClockSkew
	case o.ClockSkew == -1:
		o.ClockSkew = 0
	case o.ClockSkew < 0:
		return nil, errs.Invalid("Options.ClockSkew", "must be positive, 0 (default) or -1 (none), got %v", o.ClockSkew)
	}
	if o.SealAfter < -1 {
		return nil, errs.Invalid("Options.SealAfter", "must be positive, 0 (Retention) or -1 (none), got %v", o.SealAfter)
	}
	if o.Retention < 0 {
		return nil, errs.Invalid("Options.Retention", "must not be negative, got %v", o.Retention)
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	c, err := codec.For[T]()
	if err != nil {
		return nil, err
	}
	if timeProperty == "" {
		return nil, errs.Invalid("timeProperty", "is required: it routes each entity to its period's table")
	}
	prop, ok := c.PropertyName(timeProperty)
	if _, dynamic := any(new(T)).(*codec.Entity); dynamic && !ok {
		// Dynamic entities (an archiver's view of any table) may hold any property.
		if err := codec.ValidatePropertyName(timeProperty); err != nil {
			return nil, err
		}
		prop, ok = timeProperty, true
	}
	if !ok {
		return nil, errs.Invalid("timeProperty", "%T has no property %q", *new(T), timeProperty)
	}
	// A type with encrypted fields cannot be encoded in part (codec refuses a merge of it),
	// so the time is read from its field directly.
	var timeIndex []int
	if _, dynamic := any(new(T)).(*codec.Entity); !dynamic && c.Encrypted() {
		info, _ := c.Property(prop)
		sf, found := reflect.TypeFor[T]().FieldByName(info.GoName)
		switch {
		case info.Encrypted:
			return nil, errs.Invalid("timeProperty", "%q is encrypted: the time property routes each entity to its table and filters queries, so it must be stored in clear", prop)
		case !found || (sf.Type != reflect.TypeFor[time.Time]() && sf.Type != reflect.TypeFor[*time.Time]()):
			return nil, errs.Invalid("timeProperty", "%q must be a time.Time field of %T", prop, *new(T))
		}
		timeIndex = sf.Index
	}
	topts := o.Table
	topts.CreateWait = -1
	topts.Logger = logx.OrNop(topts.Logger)
	// Checked once, here, rather than at the first write; every table is built from them.
	if err := repo.CheckOptions[T](&topts); err != nil {
		return nil, err
	}
	return &Tables[T]{
		svc: svc, scheme: scheme, timeProp: prop, timeIndex: timeIndex, codec: c, opts: o, topts: topts, log: topts.Logger,
		tables: map[string]*repo.Table[T]{},
	}, nil
}

// optionsOf returns the options of the period table name: the Tables' own, with
// encryption bound to that table (codec.Encryption.Table), so that an entity of one period
// copied into another period's table fails to read there (codec.ErrTampered) instead of
// passing as genuine data of that period.
func (p *Tables[T]) optionsOf(name string) *repo.Options {
	o := p.topts
	if o.Encryption != nil {
		e := *o.Encryption
		e.Table = name
		o.Encryption = &e
	}
	return &o
}

// Scheme returns the naming scheme of the tables.
func (p *Tables[T]) Scheme() Scheme { return p.scheme }

// repoTable returns the repository of the period table name, built once.
func (p *Tables[T]) repoTable(name string) *repo.Table[T] {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.tables[name]
	if !ok {
		// The name comes from the scheme and the options were checked by New: no error.
		t, _ = repo.New[T](p.svc, name, p.optionsOf(name))
		p.tables[name] = t
	}
	return t
}

// Table returns the repository of a period table, for the operations Tables does not
// wrap (a point read in a known period, reading a whole period to archive it). It sends
// nothing.
//
// Errors: errs.ErrInvalidInput when the name is not one of the scheme's.
func (p *Tables[T]) Table(t Table) (*repo.Table[T], error) {
	if _, ok := p.scheme.Parse(t.Name); !ok {
		return nil, errs.Invalid("table", "%q is not a table of the scheme %s%s", t.Name, p.scheme.Prefix, p.scheme.Period)
	}
	return p.repoTable(t.Name), nil
}

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

// timeOf reads v's time property through the codec, so that the routing sees exactly the
// value that is stored.
func (p *Tables[T]) timeOf(v *T) (time.Time, error) {
	if v == nil {
		return time.Time{}, errs.Invalid("entity", "is nil")
	}
	if p.timeIndex != nil {
		f, err := reflect.ValueOf(v).Elem().FieldByIndexErr(p.timeIndex)
		if err == nil {
			switch at := f.Interface().(type) {
			case time.Time:
				return at, nil
			case *time.Time:
				if at != nil {
					return *at, nil
				}
			}
		}
		return time.Time{}, errs.Invalid(p.timeProp, "must hold a time.Time to route the entity to its period")
	}
	body, err := p.codec.EncodeProperties(v, p.timeProp)
	if err != nil {
		return time.Time{}, err
	}
	e, err := codec.DecodeEntity(body)
	if err != nil {
		return time.Time{}, err
	}
	at, ok := e.Properties[p.timeProp].(time.Time)
	if !ok {
		return time.Time{}, errs.Invalid(p.timeProp, "must hold a time.Time to route the entity to its period (got %T)", e.Properties[p.timeProp])
	}
	return at, nil
}

// isTableNotFound tells "the table does not exist" from "the entity does not exist". A
// write whose outcome repo could not tell because its retry met TableNotFound
// (errs.ErrOutcomeUnknown) counts too: whatever an earlier attempt did, the table is gone
// now, and so is anything it stored; the write re-checks its period before creating it.
func isTableNotFound(err error) bool {
	var ue *repo.OutcomeUnknownError
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var se *errs.ServiceError
	return errors.As(err, &se) && se.Code == "TableNotFound"
}

// create creates a period table. It calls the service directly rather than
// repo.Table.CreateIfNotExists, whose only way not to wait on TableBeingDeleted
// (CreateWait -1) also turns off its transient retries. Here transient failures are
// retried, an existing table (ours, or a concurrent writer's, or our own lost response) is
// success, and a table being deleted is a dropped period: it is not waited for, so that
// its name is never reused.
func (p *Tables[T]) create(ctx context.Context, t *repo.Table[T]) error {
	op := retry.Op{Name: "create table", Resource: t.Name()}
	err := retry.Do(ctx, p.topts.Retry, op, func(ctx context.Context, _ int) error {
		_, err := t.Client().CreateTable(ctx, nil)
		err = errs.Wrap(err, "create table", t.Name(), "", "")
		if errors.Is(err, repo.ErrAlreadyExists) {
			return nil
		}
		return err
	})
	if errors.Is(err, repo.ErrTableBeingDeleted) {
		return fmt.Errorf("periodtable: the table %s is being deleted (its period was dropped); it is not re-created under the same name: %w", t.Name(), err)
	}
	return err
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
