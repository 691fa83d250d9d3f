package repo

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/logx"
	"github.com/tablepatterns/tablepatterns/retry"
)

// Options configures a Table. The zero value (or nil) gives the documented defaults.
type Options struct {
	// Retry is the policy for transient failures. Defaults to retry's defaults.
	Retry retry.Policy
	// Logger receives retry and progress logs. Defaults to zap.NewNop(). It is also the
	// retry logger when Retry.Logger is nil.
	Logger *zap.Logger
	// Concurrency bounds the requests BulkWrite and QueryParallel run at once.
	// Defaults to 8.
	Concurrency int
	// PartitionConcurrency bounds the transactions BulkWrite runs at once in one
	// partition (see retry.Schedule), so that a large partition never holds every worker.
	// Defaults to 2.
	PartitionConcurrency int
	// CreateWait bounds how long CreateIfNotExists keeps retrying while the service answers
	// TableBeingDeleted (real Azure keeps a deleted name for 40 s and more). Defaults to
	// 2 minutes; -1 means do not wait.
	CreateWait time.Duration
	// Encryption encrypts the fields tagged "encrypt" of every entity written and decrypts
	// them on every read, with client-side envelope encryption (see codec's doc,
	// "Encryption"): the storage account never sees them in plaintext. It is required
	// when T has such fields. Merges of such entities are refused (ErrInvalidInput), and
	// RotateKeys re-wraps a table's content keys under Encryption.Key. Defaults to nil:
	// no encryption.
	Encryption *codec.Encryption
	// TrackWrites turns on exact recognition of a retried write's own success (see
	// ErrOutcomeUnknown). Without it, an insert, conditional update or conditional delete
	// (or a transaction) whose attempt failed in a way that may have been applied (a
	// timeout, a reset, a 500, 502 or 504: retry.MayHaveApplied) and whose retry then met
	// 409, 412 or 404 returns an error wrapping ErrOutcomeUnknown: another writer could
	// have caused that answer, and content cannot tell (two increments of 5 both write 6).
	// With it, every insert and conditional update stores its write id in the property
	// WriteIDProperty, with the ids of the most recent writes of the entity, so that the
	// retry reads the entity and knows: nil when its id is there; otherwise
	// ErrOutcomeUnknown, never the service's answer (the history is data any writer can
	// change, so an id missing from it proves nothing: a chain broken by an unconditional
	// write or by a writer that does not track, an entity deleted since, a history cut).
	// Every writer of a tracked table should track, with the same WriteHistory.
	// Reads never show the property (it is reserved, see codec.Codec.WithReserved). Cost:
	// about 12 bytes per remembered write on each entity (BENCHMARKS.md) and one point read
	// per ambiguous retry. Defaults to false.
	TrackWrites bool
	// WriteIDProperty names the tracking property. Defaults to DefaultWriteIDProperty
	// ("TpWriteIDs"). It must be a valid property name that T does not map; a tracked
	// table refuses to write an entity that carries it (an extra map, a dynamic entity)
	// with ErrInvalidInput, before any request.
	WriteIDProperty string
	// WriteHistory is how many write ids each tracked entity keeps (at least 2). A retry
	// recognises its write as long as fewer than WriteHistory writes landed after it, when
	// the writers that followed it keep as many: each writer cuts the stored history to
	// its own WriteHistory, so the bound is the smallest among them (a retry past it
	// answers ErrOutcomeUnknown). Defaults to DefaultWriteHistory (16).
	WriteHistory int
}

func (o *Options) withDefaults() Options {
	var out Options
	if o != nil {
		out = *o
	}
	out.Logger = logx.OrNop(out.Logger)
	if out.Retry.Logger == nil {
		out.Retry.Logger = out.Logger
	}
	out.Retry = out.Retry.WithDefaults()
	if out.Concurrency == 0 {
		out.Concurrency = 8
	}
	if out.PartitionConcurrency == 0 {
		out.PartitionConcurrency = 2
	}
	if out.CreateWait == 0 {
		out.CreateWait = 2 * time.Minute
	}
	if out.WriteIDProperty == "" {
		out.WriteIDProperty = DefaultWriteIDProperty
	}
	if out.WriteHistory == 0 {
		out.WriteHistory = DefaultWriteHistory
	}
	return out
}

