package secondaryindex

import (
	"context"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/logx"
	"github.com/tablepatterns/tablepatterns/internal/settle"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// InterOptions configures an Inter. nil means the zero value, whose every field is its
// documented default.
type InterOptions struct {
	// Kind is the message kind of this index set's reconciliations. Defaults to
	// "secondaryindex.reconcile." followed by the primary table's name; set it when two
	// index sets of one table share a queue. While an index keeps its copies in the primary's table,
	// primary PartitionKeys of the form of any index partition ("<letters and digits>_...")
	// are refused, so that two index sets over one table cannot overwrite each other's
	// primaries.
	Kind string
	// SafetyDelay is how long the message enqueued before each primary write stays
	// invisible: if the process stops after the write and before the prompt message is
	// enqueued, that first message still reconciles the entity after SafetyDelay. The
	// primary write is bounded to half of it, so that the message can never run before the
	// write ends. At least 2 s (the queue counts whole seconds, and the write gets half).
	// Defaults to 5 minutes; -1 turns the safety message off (one enqueue per
	// write instead of two; a stop between the write and the enqueue then leaves the copies
	// stale until the entity is written or Notify is called again).
	SafetyDelay time.Duration
	// TombstoneAge is how old a tombstone (the ref of an entity that has no copy in an
	// index, which reconciliations keep instead of deleting the ref) must be before
	// CollectTombstones removes it. Every reconciliation attempt is bounded to half of it,
	// so that no reconciliation that read the state before the tombstone existed can still
	// commit when the tombstone goes. Defaults to 1 hour; -1 keeps tombstones forever
	// (CollectTombstones removes nothing, reconciliations are not bounded).
	TombstoneAge time.Duration
	// Conflict is the backoff of a reconciliation that starts over because a concurrent
	// one moved the ref first. Zero fields take retry.Conflict()'s values; its Logger
	// defaults to Table.Logger.
	Conflict retry.Policy
	// Table configures the primary table and the index tables (retries, logger,
	// concurrency of verified reads).
	Table repo.Options
}

func (o *InterOptions) withDefaults(table string) InterOptions {
	var out InterOptions
	if o != nil {
		out = *o
	}
	if out.Kind == "" {
		out.Kind = "secondaryindex.reconcile." + table
	}
	if out.SafetyDelay == 0 {
		out.SafetyDelay = defaultSafetyDelay
	}
	if out.TombstoneAge == 0 {
		out.TombstoneAge = defaultTombstoneAge
	}
	out.Table.Logger = logx.OrNop(out.Table.Logger)
	if out.Table.Concurrency == 0 {
		out.Table.Concurrency = 8
	}
	return out
}

func (o InterOptions) validate() error {
	if o.SafetyDelay < -1 || (o.SafetyDelay > 0 && o.SafetyDelay < settle.Min) {
		return errs.Invalid("InterOptions.SafetyDelay", "must be at least %v, 0 (default) or -1 (off), got %v", settle.Min, o.SafetyDelay)
	}
	if o.TombstoneAge < -1 || (o.TombstoneAge > 0 && o.TombstoneAge < 2*time.Second) {
		return errs.Invalid("InterOptions.TombstoneAge", "must be at least 2 s, 0 (default) or -1 (keep forever), got %v", o.TombstoneAge)
	}
	return nil
}

// safetyWindow is the Settle/2 window of the safety message (internal/settle), or false
// when SafetyDelay is off.
func (o InterOptions) safetyWindow() (settle.Window, bool, error) {
	if o.SafetyDelay < 0 {
		return settle.Window{}, false, nil
	}
	w, err := settle.New(o.SafetyDelay, defaultSafetyDelay, "InterOptions.SafetyDelay")
	return w, err == nil, err
}

// interIndex is one index of an Inter with its tables.
type interIndex[T any] struct {
	*index[T]
	copies *repo.Table[codec.Entity]
	refs   *repo.Table[refRow]
	// shared is true when the copies live in the primary's table (the default): primary
	// PartitionKeys starting with "<name>_" are then refused (see checkRef).
	shared bool
}

// Inter keeps copies of entities of type T in other partitions (the guide's "empid_Sales"
// and "email_Sales"), or other tables, eventually consistent with the primary entities
// through a queue (the Azure Table storage design guide's "Inter-partition secondary
// index pattern"). See the package documentation for the protocol. An Inter is safe for
// concurrent use.
type Inter[T any] struct {
	primary *repo.Table[T]
	c       *codec.Codec[T]
	idx     []*interIndex[T]
	named   map[string]*interIndex[T]
	queue   *queueworker.Client
	opts    InterOptions
	// safety bounds the safety message and the write it covers (see write); unset when
	// SafetyDelay is off.
	safety   settle.Window
	safetyOn bool
	retry    retry.Policy
	seams    seams // set by tests only
}

// NewInter returns the inter-partition indexes of the entities of type T stored in table
// (the primary table, whose keys are T's PartitionKey and RowKey), reconciled through the
// messages of queue (see Register for the consuming side). An Inter may own several
// tables (Index.Table), so it takes the service client and names them, and configures
// them all with InterOptions.Table. It sends nothing: create the tables with
// CreateIfNotExists and the queue with azqueue.
//
// Errors: errs.ErrInvalidInput (nothing sent) for a nil svc or queue, a bad table name, options
// or index (see Index, including Properties on a type with encrypted fields).
func NewInter[T any](svc *aztables.ServiceClient, table string, queue *queueworker.Client, indexes []Index[T], opts *InterOptions) (*Inter[T], error) {
	if queue == nil {
		return nil, errs.Invalid("queue", "is nil: the copies are written by the queue's worker")
	}
	o := opts.withDefaults(table)
	if err := o.validate(); err != nil {
		return nil, err
	}
	safety, safetyOn, err := o.safetyWindow()
	if err != nil {
		return nil, err
	}
	conflict := o.Conflict.Or(retry.Policy{Logger: o.Table.Logger}.Or(retry.Conflict()))
	if err := conflict.Validate(); err != nil {
		return nil, err
	}
	primary, err := repo.New[T](svc, table, &o.Table)
	if err != nil {
		return nil, err
	}
	if len(indexes) == 0 {
		return nil, errs.Invalid("indexes", "none given")
	}
	x := &Inter[T]{primary: primary, c: primary.Codec(), named: map[string]*interIndex[T]{}, queue: queue, opts: o, safety: safety, safetyOn: safetyOn, retry: conflict}
	seen := map[string]bool{}
	for _, spec := range indexes {
		ix, err := compile(x.c, spec, seen)
		if err != nil {
			return nil, err
		}
		name := spec.Table
		if name == "" {
			name = table
		}
		ii := &interIndex[T]{index: ix, shared: strings.EqualFold(name, table)}
		if ii.copies, err = repo.New[codec.Entity](svc, name, &o.Table); err != nil {
			return nil, err
		}
		if ii.refs, err = repo.New[refRow](svc, name, &o.Table); err != nil {
			return nil, err
		}
		x.idx = append(x.idx, ii)
		x.named[ix.Name] = ii
	}
	return x, nil
}

// Kind returns the message kind of this index set's reconciliations.
func (x *Inter[T]) Kind() string { return x.opts.Kind }

// Table returns the repository of the primary table, for reads. Writing through it
// bypasses the index: call Notify after such a write.
func (x *Inter[T]) Table() *repo.Table[T] { return x.primary }

// Name returns the primary table's name.
func (x *Inter[T]) Name() string { return x.primary.Name() }

// DeleteTable deletes the primary table and every index table of its own (Index.Table).
// Messages still queued for it fail and go to the poison queue.
//
// Errors: as repo.Table.DeleteTable.
func (x *Inter[T]) DeleteTable(ctx context.Context) error {
	for _, ix := range x.idx {
		if ix.shared {
			continue
		}
		if err := ix.copies.DeleteTable(ctx); err != nil {
			return err
		}
	}
	return x.primary.DeleteTable(ctx)
}

// Get reads the primary entity (pk, rk) with one point query.
//
// Errors: as repo.Table.Get.
func (x *Inter[T]) Get(ctx context.Context, pk, rk string) (T, error) {
	return x.primary.Get(ctx, pk, rk)
}

// CreateIfNotExists creates the primary table and every index table.
//
// Errors: as repo.Table.CreateIfNotExists.
func (x *Inter[T]) CreateIfNotExists(ctx context.Context) error {
	if err := x.primary.CreateIfNotExists(ctx); err != nil {
		return err
	}
	for _, ix := range x.idx {
		if ix.copies.Name() == x.primary.Name() {
			continue
		}
		if err := ix.copies.CreateIfNotExists(ctx); err != nil {
			return err
		}
	}
	return nil
}

// check refuses, before anything is sent, a value that could be written to the primary
// but never indexed: the reconciliation would fail on it forever.
func (x *Inter[T]) check(v *T) (pk, rk string, err error) {
	if v == nil {
		return "", "", errs.Invalid("entity", "is nil")
	}
	if _, err := x.c.Encode(v); err != nil {
		return "", "", err
	}
	pk, rk = x.c.Keys(v)
	if err := x.checkRef(pk, rk); err != nil {
		return "", "", err
	}
	for _, ix := range x.idx {
		val, err := ix.value(v)
		if err != nil {
			return "", "", err
		}
		if val == "" {
			continue
		}
		if _, err := ix.partition(pk); err != nil {
			return "", "", err
		}
		if _, err := ix.copyKey(val, rk); err != nil {
			return "", "", err
		}
	}
	return pk, rk, nil
}
