package indexentity

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

// maxRounds bounds the re-reads of one Reconcile while the entity keeps changing under
// it; past it the message is retried later.
const maxRounds = 8

// EventualOptions configures an Eventual index. nil means the zero value, whose every
// field is its documented default.
type EventualOptions struct {
	// Normalize, if set, maps every value before it is used: the value of an entity on
	// every write and reconciliation, and the value asked for by Keys and Lookup
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
	// Concurrency bounds the point queries of Lookup. Defaults to DefaultConcurrency.
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
// the entity and makes the lists agree with it. Lookups verify every hit against the
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

	// hook, set by tests, runs between the steps of a write; an error stops the write there,
	// as a crash would.
	hook func(ctx context.Context, step string) error
	// now is the clock of Handle (tests move it).
	now func() time.Time
}

// Change is the payload of an Eventual index's messages: an entity whose indexed value may
// have changed. The handler trusts only the keys; everything else is a hint, since the
// message may be duplicated, reordered or replayed.
type Change struct {
	// PartitionKey and RowKey identify the entity.
	PartitionKey string `json:"pk"`
	RowKey       string `json:"rk"`
	// Value is the value the write gives the entity, and Deleted whether it deletes the
	// entity: the state the handler waits for (see EventualOptions.Settle).
	Value   string `json:"value,omitempty"`
	Deleted bool   `json:"deleted,omitempty"`
	// Old lists the values the entity had before the write, whose lists may still hold
	// its key.
	Old []string `json:"old,omitempty"`
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
		store: store, queue: queue, settle: w, conc: conc, conflict: cp, now: time.Now,
	}, nil
}

// Table returns the repository of the indexed entities, for reads. Writes through it
// bypass the index.
func (ix *Eventual[T]) Table() *repo.Table[T] { return ix.primary }

// Store returns the store of the lists.
func (ix *Eventual[T]) Store() Store { return ix.store }

// Kind returns the kind of the index's messages, "indexentity.change.<table>.<name>".
func (ix *Eventual[T]) Kind() string { return jobKind("change", ix.primary.Name(), ix.name) }

// legacyKinds are the kinds of the index's messages in earlier releases, which named no
// table: "indexentity.change.<name>" (0.10) and "indexentity/<name>" (0.9).
func (ix *Eventual[T]) legacyKinds() []string {
	return []string{"indexentity.change." + ix.name, "indexentity/" + ix.name}
}

// Register registers Handle for the index's messages under Kind in r, the maintenance
// jobs' handlers under BackfillKind, VerifyKind and RepairKind (see StartBackfill,
// StartVerify, StartRepair), and Handle under the kinds of earlier releases
// ("indexentity.change.<name>", "indexentity/<name>"), so that messages enqueued before an
// upgrade are still handled. Those kinds name no table: when two indexes of one name on
// two tables share a registry, the first registered takes them (the handler re-reads its
// own table, so a message of the other table's index changes nothing wrong there, and
// that index's change is lost: run its repair after the upgrade).
//
// Errors: errs.ErrInvalidInput when r is nil or one of the index's own kinds is already
// registered.
func (ix *Eventual[T]) Register(r *queueworker.Registry) error {
	if err := queueworker.Handle(r, ix.Kind(), ix.Handle); err != nil {
		return err
	}
	if err := ix.jobs().Register(r); err != nil {
		return err
	}
	for _, k := range ix.legacyKinds() {
		// The only failure left is "already registered": another index of this name.
		_ = queueworker.Handle(r, k, ix.Handle)
	}
	return nil
}