func (o Options) validate() error {
	if o.Concurrency < 1 {
		return errs.Invalid("Options.Concurrency", "must be at least 1, got %d", o.Concurrency)
	}
	if o.PartitionConcurrency < 1 {
		return errs.Invalid("Options.PartitionConcurrency", "must be at least 1, got %d", o.PartitionConcurrency)
	}
	if o.WriteHistory < 2 || o.WriteHistory > 256 {
		return errs.Invalid("Options.WriteHistory", "must be between 2 and 256, got %d", o.WriteHistory)
	}
	if err := codec.ValidatePropertyName(o.WriteIDProperty); err != nil {
		return err
	}
	if o.CreateWait < -1 {
		return errs.Invalid("Options.CreateWait", "must be positive, 0 (default) or -1 (off), got %v", o.CreateWait)
	}
	return o.Retry.Validate()
}

// Table is a typed repository over one table: entities are values of the struct type T,
// mapped by package codec (see its doc for the tags). A Table is safe for concurrent use.
type Table[T any] struct {
	name   string
	svc    *aztables.ServiceClient
	client *aztables.Client
	codec  *codec.Codec[T]
	opts   Options
	// sel is the $select of a projection (see Project); nil selects every property.
	sel []string
	// track is the write tracking state (Options.TrackWrites), shared by every view of
	// the table (OfType, Project); nil when off.
	track *tracker
	// schema checks a query's property names and value types against the stored type:
	// T's, or for a projection the type it was projected from (see checkSchema).
	schema func(Query) error
}

// New returns the repository of table name for entities of type T. It builds T's codec
// once and checks the table name and options; it sends nothing (the table need not exist
// yet: see CreateIfNotExists).
//
// Errors: ErrInvalidInput (an *InvalidInputError) for a bad table name, options, an
// Options.Encryption bound to another table (Encryption.Table, compared without case), a
// type T that codec cannot map (no PartitionKey/RowKey field, unsupported field types), or
// a T with encrypted fields and no Options.Encryption.
func New[T any](svc *aztables.ServiceClient, name string, opts *Options) (*Table[T], error) {
	if svc == nil {
		return nil, errs.Invalid("service client", "is nil")
	}
	if err := codec.ValidateTableName(name); err != nil {
		return nil, err
	}
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	if err := checkBinding(o.Encryption, name); err != nil {
		return nil, err
	}
	c, err := codecFor[T](o)
	if err != nil {
		return nil, err
	}
	t := &Table[T]{name: name, svc: svc, client: svc.NewClient(name), codec: c, opts: o, schema: schemaOf(c)}
	if o.TrackWrites {
		t.track = newTracker(o.WriteIDProperty, o.WriteHistory)
	}
	return t, nil
}

// checkBinding refuses an Encryption bound to another table than name (compared without
// case, like the service): every entity the table wrote would be bound to that other table,
// and read as genuine once copied there, the very move binding exists to detect.
func checkBinding(e *codec.Encryption, name string) error {
	if e == nil || e.Table == "" || strings.EqualFold(e.Table, name) {
		return nil
	}
	return errs.Invalid("Options.Encryption.Table", "binds entities to table %q, not to this table %q: leave it empty (not bound) or set it to the table's own name", e.Table, name)
}

// codecFor returns T's codec for a table with options o: encrypting with o.Encryption if
// set, and never capturing the write-tracking property. A type with encrypted fields and no
// encryption is refused at construction: such a table could neither write nor read.
func codecFor[T any](o Options) (*codec.Codec[T], error) {
	c, err := codec.For[T]()
	if err != nil {
		return nil, err
	}
	switch {
	case o.Encryption != nil:
		if c, err = c.WithEncryption(o.Encryption); err != nil {
			return nil, err
		}
	case c.Encrypted():
		return nil, errs.Invalid("Options.Encryption", "is nil, but the entity type has fields tagged encrypt: configure a codec.Encryption")
	}
	if o.TrackWrites {
		return c.WithReserved(o.WriteIDProperty)
	}
	if c.HasExtra() {
		// A table of dynamic entities may hold entities a tracked Table wrote: never copy
		// their history as a property of its own (unless T maps that name itself).
		if rc, err := c.WithReserved(o.WriteIDProperty); err == nil {
			return rc, nil
		}
	}
	return c, nil
}

