package secondaryindex

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/logx"
	"github.com/tablepatterns/tablepatterns/internal/settle"
	"github.com/tablepatterns/tablepatterns/internal/telemetry"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"github.com/tablepatterns/tablepatterns/retry"
)

// InterOptions configures an Inter. nil means the zero value, whose every field is its
// documented default.
type InterOptions struct {
	// Kind is the message kind of this index set's reconciliations. Defaults to
	// "secondaryindex.reconcile." followed by the primary table's name (Register also
	// accepts the kind of earlier releases, "secondaryindex:" and the table's name, for
	// messages enqueued before an upgrade); set it when two index sets
	// of one table share a queue. While an index keeps its copies in the primary's table,
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

// legacyKind is the default kind of earlier releases, still accepted by Register.
func legacyKind(table string) string { return "secondaryindex:" + table }

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

// Ref is the payload of a reconciliation message: the keys of the primary entity whose
// copies to reconcile. It carries nothing else on purpose: the worker reads the entity.
type Ref struct {
	PartitionKey string `json:"pk"`
	RowKey       string `json:"rk"`
}

// refRow is the bookkeeping entity of one index for one primary entity: the RowKey of the
// copy currently written and the primary's ETag it was made from. It lives in the index
// partition next to the copies, so that moving a copy and updating the ref is one entity
// group transaction, conditional on the ref's ETag.
type refRow struct {
	PartitionKey string    `table:",pk"`
	RowKey       string    `table:",rk"`
	Key          string    `table:"Key"`
	SourceETag   string    `table:"SourceETag"`
	ETag         string    `table:",etag"`
	Timestamp    time.Time `table:",timestamp"`
}

// defaultTombstoneAge is InterOptions.TombstoneAge's default.
const defaultTombstoneAge = time.Hour

// refPrefix starts the RowKey of every ref. Copies are keyed by escaped values
// (keys.Join), whose first character is always above '!', so refs sort before every copy
// and never appear in a value range.
const refPrefix = "!"

// lowestCopy is the lowest RowKey a copy can have (see refPrefix).
const lowestCopy = "\""

// interIndex is one index of an Inter with its tables.
type interIndex[T any] struct {
	*index[T]
	copies *repo.Table[codec.Entity]
	refs   *repo.Table[refRow]
	// shared is true when the copies live in the primary's table (the default): primary
	// PartitionKeys starting with "<name>_" are then refused (see checkRef).
	shared bool
}

// partition is the index partition of the primary partition pk: the guide's "email_Sales".
func (ix *interIndex[T]) partition(pk string) (string, error) {
	p := ix.Name + sep + pk
	if err := codec.ValidateKey("PartitionKey", p); err != nil {
		return "", ix.invalid(err)
	}
	return p, nil
}

// copyKey is the RowKey of the copy of the primary entity rk for value: the value, then
// the primary's RowKey, escaped (keys.Join) so that any value works and copies sort by
// value, then by primary key.
func (ix *interIndex[T]) copyKey(value, rk string) (string, error) {
	k := keys.Join(value, rk)
	if err := codec.ValidateKey("RowKey", k); err != nil {
		return "", ix.invalid(err)
	}
	return k, nil
}

func refKey(rk string) string { return refPrefix + keys.Join(rk) }

// isCopyKeyOf reports whether k is the key of a copy of the primary entity rk: two parts
// (keys.Join(value, rk)), a non-empty value, rk last; never a ref.
func isCopyKeyOf(k, rk string) bool {
	if strings.HasPrefix(k, refPrefix) {
		return false
	}
	parts, err := keys.Split(k)
	return err == nil && len(parts) == 2 && parts[0] != "" && parts[1] == rk
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
	// testHook, when set by tests, is called between the steps of writes and
	// reconciliations ("written", "read", "index <name> done"), to stop a run there.
	testHook func(stage string) error
	// now is the clock of CollectTombstones (tests move it).
	now func() time.Time
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
	x := &Inter[T]{primary: primary, c: primary.Codec(), named: map[string]*interIndex[T]{}, queue: queue, opts: o, safety: safety, safetyOn: safetyOn, retry: conflict, now: time.Now}
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

func (x *Inter[T]) hook(stage string) error {
	if x.testHook == nil {
		return nil
	}
	return x.testHook(stage)
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

// Insert inserts v into the primary table and has its copies written by the worker:
// see the package documentation for the three steps and why each is safe to interrupt.
// On success v's ETag field holds the primary's new ETag.
//
// Errors: those of repo.Table.Insert (errs.ErrAlreadyExists, errs.ErrInvalidInput with nothing sent,
// also for a value that cannot be indexed), and those of queueworker.Enqueue.
func (x *Inter[T]) Insert(ctx context.Context, v *T) error {
	pk, rk, err := x.check(v)
	if err != nil {
		return err
	}
	return x.write(ctx, pk, rk, func(ctx context.Context) error { return x.primary.Insert(ctx, v) })
}

// Update replaces the primary entity by v and has its copies reconciled by the worker.
// When v carries an ETag the update is conditional on it (errs.ErrPreconditionFailed if
// the entity changed since it was read); without one it is last-writer-wins. A value read
// without Verify through an index whose copies carry only some properties is refused, as
// Intra refuses it (it would erase the others; see ReadOptions). On success v's ETag field
// holds the new ETag.
//
// Errors: those of repo.Table.Update and queueworker.Enqueue; errs.ErrInvalidInput (nothing
// sent) also for a value that cannot be indexed or that was read from a partial copy.
func (x *Inter[T]) Update(ctx context.Context, v *T) error {
	pk, rk, err := x.check(v)
	if err != nil {
		return err
	}
	if name, ok := strings.CutPrefix(x.c.ETag(v), partialMark); ok {
		return errs.Invalid(fmt.Sprintf("index %q", name), "the value was read from a copy that carries only some properties; read the whole entity with Get (or Find with Verify) before updating it")
	}
	return x.write(ctx, pk, rk, func(ctx context.Context) error { return x.primary.Update(ctx, v, nil) })
}

// Upsert inserts v or replaces the stored primary entity unconditionally (last writer
// wins) and has its copies reconciled by the worker.
//
// Errors: those of repo.Table.Upsert and queueworker.Enqueue; errs.ErrInvalidInput (nothing
// sent) also for a value that cannot be indexed.
func (x *Inter[T]) Upsert(ctx context.Context, v *T) error {
	pk, rk, err := x.check(v)
	if err != nil {
		return err
	}
	return x.write(ctx, pk, rk, func(ctx context.Context) error { return x.primary.Upsert(ctx, v, nil) })
}

// Delete deletes the primary entity with v's keys and has its copies removed by the
// worker. Only the keys of v are needed; if v also carries an ETag of the primary (not the
// mark of a partial copy, see ReadOptions), the delete is conditional on it.
//
// Errors: errs.ErrInvalidInput (a nil v, bad keys, or a PartitionKey inside an index's key
// space, see the package documentation; nothing sent), and those of repo.Table.Delete and
// queueworker.Enqueue.
func (x *Inter[T]) Delete(ctx context.Context, v *T) error {
	if v == nil {
		return errs.Invalid("entity", "is nil")
	}
	pk, rk := x.c.Keys(v)
	if err := x.checkRef(pk, rk); err != nil {
		return err
	}
	etag := x.c.ETag(v)
	if strings.HasPrefix(etag, partialMark) {
		etag = "" // an unverified copy carries no ETag of the primary: unconditional, as for any unverified hit
	}
	opts := &repo.DeleteOptions{ETag: etag}
	return x.write(ctx, pk, rk, func(ctx context.Context) error { return x.primary.Delete(ctx, pk, rk, opts) })
}

// checkRef refuses, before anything is sent, keys of a primary entity that this Inter
// cannot index: bad keys, and a PartitionKey inside the key space of an index partition
// that shares the primary's table.
func (x *Inter[T]) checkRef(pk, rk string) error {
	if pk == "" {
		return errs.Invalid("PartitionKey", "is empty: the index partitions are named after it")
	}
	if err := codec.ValidateKey("PartitionKey", pk); err != nil {
		return err
	}
	if err := codec.ValidateKey("RowKey", rk); err != nil {
		return err
	}
	for _, ix := range x.idx {
		if !ix.shared {
			continue
		}
		// The copies of partition P live in "<name>_P" of the same table: a primary stored
		// there would be overwritten by the copies of P, and removed with them. Another
		// index set over the same table (InterOptions.Kind) has names this one does not
		// know, so while any index shares the table, the whole "<letters and digits>_"
		// key space of index partitions is closed to primaries.
		if name, _, ok := strings.Cut(pk, sep); ok && isIndexName(name) {
			return errs.Invalid("PartitionKey", "%q starts with %q, the form of the index partitions in table %q (index %q is stored there): primaries may not enter it (store the indexes in another table with Index.Table)", pk, name+sep, x.primary.Name(), ix.Name)
		}
	}
	return nil
}

// isIndexName reports whether s has the form of an index name: 1 to maxNameLen ASCII
// letters and digits.
func isIndexName(s string) bool {
	if s == "" || len(s) > maxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// write runs the three steps of an eventually consistent write: the safety message
// (invisible for SafetyDelay), the primary write (bounded to half of it), the prompt
// message.
func (x *Inter[T]) write(ctx context.Context, pk, rk string, do func(context.Context) error) (err error) {
	ctx, span := telemetry.Start(ctx, "secondaryindex.write", telemetry.KeyTable.String(x.primary.Name()), telemetry.KeyKind.String(x.opts.Kind))
	defer func() { telemetry.End(span, err) }()
	wctx := ctx
	if x.safetyOn {
		// The Settle/2 protocol (internal/settle): one deadline, taken before the safety
		// message is built, bounds its enqueue and the write together. The message becomes
		// visible SafetyDelay after it is stored, which is after this moment, so the write
		// can never land after it ran (however slow the enqueue or its response).
		var cancel context.CancelFunc
		wctx, cancel = x.safety.Write(ctx)
		defer cancel()
		if err := x.enqueue(wctx, pk, rk, x.safety.Settle()); err != nil {
			return err
		}
	}
	if err := do(wctx); err != nil {
		if errors.Is(err, repo.ErrOutcomeUnknown) || errors.Is(err, repo.ErrNotFound) {
			// The write may have landed (its response was lost), or the primary is gone
			// (a retried delete whose first try landed): without a safety message nothing
			// else would reconcile its copies, so announce it anyway. One enqueue.
			if nerr := x.Notify(ctx, pk, rk); nerr != nil {
				return errors.Join(err, nerr)
			}
		}
		return err // the safety message, if any, finds nothing to change
	}
	if err := x.hook("written"); err != nil {
		return err
	}
	err = x.Notify(ctx, pk, rk)
	if err == nil {
		return nil
	}
	if x.opts.SafetyDelay > 0 {
		// The write is done and the safety message will reconcile it: report nothing, so
		// that the caller does not repeat a write that succeeded.
		x.opts.Table.Logger.Warn("secondaryindex: prompt reconciliation not enqueued; the safety message will run it",
			zap.String("table", x.primary.Name()), zap.String("partitionKey", pk), zap.String("rowKey", rk),
			zap.Duration("after", x.opts.SafetyDelay), zap.Error(err))
		return nil
	}
	return fmt.Errorf("secondaryindex: %s/%s was written but its reconciliation could not be enqueued (call Notify): %w", pk, rk, err)
}

// Notify enqueues a reconciliation of the primary entity (pk, rk), visible at once: what
// every write of this Inter does last, and what to call after writing the primary table
// another way.
//
// Errors: errs.ErrInvalidInput (bad keys; nothing sent), and those of queueworker.Enqueue.
func (x *Inter[T]) Notify(ctx context.Context, pk, rk string) error {
	if err := x.checkRef(pk, rk); err != nil {
		return err
	}
	return x.enqueue(ctx, pk, rk, 0)
}

func (x *Inter[T]) enqueue(ctx context.Context, pk, rk string, delay time.Duration) error {
	_, err := queueworker.Enqueue(ctx, x.queue, x.opts.Kind, "", Ref{PartitionKey: pk, RowKey: rk},
		&queueworker.EnqueueOptions{VisibilityDelay: delay})
	return err
}

// Register registers the reconciliation handler for Kind on r, the maintenance jobs'
// handlers for BackfillKind, VerifyKind and RepairKind (see StartBackfill, StartVerify,
// StartRepair), and, when Kind is the
// default, for the default kind of earlier releases ("secondaryindex:<table>"), so that
// messages enqueued before an upgrade are still handled. The handler calls Reconcile; a
// message that can never succeed (keys or a stored value that cannot be indexed) is
// cancelled into the poison queue, any other failure is retried by the worker.
//
// Errors: those of queueworker.Handle (a kind already registered).
func (x *Inter[T]) Register(r *queueworker.Registry) error {
	handle := func(ctx context.Context, m *queueworker.Message[Ref]) error {
		err := x.Reconcile(ctx, m.Payload.PartitionKey, m.Payload.RowKey)
		if errors.Is(err, repo.ErrInvalidInput) {
			return queueworker.Cancel(err)
		}
		return err
	}
	if err := queueworker.Handle(r, x.opts.Kind, handle); err != nil {
		return err
	}
	if err := x.registerJobs(r); err != nil {
		return err
	}
	if x.opts.Kind == (*InterOptions)(nil).withDefaults(x.primary.Name()).Kind {
		return queueworker.Handle(r, legacyKind(x.primary.Name()), handle)
	}
	return nil
}

// Reconcile makes every index copy of the primary entity (pk, rk) match what the primary
// table holds now: it writes the copies of the current values, removes the copies of
// values the entity no longer has, and removes every copy of an entity that is gone. It
// trusts nothing but the tables, so any number of calls for any entities, duplicated,
// reordered, concurrent or replayed long after, leave the copies of the last state of
// each entity. It is the message handler's body, and safe to call directly.
//
// Per index it reads the index's ref row (which copy is written, from which version of
// the primary), then the primary, and, unless the ref records that very version, runs one
// entity group transaction in the index partition: the new copy, the removal of the old
// one and the ref, conditional on the ref's ETag (or inserting the first ref). Refs are
// never deleted: an entity without a copy keeps a tombstone ref (see CollectTombstones).
// A concurrent reconciliation of the same entity therefore makes one of them start over
// from fresh reads, and the one whose primary read is newer always commits last.
//
// Errors: errs.ErrInvalidInput (bad keys or a PartitionKey inside an index's key space, nothing
// sent; or a stored value, or a partition key, that an index cannot hold: the other
// indexes are still reconciled), errs.ErrTransient (also when concurrent reconciliations
// kept winning until the retry policy gave up), *repo.Error.
func (x *Inter[T]) Reconcile(ctx context.Context, pk, rk string) (err error) {
	ctx, span := telemetry.Start(ctx, "secondaryindex.reconcile", telemetry.KeyTable.String(x.primary.Name()), telemetry.KeyCount.Int(len(x.idx)))
	defer func() { telemetry.End(span, err) }()
	if err := x.checkRef(pk, rk); err != nil {
		return err
	}
	op := retry.Op{Name: "reconcile index", Resource: x.primary.Name(), PartitionKey: pk, RowKey: rk, SensitiveKeys: true} // it reads and writes copies
	var bad error
	err = retry.Optimistic(ctx, x.retry, op, func(ctx context.Context, _ int) error {
		if age := x.opts.TombstoneAge; age > 0 {
			// No attempt outlives a tombstone it could have read as absent (see
			// CollectTombstones).
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, age/2)
			defer cancel()
		}
		bad = nil
		parts := make([]string, len(x.idx))
		refs := make([]*refRow, len(x.idx))
		for i, ix := range x.idx {
			p, err := ix.partition(pk)
			if err != nil {
				// This index can hold no copy of the partition (its name and the key
				// exceed the key limit); the other indexes are still reconciled.
				bad = errors.Join(bad, err)
				continue
			}
			parts[i] = p
			// The ref is read before the primary: a reconciliation that commits after
			// another has therefore read a primary at least as new as the other's.
			ref, err := ix.refs.Get(ctx, p, refKey(rk))
			switch {
			case errors.Is(err, repo.ErrNotFound):
			case err != nil:
				return err
			default:
				refs[i] = &ref
			}
		}
		cur, err := x.primary.Get(ctx, pk, rk)
		var curp *T
		switch {
		case errors.Is(err, repo.ErrNotFound):
		case err != nil:
			return err
		default:
			curp = &cur
		}
		if err := x.hook("read"); err != nil {
			return err
		}
		for i, ix := range x.idx {
			if parts[i] == "" {
				continue // refused above
			}
			err := x.reconcileIndex(ctx, ix, parts[i], rk, curp, refs[i])
			if errors.Is(err, repo.ErrInvalidInput) {
				bad = errors.Join(bad, err)
				continue
			}
			if err != nil {
				return err
			}
			if err := x.hook("index " + ix.Name + " done"); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return bad
}

// reconcileIndex brings one index's copy of the entity rk (cur, nil if it is gone) in
// line, given its ref (nil if none).
func (x *Inter[T]) reconcileIndex(ctx context.Context, ix *interIndex[T], part, rk string, cur *T, ref *refRow) error {
	want, etag := "", ""
	var invalid error
	if cur != nil {
		etag = x.c.ETag(cur)
		val, err := ix.value(cur)
		if err == nil && val != "" {
			want, err = ix.copyKey(val, rk)
		}
		if err != nil {
			// Written around this package: the entity cannot have a copy in this index.
			// Remove the old one, and report it.
			want, invalid = "", err
		}
	}
	have := ""
	if ref != nil {
		have = ref.Key
	}
	// The ref is stored data: the copy it names is deleted below only if its key is a
	// copy key of this very entity (value, rk); a forged ref naming another entity's
	// copy (or a ref) is rewritten and that row left alone.
	forged := have != "" && !isCopyKeyOf(have, rk)
	if forged {
		x.opts.Table.Logger.Warn("secondaryindex: a ref names a row that is not a copy of its entity; the row is left alone and the ref rewritten",
			zap.String("index", ix.Name), zap.String("partitionKey", part), zap.String("rowKey", rk))
	}
	// Up to date only when the ref records this very version of the primary (its ETag, or
	// "" for a primary that is gone). A ref is never deleted: a primary without a copy in
	// this index leaves a tombstone (Key ""), and even the first reconciliation of an
	// entity that has none writes one. Every decision therefore rests on a ref version
	// that a concurrent reconciliation must change to decide otherwise, and a slow
	// reconciliation that read an older state fails its condition and starts over
	// (never an insert that succeeds because a ref was deleted meanwhile: the ABA of
	// issue 15, defect 1).
	if ref != nil && want == have && ref.SourceETag == etag && !forged {
		return invalid // up to date
	}
	var acts []repo.Action
	var dropAt = -1
	if ref == nil {
		acts = append(acts, ix.refs.InsertAction(&refRow{PartitionKey: part, RowKey: refKey(rk), Key: want, SourceETag: etag}))
	} else {
		next := *ref // keeps ref's ETag: the update is conditional on it
		next.Key, next.SourceETag = want, etag
		acts = append(acts, ix.refs.UpdateAction(&next, nil))
	}
	if want != "" {
		e, err := project(x.c, cur, part, want, ix.props)
		if err != nil {
			return err
		}
		acts = append(acts, ix.copies.UpsertAction(e, &repo.UpsertOptions{}))
	}
	if have != "" && have != want && !forged {
		dropAt = len(acts)
		acts = append(acts, ix.copies.DeleteAction(part, have, nil))
	}
	// The old copy goes apart only on a store that cannot delete its key in a transaction
	// (Azurite, for U+2028 or U+2029; see the package documentation).
	_, err := repo.SubmitOrSplit(ctx, acts...)
	if errors.Is(err, repo.ErrOutcomeUnknown) {
		// A retried transaction that cannot tell whether its first attempt landed: read
		// again and decide again (the ref says what is written).
		return retry.Again(err)
	}
	var ae *repo.ActionError
	if err != nil && errors.As(err, &ae) {
		switch {
		case ae.Index == dropAt && errors.Is(err, repo.ErrNotFound):
			// The old copy was removed by hand: finish without it.
			_, err = repo.Submit(ctx, acts[:dropAt]...)
			if errors.Is(err, repo.ErrOutcomeUnknown) || (err != nil && errors.As(err, &ae) && ae.Index == 0) {
				return retry.Again(err)
			}
		case ae.Index == 0:
			return retry.Again(err) // another reconciliation moved the ref: start over
		}
	}
	if err != nil {
		return err
	}
	return invalid
}

// CollectTombstones removes, from every index partition of the primary partition pk, the
// tombstones older than InterOptions.TombstoneAge: the refs of entities that have no copy
// in that index (deleted, or without a value), which reconciliations keep instead of
// deleting so that a slow reconciliation cannot commit a copy of a deleted entity (its
// conditional write meets the tombstone and it starts over). Each is deleted conditional
// on the ETag read, so a tombstone reconciled meanwhile stays. Run it now and then (a
// daily job per partition is plenty); it returns how many it removed.
//
// Cost: 1 range query per index (the partition's refs, 1 per 1,000) and 1 delete per
// tombstone removed.
//
// Errors: errs.ErrInvalidInput (a bad key; nothing sent), errs.ErrTransient, *repo.Error.
func (x *Inter[T]) CollectTombstones(ctx context.Context, pk string) (int, error) {
	if err := x.checkRef(pk, ""); err != nil {
		return 0, err
	}
	if x.opts.TombstoneAge < 0 {
		return 0, nil
	}
	cutoff := x.now().Add(-x.opts.TombstoneAge)
	removed := 0
	var bad error
	for _, ix := range x.idx {
		part, err := ix.partition(pk)
		if err != nil {
			bad = errors.Join(bad, err) // this index holds nothing for pk
			continue
		}
		refs, err := ix.refs.Collect(ctx, repo.Query{Filter: filter.RowKeyRange(part, refPrefix, lowestCopy)})
		if err != nil {
			return removed, err
		}
		for _, ref := range refs {
			if ref.Key != "" || !ref.Timestamp.Before(cutoff) {
				continue
			}
			err := ix.refs.Delete(ctx, part, ref.RowKey, &repo.DeleteOptions{ETag: ref.ETag})
			switch {
			case err == nil:
				removed++
			case errors.Is(err, repo.ErrPreconditionFailed), errors.Is(err, repo.ErrNotFound), errors.Is(err, repo.ErrOutcomeUnknown):
				// Reconciled or collected meanwhile (or maybe by this call): leave it.
			default:
				return removed, err
			}
		}
	}
	return removed, bad
}

// ReadOptions configures the reads (Find, Range, Prefix) of an Inter or an Intra. nil
// means the zero value: no verification.
//
// For an Intra, Verify is a promise already kept and costs nothing: every copy is written
// in the same entity group transaction as its primary, so a hit always has the value and
// holds every property (with the ETag of the copy read, which Update accepts). The one
// exception is an index with Properties, whose copies carry only some properties and
// need not carry the primary's value: Intra cannot check them against the primary, and
// Verify on such an index is refused with errs.ErrInvalidInput before anything is sent.
type ReadOptions struct {
	// Verify checks every hit against the primary (one point query per hit, at most
	// Options.Concurrency at once): a copy whose entity is gone or no longer has the value
	// is dropped (and a reconciliation of it enqueued), and the others are returned as
	// the primary holds them, with every property and the primary's ETag. Without Verify a
	// hit is the copy as the worker last wrote it: possibly stale, with only the index's
	// properties, and no ETag of the primary; a copy of an index with Properties carries
	// in its ETag field a mark (not an ETag) that Update refuses, since writing it back
	// would erase the properties the copy leaves out. (A T without an ETag field cannot
	// carry the mark.)
	Verify bool
}

// partialMark starts the ETag field of a hit read without Verify from an index whose copies
// carry only some properties; the index's name follows. No service ETag has this form.
const partialMark = "tablepatterns-partial-copy:"

// hit is one copy found by a read, and what verifying it gave.
type hit[T any] struct {
	v     T
	err   error
	value string
	rk    string
	stale bool
}

// Lookup returns the entity of partition pk whose value in index is value (normalized by
// the index's Normalize), as the primary table holds it: the first hit of Find with
// Verify (one range query over that value's copies, plus one point query per hit), so the
// entity returned has the value now, with every property and its ETag. Copies whose
// primary is gone or no longer has the value are skipped, whatever their body holds.
//
// Errors: errs.ErrNotFound; errs.ErrInvalidInput (an index with duplicates, as Intra.Lookup
// refuses it: use Find; nothing sent); and those of Find.
func (x *Inter[T]) Lookup(ctx context.Context, pk, index, value string) (T, error) {
	if ix := x.named[index]; ix != nil && ix.AllowDuplicates {
		var zero T
		return zero, errs.Invalid(fmt.Sprintf("index %q", index), "allows duplicates: use Find")
	}
	for v, err := range x.Find(ctx, pk, index, value, &ReadOptions{Verify: true}) {
		return v, err
	}
	var zero T
	// Not the value: it is the key of the copy looked for (lookupError).
	return zero, &lookupError{index: index, pk: pk, err: &errs.ServiceError{Op: "index lookup", Resource: x.primary.Name(), PartitionKey: pk, Kind: repo.ErrNotFound,
		Err: errors.New("no entity holds the value")}}
}

// Find returns the entities of partition pk whose value in index is value, with one
// range query in the index partition (the copies of one value; usually one). Several hits
// for a unique value mean that the worker has not caught up yet or that the primary data
// holds duplicates: ask for Verify to get only entities that still hold the value.
//
// Errors (yielded): errs.ErrInvalidInput (unknown index, empty value; nothing sent),
// errs.ErrTransient, *repo.Error.
func (x *Inter[T]) Find(ctx context.Context, pk, index, value string, opts *ReadOptions) iter.Seq2[T, error] {
	ix, part, err := x.target(pk, index)
	if err == nil {
		value = ix.norm(value)
	}
	if err == nil && value == "" {
		err = errs.Invalid(fmt.Sprintf("index %q", index), "the value is empty: entities without a value have no entry")
	}
	if err != nil {
		return fail[T](err)
	}
	lo, hi, _ := keys.Escaped().Range(value)
	return x.scan(ctx, ix, pk, filter.RowKeyRange(part, lo, hi), opts)
}

// Range returns the entities of partition pk whose value in index is in [from, to), in
// value order, with one range query per 1,000 copies. An empty from or to leaves that end
// open.
//
// Errors (yielded): errs.ErrInvalidInput (unknown index; nothing sent), errs.ErrTransient,
// *repo.Error.
func (x *Inter[T]) Range(ctx context.Context, pk, index, from, to string, opts *ReadOptions) iter.Seq2[T, error] {
	ix, part, err := x.target(pk, index)
	if err != nil {
		return fail[T](err)
	}
	lo, hi := lowestCopy, ""
	if from = ix.norm(from); from != "" {
		lo = keys.Join(from)
	}
	if to = ix.norm(to); to != "" {
		hi = keys.Join(to)
	}
	return x.scan(ctx, ix, pk, filter.RowKeyRange(part, lo, hi), opts)
}

// Prefix returns the entities of partition pk whose value in index starts with prefix,
// in value order (the guide's "email addresses starting with 'a'"). An empty prefix
// returns every entity with a value in the index.
//
// Errors (yielded): as Range.
func (x *Inter[T]) Prefix(ctx context.Context, pk, index, prefix string, opts *ReadOptions) iter.Seq2[T, error] {
	if prefix == "" {
		return x.Range(ctx, pk, index, "", "", opts)
	}
	ix, part, err := x.target(pk, index)
	if err != nil {
		return fail[T](err)
	}
	return x.scan(ctx, ix, pk, filter.RowKeyPrefix(part, keys.Join(ix.norm(prefix))), opts)
}

func (x *Inter[T]) target(pk, index string) (*interIndex[T], string, error) {
	ix := x.named[index]
	if ix == nil {
		return nil, "", errs.Invalid("index", "%q is not an index of this table", index)
	}
	if pk == "" {
		return nil, "", errs.Invalid("PartitionKey", "is empty: the index partitions are named after it")
	}
	part, err := ix.partition(pk)
	return ix, part, err
}

// scan reads the copies selected by f page by page and yields their entities, verified
// against the primary if asked.
func (x *Inter[T]) scan(ctx context.Context, ix *interIndex[T], pk string, f filter.Expr, opts *ReadOptions) iter.Seq2[T, error] {
	verify := opts != nil && opts.Verify
	return func(yield func(T, error) bool) {
		var zero T
		pager := ix.copies.Pages(repo.Query{Filter: f})
		for pager.More() {
			page, err := pager.Next(ctx)
			if err != nil {
				yield(zero, err)
				return
			}
			hits := make([]hit[T], 0, len(page.Items))
			for i := range page.Items {
				h, ok := x.decodeCopy(ix, &page.Items[i], pk)
				if ok {
					hits = append(hits, h)
				}
			}
			if verify {
				x.verify(ctx, ix, pk, hits)
			}
			for _, h := range hits {
				if h.stale {
					continue
				}
				if !yield(h.v, h.err) || h.err != nil {
					return
				}
			}
		}
	}
}

// decodeCopy turns a copy back into a T with the primary's keys. Rows that are not copies
// (none should be in a copy range) are skipped. A copy of an index with Properties gets
// partialMark and the index's name as its ETag, which Update refuses; other copies get
// none. A copy whose body does not decode keeps the error: verify replaces it by the
// primary, which needs only the copy's key.
func (x *Inter[T]) decodeCopy(ix *interIndex[T], e *codec.Entity, pk string) (hit[T], bool) {
	parts, err := keys.Split(e.RowKey)
	if err != nil || len(parts) != 2 {
		return hit[T]{}, false
	}
	h := hit[T]{value: parts[0], rk: parts[1]}
	e.PartitionKey, e.RowKey, e.ETag = pk, parts[1], ""
	body, err := codec.EncodeEntity(e)
	if err == nil {
		err = x.c.Decode(body, &h.v)
	}
	if ix.props != nil {
		x.c.SetETag(&h.v, partialMark+ix.Name)
	}
	h.err = err
	return h, true
}

// verify replaces each hit by its primary, or marks it stale, with at most
// Options.Concurrency point queries at once.
func (x *Inter[T]) verify(ctx context.Context, ix *interIndex[T], pk string, hits []hit[T]) {
	sem := make(chan struct{}, x.opts.Table.Concurrency)
	var wg sync.WaitGroup
	for i := range hits {
		h := &hits[i]
		// Only the copy's key is needed: a row whose body is forged or corrupt (h.err from
		// decodeCopy) is judged by its primary like any other. A key no primary can have
		// is no copy of any entity: dropped, with nothing to reconcile.
		if codec.ValidateKey("RowKey", h.rk) != nil {
			h.stale = true
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			cur, err := x.primary.Get(ctx, pk, h.rk)
			switch {
			case errors.Is(err, repo.ErrNotFound):
				h.stale = true
			case err != nil:
				h.err = err
			case ix.valueOf(&cur) != h.value:
				h.stale = true
			default:
				h.v, h.err = cur, nil
			}
			if h.stale {
				// Read repair: the copy outlived its entity's state; have it reconciled.
				if err := x.Notify(ctx, pk, h.rk); err != nil {
					x.opts.Table.Logger.Warn("secondaryindex: could not enqueue the repair of a stale copy",
						zap.String("index", ix.Name), zap.String("partitionKey", pk), zap.String("rowKey", h.rk), zap.Error(err))
				}
			}
		}()
	}
	wg.Wait()
}
