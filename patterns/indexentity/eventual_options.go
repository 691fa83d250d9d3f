package indexentity

import (
	"context"
	"strings"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/settle"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// Store keeps the lists of an Eventual index: for each indexed value, the keys of the
// entities that have it. BlobStore (option 1) and TableStore (option 3) implement it.
// Add and Remove must be idempotent and safe to run concurrently with themselves.
type Store interface {
	// Check refuses, before any request, a value the store cannot index
	// (errs.ErrInvalidInput).
	Check(value string) error
	// Keys returns the keys listed under value, sorted; none for an unknown value.
	Keys(ctx context.Context, value string) ([]Key, error)
	// Add lists k under value; listing a key twice is a no-op.
	Add(ctx context.Context, value string, k Key) error
	// Remove removes k from value's list; removing an absent key is a no-op.
	Remove(ctx context.Context, value string, k Key) error
}

// DefaultSettle is the default EventualOptions.Settle.
const DefaultSettle = time.Minute

// EventualOptions configures an Eventual index. nil means the zero value, whose every
// field is its documented default.
type EventualOptions struct {
	// Normalize, if set, maps every value before it is used: the value of an entity on
	// every write and reconciliation, and the value asked for by Keys and Find
	// (strings.ToLower finds "ann@example.com" when asked for "Ann@Example.com"). It must
	// be a pure function. Lists are keyed by normalized values: changing Normalize needs a
	// rebuild of the index (Reconcile every entity with its old values). nil keeps values
	// as they are.
	Normalize func(value string) string
	// Settle bounds how long a change may take to become visible. A write enqueues its
	// message first and then writes the entity, both within Settle/2 of the moment before
	// the message was built (their context gets that deadline, so a slow enqueue leaves
	// the write less time); a worker that finds the entity not (yet) changed reconciles
	// what it finds and looks again later, until the message is Settle old. Defaults to
	// DefaultSettle
	// (1 minute); at least 2 seconds. It must exceed the clock skew between writers and
	// workers.
	Settle time.Duration
	// Concurrency bounds the point queries of Find. Defaults to DefaultConcurrency.
	Concurrency int
	// Conflict is the backoff of a write retried after the entity changed between its read
	// and its write (only when the caller did not supply an ETag). Zero fields take
	// retry.Conflict()'s values; its Logger defaults to the table's.
	Conflict retry.Policy
}

// Eventual maintains an index whose lists live outside the entities' partitions, options
// 1 and 3 of the guide's index entities pattern: a blob per value (BlobStore) or index
// entities in another partition or table (TableStore). The lists are eventually
// consistent with the entities: each write enqueues a Change message first, then writes
// the entity; a queueworker handler (Register, or Handle and Reconcile directly) re-reads
// the entity and makes the lists agree with it. Find verifies every hit against the
// entity, so a reader never gets an entity that does not have the value, only possibly
// misses one written in the last moments. It is safe for concurrent use.
//
// Write entities only through Insert, Update and Delete: a write through the table alone
// sends no message.
type Eventual[T any] struct {
	primary  *repo.Table[T]
	codec    *codec.Codec[T]
	name     string
	value    func(*T) string // normalized
	norm     func(string) string
	store    Store
	queue    *queueworker.Client
	settle   settle.Window
	conc     int
	conflict retry.Policy

	seams seams // set by tests only
}

// NewEventual returns the option 1 or option 3 index named name (e.g. "LastName"; 1 to 64
// characters; its messages have the kind "indexentity.change.<table>.<name>") over the entities
// of table, by value (the indexed value of an entity; "" means not indexed; a pure
// function). store keeps the lists (a *BlobStore, option 1, or a *TableStore, option 3)
// and queue receives the change messages the worker reconciles (see Register). The logger
// is the table's. It sends nothing.
//
// Errors: errs.ErrInvalidInput when table, value, store or queue is nil, T has no ETag field,
// name is empty or too long, or an option is out of range.
func NewEventual[T any](table *repo.Table[T], name string, value func(v *T) string, store Store, queue *queueworker.Client, opts *EventualOptions) (*Eventual[T], error) {
	if table == nil {
		return nil, errs.Invalid("table", "is nil")
	}
	if !table.Codec().HasETag() {
		return nil, errs.Invalid("table", "entity type has no ETag field: updates must be conditional on the version they read")
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	switch {
	case value == nil:
		return nil, errs.Invalid("value", "is nil")
	case store == nil:
		return nil, errs.Invalid("store", "is nil")
	case queue == nil:
		return nil, errs.Invalid("queue", "is nil")
	}
	var o EventualOptions
	if opts != nil {
		o = *opts
	}
	w, err := settle.New(o.Settle, DefaultSettle, "EventualOptions.Settle")
	if err != nil {
		return nil, err
	}
	conc, err := concurrencyOf(o.Concurrency, "EventualOptions.Concurrency")
	if err != nil {
		return nil, err
	}
	cp := conflictPolicy(o.Conflict, table.Logger())
	if err := cp.Validate(); err != nil {
		return nil, err
	}
	return &Eventual[T]{
		primary: table, codec: table.Codec(), name: name, value: normalized(value, o.Normalize), norm: normOf(o.Normalize),
		store: store, queue: queue, settle: w, conc: conc, conflict: cp,
	}, nil
}

// Table returns the repository of the indexed entities, for reads. Writes through it
// bypass the index.
func (ix *Eventual[T]) Table() *repo.Table[T] { return ix.primary }

// Store returns the store of the lists.
func (ix *Eventual[T]) Store() Store { return ix.store }

// Kind returns the kind of the index's messages, "indexentity.change.<table>.<name>".
func (ix *Eventual[T]) Kind() string { return jobKind("change", ix.primary.Name(), ix.name) }

// Register registers Handle for the index's messages under Kind in r, and the maintenance
// jobs' handlers under BackfillKind, VerifyKind and RepairKind (see StartBackfill,
// StartVerify, StartRepair). Every kind names the table, so indexes of one name on two
// tables share a registry without sharing a kind.
//
// Errors: errs.ErrInvalidInput when r is nil or one of the index's own kinds is already
// registered.
func (ix *Eventual[T]) Register(r *queueworker.Registry) error {
	if err := queueworker.Handle(r, ix.Kind(), ix.Handle); err != nil {
		return err
	}
	return ix.jobs().Register(r)
}

// check refuses, before any request, an entity this index cannot store.
func (ix *Eventual[T]) check(v *T) (Key, error) {
	if v == nil {
		return Key{}, errs.Invalid("entity", "is nil")
	}
	if _, err := ix.codec.Encode(v); err != nil {
		return Key{}, err
	}
	pk, rk := ix.codec.Keys(v)
	k := Key{pk, rk}
	if err := ix.checkKey(k); err != nil {
		return Key{}, err
	}
	if value := ix.value(v); value != "" {
		if err := ix.store.Check(value); err != nil {
			return Key{}, err
		}
	}
	return k, nil
}

// writeCtx bounds a message and the entity write it announces with one deadline (the
// Settle/2 protocol of internal/settle). Pass the returned context to both.
func (ix *Eventual[T]) writeCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return ix.settle.Write(ctx)
}

func (ix *Eventual[T]) loop(ctx context.Context, name string, k Key, attempt func(ctx context.Context) error) error {
	op := retry.Op{Name: "indexed " + name, Resource: ix.primary.Name(), PartitionKey: k.PartitionKey, RowKey: k.RowKey}
	return retry.Optimistic(ctx, ix.conflict, op, func(ctx context.Context, _ int) error { return attempt(ctx) })
}

// checkKey checks a primary entity's keys. When the index entities of a TableStore share
// the primary's table, a primary PartitionKey inside their key space ("idx!<name>!...")
// is refused: a reconciliation would read that entity as a page of the index, and replace
// it.
func (ix *Eventual[T]) checkKey(k Key) error {
	if err := checkKey(k); err != nil {
		return err
	}
	ts, ok := ix.store.(*TableStore)
	if !ok || !strings.EqualFold(ts.Table().Name(), ix.primary.Name()) {
		return nil
	}
	if prefix := ts.keyPrefix(); strings.HasPrefix(k.PartitionKey, prefix) {
		// Not the key itself: a partition in that space holds an indexed value.
		return errs.Invalid("PartitionKey", "lies in the partitions of index %q's entities (%q...), which share the primary's table: use another table for the index (NewTableStore)", ts.name, prefix)
	}
	return nil
}