// Project returns a read-only view of t's table whose queries decode into P and ask the
// service for P's properties only ($select), e.g. the review fields of an employee row.
// P needs the key fields like any entity type.
//
// Errors: ErrInvalidInput if codec cannot map P, or P has encrypted fields and t has no
// Options.Encryption.
func Project[P, T any](t *Table[T]) (*Table[P], error) {
	c, err := codecFor[P](t.opts)
	if err != nil {
		return nil, err
	}
	return &Table[P]{name: t.name, svc: t.svc, client: t.client, codec: c, opts: t.opts, sel: c.Select(), track: t.track, schema: t.schema}, nil
}

// OfType returns the same table for entities of another type U, with the same client and
// options: the way to mix entity types in one partition (the Azure Table storage design guide, "heterogeneous entity
// types") and in one transaction. It sends nothing.
//
// Errors: ErrInvalidInput if codec cannot map U, or U has encrypted fields and t has no
// Options.Encryption.
func OfType[U, T any](t *Table[T]) (*Table[U], error) {
	c, err := codecFor[U](t.opts)
	if err != nil {
		return nil, err
	}
	return &Table[U]{name: t.name, svc: t.svc, client: t.client, codec: c, opts: t.opts, track: t.track, schema: schemaOf(c)}, nil
}

// Name returns the table's name.
func (t *Table[T]) Name() string { return t.name }

// Codec returns the codec of T used by this table.
func (t *Table[T]) Codec() *codec.Codec[T] { return t.codec }

// Client returns the underlying aztables client, for operations this package does not wrap.
func (t *Table[T]) Client() *aztables.Client { return t.client }

// Logger returns the table's logger (Options.Logger; a no-op logger by default, never
// nil): the logger of every pattern built over the table.
func (t *Table[T]) Logger() *zap.Logger { return t.opts.Logger }

func (t *Table[T]) op(name, pk, rk string) retry.Op {
	return retry.Op{Name: name, Resource: t.name, PartitionKey: pk, RowKey: rk}
}

// CreateIfNotExists creates the table. An existing table is success. While the service
// answers TableBeingDeleted (the name of a recently deleted table), it keeps retrying with
// the jittered backoff for up to Options.CreateWait, then returns ErrTableBeingDeleted
// (at once with CreateWait -1). Transient failures are retried either way.
//
// Errors: ErrTableBeingDeleted, ErrTransient, or an *Error for other refusals.
func (t *Table[T]) CreateIfNotExists(ctx context.Context) error {
	p := t.opts.Retry
	wait := t.opts.CreateWait > 0
	if wait {
		p.MaxElapsed = t.opts.CreateWait
		p.MaxRetries = 1 << 20 // bounded by MaxElapsed
	}
	op := t.op("create table", "", "")
	op.Retryable = func(err error) bool {
		return retry.IsTransient(err) || (wait && errors.Is(err, ErrTableBeingDeleted))
	}
	return retry.Do(ctx, p, op, func(ctx context.Context, _ int) error {
		_, err := t.client.CreateTable(ctx, nil)
		err = errs.Wrap(err, "create table", t.name, "", "")
		if errors.Is(err, ErrAlreadyExists) {
			return nil
		}
		return err
	})
}

// DeleteTable deletes the table and every entity in it with one request: the cheap way to
// delete a large amount of data (see patterns/periodtable). The service may keep the name
// unusable for a while (TableBeingDeleted).
//
// Errors: ErrNotFound if the table does not exist, ErrTransient, *Error.
func (t *Table[T]) DeleteTable(ctx context.Context) error {
	return retry.Do(ctx, t.opts.Retry, t.op("delete table", "", ""), func(ctx context.Context, attempt int) error {
		_, err := t.client.Delete(ctx, nil)
		err = errs.Wrap(err, "delete table", t.name, "", "")
		if attempt > 1 && errors.Is(err, ErrNotFound) {
			return nil // our earlier attempt deleted it; its response was lost
		}
		return err
	})
}

// Exists reports whether the table exists, with one query for at most one entity.
//
// Errors: ErrTransient, *Error.
func (t *Table[T]) Exists(ctx context.Context) (bool, error) {
	top := int32(1)
	sel := "PartitionKey"
	err := retry.Do(ctx, t.opts.Retry, t.op("exists", "", ""), func(ctx context.Context, _ int) error {
		pager := t.client.NewListEntitiesPager(&aztables.ListEntitiesOptions{Top: &top, Select: &sel})
		_, err := pager.NextPage(ctx)
		return errs.Wrap(err, "exists", t.name, "", "")
	})
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}
