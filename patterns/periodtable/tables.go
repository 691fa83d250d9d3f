package periodtable

import (
	"reflect"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/logx"
	"github.com/tablepatterns/tablepatterns/repo"
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