func (ix *Eventual[T]) step(ctx context.Context, name string) error {
	if ix.hook != nil {
		return ix.hook(ctx, name)
	}
	return nil
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

// enqueue stores the change message: the first step of every write that changes the index.
func (ix *Eventual[T]) enqueue(ctx context.Context, c Change) error {
	if err := ix.step(ctx, "enqueue"); err != nil {
		return err
	}
	_, err := queueworker.Enqueue(ctx, ix.queue, ix.Kind(), "", c, nil)
	return err
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

// Insert enqueues a Change and then inserts v; the worker then lists v under its value.
// An entity whose value is "" is inserted without a message. On success v's ETag field
// holds its new ETag.
//
// A stop between the two steps leaves a message about an entity that was not written: the
// worker reconciles what it finds (nothing changes) once the message is Settle old.
//
// Errors: errs.ErrInvalidInput before any request (v breaks a limit, its value cannot be
// indexed by the store); the errors of queueworker.Enqueue; errs.ErrAlreadyExists;
// errs.ErrTransient, *repo.Error.
func (ix *Eventual[T]) Insert(ctx context.Context, v *T) error {
	k, err := ix.check(v)
	if err != nil {
		return err
	}
	value := ix.value(v)
	if value == "" {
		return ix.primary.Insert(ctx, v)
	}
	wctx, cancel := ix.writeCtx(ctx)
	defer cancel()
	if err := ix.enqueue(wctx, Change{PartitionKey: k.PartitionKey, RowKey: k.RowKey, Value: value}); err != nil {
		return err
	}
	if err := ix.step(wctx, "write"); err != nil {
		return err
	}
	return ix.primary.Insert(wctx, v)
}

// Update replaces the stored entity with v. When the indexed value changes it enqueues a
// Change (naming the old value) first; an unchanged value needs no message. When v
// carries an ETag the update is conditional on it; without one it is conditional on the
// version Update read, retried when another writer got in between. On success v's ETag
// field holds the new ETag. A write whose outcome repo cannot prove
// (errs.ErrOutcomeUnknown) is decided by repo.Table.DecideOutcome: the entity still at the
// version read, it starts over; gone or at another version (the write may have landed
// before another writer's change), the errs.ErrOutcomeUnknown error is returned, never
// success nor errs.ErrNotFound.
//
// Errors: errs.ErrInvalidInput before any request; errs.ErrNotFound; errs.ErrPreconditionFailed;
// errs.ErrOutcomeUnknown (see above); the errors of queueworker.Enqueue; errs.ErrTransient,
// *repo.Error.
func (ix *Eventual[T]) Update(ctx context.Context, v *T) error {
	k, err := ix.check(v)
	if err != nil {
		return err
	}
	callerETag := ix.codec.ETag(v)
	value := ix.value(v)
	err = ix.loop(ctx, "update", k, func(ctx context.Context) error {
		cur, err := ix.primary.Get(ctx, k.PartitionKey, k.RowKey)
		if err != nil {
			return err
		}
		if callerETag != "" && ix.codec.ETag(&cur) != callerETag {
			return errs.Precondition("update", ix.primary.Name(), k.PartitionKey, k.RowKey, staleETag)
		}
		ix.codec.SetETag(v, ix.codec.ETag(&cur))
		wctx, cancel := ix.writeCtx(ctx)
		defer cancel()
		if old := ix.value(&cur); old != value {
			c := Change{PartitionKey: k.PartitionKey, RowKey: k.RowKey, Value: value, Deleted: false}
			if old != "" {
				c.Old = []string{old}
			}
			if err := ix.enqueue(wctx, c); err != nil {
				return err
			}
		}
		if err := ix.step(wctx, "write"); err != nil {
			return err
		}
		read := ix.codec.ETag(v)
		err = ix.primary.Update(wctx, v, nil)
		if errors.Is(err, repo.ErrOutcomeUnknown) {
			return ix.primary.DecideOutcome(ctx, err, k.PartitionKey, k.RowKey, read)
		}
		if callerETag == "" && errors.Is(err, repo.ErrPreconditionFailed) {
			return retry.Again(err)
		}
		return err
	})
	if err != nil {
		ix.codec.SetETag(v, callerETag)
	}
	return err
}

// Delete enqueues a Change (naming the entity's value) and then deletes the entity,
// conditional on opts.ETag when set, else on the version it read. A delete whose outcome
// repo cannot prove (errs.ErrOutcomeUnknown) is decided by repo.Table.DecideOutcome: the
// entity still at the version read, it starts over; gone or at another version (another
// writer may have deleted it, or re-created it after this delete landed), the
// errs.ErrOutcomeUnknown error is returned, never success.
//
// Errors: errs.ErrInvalidInput (keys; nothing sent); errs.ErrNotFound; errs.ErrPreconditionFailed;
// errs.ErrOutcomeUnknown (see above); the errors of queueworker.Enqueue; errs.ErrTransient,
// *repo.Error.
func (ix *Eventual[T]) Delete(ctx context.Context, pk, rk string, opts *repo.DeleteOptions) error {
	k := Key{pk, rk}
	if err := ix.checkKey(k); err != nil {
		return err
	}
	var want string
	if opts != nil {
		want = opts.ETag
	}
	return ix.loop(ctx, "delete", k, func(ctx context.Context) error {
		cur, err := ix.primary.Get(ctx, pk, rk)
		if err != nil {
			return err
		}
		etag := ix.codec.ETag(&cur)
		if want != "" && etag != want {
			return errs.Precondition("delete", ix.primary.Name(), pk, rk, staleETag)
		}
		wctx, cancel := ix.writeCtx(ctx)
		defer cancel()
		if old := ix.value(&cur); old != "" {
			if err := ix.enqueue(wctx, Change{PartitionKey: pk, RowKey: rk, Deleted: true, Old: []string{old}}); err != nil {
				return err
			}
		}
		if err := ix.step(wctx, "write"); err != nil {
			return err
		}
		err = ix.primary.Delete(wctx, pk, rk, &repo.DeleteOptions{ETag: etag})
		if errors.Is(err, repo.ErrOutcomeUnknown) {
			return ix.primary.DecideOutcome(ctx, err, pk, rk, etag)
		}
		if want == "" && errors.Is(err, repo.ErrPreconditionFailed) {
			return retry.Again(err)
		}
		return err
	})
}

// observed is what a reconciliation found the entity to be at its end.
type observed struct {
	found bool
	value string
}

func (ix *Eventual[T]) observe(ctx context.Context, k Key) (observed, error) {
	v, err := ix.primary.Get(ctx, k.PartitionKey, k.RowKey)
	if errors.Is(err, repo.ErrNotFound) {
		return observed{}, nil
	}
	if err != nil {
		return observed{}, err
	}
	return observed{found: true, value: ix.value(&v)}, nil
}

// Reconcile makes the lists agree with the entity k as it is now: it reads the entity,
// lists k under its value, removes k from the lists of every other value in old (the
// values it may have had), and reads the entity again; if it changed meanwhile it starts
// over, with the value it just listed added to old. Every step is idempotent, so
// Reconcile may run any number of times, concurrently, in any order, or stop anywhere and
// run again: the lists end up agreeing with the entity. It does not trust anything but k:
// the entity is the truth.
//
// The lists can only be cleaned of values named in old: that is why every write through
// Update and Delete names the value it replaces.
//
// Errors: errs.ErrInvalidInput (a bad key, or a stored value the store cannot index);
// the errors of repo.Table.Get and of the Store; an error when the entity changed more
// than 8 times during the call.
func (ix *Eventual[T]) Reconcile(ctx context.Context, k Key, old ...string) error {
	_, _, err := ix.reconcile(ctx, k, old)
	return err
}

// reporter is a Store that tells whether an Add or Remove wrote (TableStore, BlobStore).
type reporter interface {
	apply(ctx context.Context, value string, k Key, add bool) (bool, error)
}

// apply runs the store's Add (add) or Remove and reports whether it wrote (or may have).
// A Store that cannot tell is asked for the list first: one more read.
func (ix *Eventual[T]) apply(ctx context.Context, value string, k Key, add bool) (bool, error) {
	if r, ok := ix.store.(reporter); ok {
		return r.apply(ctx, value, k, add)
	}
	ks, err := ix.store.Keys(ctx, value)
	if err != nil {
		return false, err
	}
	if slices.Contains(ks, k) == add {
		return false, nil // already as asked
	}
	if add {
		return true, ix.store.Add(ctx, value, k)
	}
	return true, ix.store.Remove(ctx, value, k)
}

// reconcile is Reconcile; it also returns the entity as last observed and whether it
// wrote to the store.
func (ix *Eventual[T]) reconcile(ctx context.Context, k Key, old []string) (observed, bool, error) {
	if err := ix.checkKey(k); err != nil {
		return observed{}, false, err
	}
	wrote := false
	stale := slices.Clone(old)
	for range maxRounds {
		now, err := ix.observe(ctx, k)
		if err != nil {
			return observed{}, wrote, err
		}
		if now.value != "" {
			if err := ix.step(ctx, "add"); err != nil {
				return observed{}, wrote, err
			}
			w, err := ix.apply(ctx, now.value, k, true)
			wrote = wrote || w
			if err != nil {
				return observed{}, wrote, err
			}
		}
		slices.Sort(stale)
		stale = slices.Compact(stale)
		for _, u := range stale {
			if u == "" || u == now.value {
				continue
			}
			if err := ix.step(ctx, "remove"); err != nil {
				return observed{}, wrote, err
			}
			w, err := ix.apply(ctx, u, k, false)
			wrote = wrote || w
			if err != nil {
				return observed{}, wrote, err
			}
		}
		if now.value != "" {
			stale = append(stale, now.value)
		}
		again, err := ix.observe(ctx, k)
		if err != nil {
			return observed{}, wrote, err
		}
		if again == now {
			return now, wrote, nil
		}
	}
	return observed{}, wrote, fmt.Errorf("indexentity: %s (PartitionKey=%q, RowKey=%q) changed %d times during reconciliation; retry later", ix.primary.Name(), k.PartitionKey, k.RowKey, maxRounds)
}

// Handle is the queueworker handler of the index's messages: Reconcile with the message's
// old values and its intended value. If the entity is not (yet) in the state the message
// describes — the write has not landed, failed, or was overtaken by a later one — and the
// message is younger than Settle, it asks to see the message again later
// (queueworker.Snooze): by then the write has landed or never will. A value the store
// cannot index cancels the message (it goes to the poison queue).
//
// Errors: those of Reconcile, queueworker.Snooze and queueworker.Cancel.
func (ix *Eventual[T]) Handle(ctx context.Context, msg *queueworker.Message[Change]) error {
	c := msg.Payload
	old := slices.Clone(c.Old)
	if c.Value != "" {
		old = append(old, c.Value) // listed by an earlier reconciliation that lost the race
	}
	// The clock before the reads: "settled" must mean that the write's deadline had passed
	// before this reconciliation read the entity, so that the read saw the write if it
	// landed at all. Read afterwards, a slow reconciliation could judge settled a write
	// that landed after its read.
	started := ix.now()
	now, _, err := ix.reconcile(ctx, Key{c.PartitionKey, c.RowKey}, old)
	if errors.Is(err, errs.ErrInvalidInput) {
		return queueworker.Cancel(err)
	}
	if err != nil {
		return err
	}
	arrived := (c.Deleted && !now.found) || (!c.Deleted && now.found && now.value == c.Value)
	if d := ix.settle.Wait(arrived, msg.EnqueuedAt, msg.InsertionTime, started); d > 0 {
		return queueworker.Snooze(d)
	}
	return nil
}

// Keys returns the keys value's list holds, as the store has them: possibly stale
// (eventual consistency). Lookup verifies them.
//
// Errors: those of the Store.
func (ix *Eventual[T]) Keys(ctx context.Context, value string) ([]Key, error) {
	return ix.keys(ctx, ix.norm(value))
}

// keys is Keys for a normalized value.
func (ix *Eventual[T]) keys(ctx context.Context, value string) ([]Key, error) {
	if err := ix.store.Check(value); err != nil {
		return nil, err
	}
	return ix.store.Keys(ctx, value)
}

// Lookup returns the entities whose value is value, in PartitionKey, RowKey order: the list
// (one request), then the entities with point queries, at most Concurrency at once. Every
// entity is checked against the value, so a stale entry of the list (an entity renamed or
// deleted whose message the worker has not handled yet) is left out; an entity written
// moments ago may be missing until the worker catches up. An entry that names no possible
// entity (stored data: possibly forged) is skipped.
//
// Errors: errs.ErrInvalidInput (nothing sent); those of the Store and of repo.Table.Get.
func (ix *Eventual[T]) Lookup(ctx context.Context, value string) ([]T, error) {
	value = ix.norm(value)
	ks, err := ix.keys(ctx, value)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(ks, compareKeys)
	got, err := fetch(ctx, ix.primary, ks, ix.conc)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(got, func(v T) bool { return ix.value(&v) != value }), nil
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
