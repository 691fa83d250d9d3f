package indexentity

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// SamePartitionOptions configures a SamePartition index. nil means the zero value, whose
// every field is its documented default.
type SamePartitionOptions struct {
	// Normalize, if set, maps every value before it is used: the value of an entity on
	// every write, and the value asked for by IDs and Lookup. strings.ToLower makes an
	// index of emails find "ann@example.com" when asked for "Ann@Example.com". It must be a
	// pure function. Index entities are keyed by normalized values: changing Normalize
	// needs a rebuild of the index. nil keeps values as they are.
	Normalize func(value string) string
	// PageBytes is the most UTF-16 bytes of ids one index entity holds before the list
	// spills into the next entity. Defaults to DefaultPageBytes (64 KiB, the limit of a
	// string property); at least 64.
	PageBytes int
	// Concurrency bounds the point queries of Lookup. Defaults to DefaultConcurrency.
	Concurrency int
	// Conflict is the backoff of the read-modify-write loop when another writer changed an
	// index entity first. Zero fields take retry.Conflict()'s values; its Logger defaults
	// to the table's.
	Conflict retry.Policy
	// Queue carries the backfill jobs of StartBackfill and Register. Defaults to nil: no
	// jobs (BackfillPartition, Verify and Repair run from code all the same).
	Queue *queueworker.Client
}

// SamePartition is option 2 of the guide's index entities pattern: for each value of an
// indexed property (a last name) and each partition (a department), index entities in that
// same partition list the RowKeys (employee ids) of the entities with that value. Every
// write of an entity and of its index entities is one entity group transaction,
// conditional on the ETags read just before; when another writer got there first the
// write is planned again from a fresh read, with jittered backoff. See the package
// documentation for the layout, the consistency and the cost.
//
// Write entities only through Insert, Update and Delete: a write through the table alone
// leaves the index behind. A SamePartition is safe for concurrent use.
type SamePartition[T any] struct {
	primary  *repo.Table[T]
	codec    *codec.Codec[T]
	pages    pageStore
	name     string
	value    func(*T) string // normalized
	norm     func(string) string
	conc     int
	conflict retry.Policy
	lo, hi   string              // the RowKeys of this index's entities, in every partition
	queue    *queueworker.Client // SamePartitionOptions.Queue

	// afterSubmit, set by tests, replaces the outcome of each transaction (to play the
	// answers of a retried transaction whose first attempt landed).
	afterSubmit func(step string, err error) error
	// hook, set by tests, runs before each transaction is sent; an error stops the write
	// there, as a crash would.
	hook func(ctx context.Context, step string) error
}

const maxNameChars = 64

// NewSamePartition returns the option 2 index named name (e.g. "LastName": index entities
// have RowKeys "idx!<name>!<value>!<page>", escaped as codec/keys.Join does; 1 to 64
// characters) over the entities of table, by value (the indexed value of an entity, e.g.
// its last name; "" means not indexed; a pure function). The index entities live in
// table; the logger is the table's. Nothing is sent.
//
// Errors: errs.ErrInvalidInput when table or value is nil, T has no ETag field (the pattern
// relies on optimistic concurrency), name is empty or too long, or an option is out of
// range.
func NewSamePartition[T any](table *repo.Table[T], name string, value func(v *T) string, opts *SamePartitionOptions) (*SamePartition[T], error) {
	primary := table
	if primary == nil {
		return nil, errs.Invalid("table", "is nil")
	}
	if !primary.Codec().HasETag() {
		return nil, errs.Invalid("table", "entity type has no ETag field: the index entities pattern needs optimistic concurrency on the entity")
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	if value == nil {
		return nil, errs.Invalid("value", "is nil")
	}
	var o SamePartitionOptions
	if opts != nil {
		o = *opts
	}
	pageBytes, err := pageBytesOf(o.PageBytes, "SamePartitionOptions.PageBytes")
	if err != nil {
		return nil, err
	}
	conc, err := concurrencyOf(o.Concurrency, "SamePartitionOptions.Concurrency")
	if err != nil {
		return nil, err
	}
	conflict := conflictPolicy(o.Conflict, primary.Logger())
	if err := conflict.Validate(); err != nil {
		return nil, err
	}
	pagesTbl, err := repo.OfType[codec.Entity](primary)
	if err != nil {
		return nil, err
	}
	lo, hi, err := keys.Escaped().Range(tagIndex, name)
	if err != nil {
		return nil, err
	}
	return &SamePartition[T]{
		primary: primary, codec: primary.Codec(),
		pages: pageStore{tbl: pagesTbl, prop: "IDs", capacity: pageBytes},
		name:  name, value: normalized(value, o.Normalize), norm: normOf(o.Normalize),
		conc: conc, conflict: conflict, lo: lo, hi: hi, queue: o.Queue,
	}, nil
}

func checkName(name string) error {
	if name == "" || utf8.RuneCountInString(name) > maxNameChars || !utf8.ValidString(name) {
		return errs.Invalid("Name", "must be 1 to %d characters of valid UTF-8, got %q", maxNameChars, name)
	}
	return nil
}

func pageBytesOf(n int, field string) (int, error) {
	switch {
	case n == 0:
		return DefaultPageBytes, nil
	case n < minPageBytes || n > codec.MaxStringBytes:
		return 0, errs.Invalid(field, "must be between %d and %d (codec.MaxStringBytes), got %d", minPageBytes, codec.MaxStringBytes, n)
	}
	return n, nil
}

func concurrencyOf(n int, field string) (int, error) {
	switch {
	case n == 0:
		return DefaultConcurrency, nil
	case n < 1:
		return 0, errs.Invalid(field, "must be at least 1, got %d", n)
	}
	return n, nil
}

// Table returns the repository of the indexed entities, for reads. Writes through it
// bypass the index.
func (ix *SamePartition[T]) Table() *repo.Table[T] { return ix.primary }

// KeyRange returns the RowKeys [lo, hi) that this index's entities occupy in every
// partition. A query that reads the entities of a partition can leave them out with two
// range queries, or skip rows in that range; the indexed entities' RowKeys may not fall
// in it (Insert refuses them).
func (ix *SamePartition[T]) KeyRange() (lo, hi string) { return ix.lo, ix.hi }

// location returns where the pages of value live in partition pk, refusing a value whose
// index RowKey would break the 1 KiB key limit.
func (ix *SamePartition[T]) location(pk, value string) (location, error) {
	if err := checkValue(value); err != nil {
		return location{}, err
	}
	longest := keys.Join(tagIndex, ix.name, value, pageNumber(maxPages))
	if n := utf16Bytes(longest); n > codec.MaxKeyBytes {
		return location{}, errs.TooLarge("value", fmt.Sprintf("index %q: the index entity's RowKey (escaped \"idx!%s!<value>!<page>\") would exceed the key limit (UTF-16 bytes)", ix.name, ix.name), n, codec.MaxKeyBytes)
	}
	lo, hi, _ := keys.Escaped().Range(tagIndex, ix.name, value)
	return location{pk: pk, lo: lo, hi: hi, rowKey: func(n int) string {
		return keys.Join(tagIndex, ix.name, value, pageNumber(n))
	}}, nil
}

// check refuses, before any request, an entity this index cannot store.
func (ix *SamePartition[T]) check(v *T) (pk, rk string, err error) {
	if v == nil {
		return "", "", errs.Invalid("entity", "is nil")
	}
	if _, err := ix.codec.Encode(v); err != nil {
		return "", "", err
	}
	pk, rk = ix.codec.Keys(v)
	if err := ix.checkKeys(pk, rk); err != nil {
		return "", "", err
	}
	if value := ix.value(v); value != "" {
		if _, err := ix.location(pk, value); err != nil {
			return "", "", err
		}
	}
	return pk, rk, nil
}

func (ix *SamePartition[T]) checkKeys(pk, rk string) error {
	if err := checkKey(Key{pk, rk}); err != nil {
		return err
	}
	if rk >= ix.lo && (ix.hi == "" || rk < ix.hi) {
		// Not rk itself: a key in that range holds an indexed value.
		return errs.Invalid("RowKey", "lies in the RowKeys of index %q's entities [%q, %q)", ix.name, ix.lo, ix.hi)
	}
	return ix.pages.fits(rk)
}

// loop runs attempt until it succeeds or fails with an error it did not mark with retry.Again,
// with the conflict backoff between attempts.
func (ix *SamePartition[T]) loop(ctx context.Context, name, pk, rk string, attempt func(ctx context.Context) error) error {
	op := retry.Op{Name: "index entity " + name, Resource: ix.primary.Name(), PartitionKey: pk, RowKey: rk, SensitiveKeys: true} // an attempt's error may name an index entity
	return retry.Optimistic(ctx, ix.conflict, op, func(ctx context.Context, _ int) error { return attempt(ctx) })
}

func (ix *SamePartition[T]) submit(ctx context.Context, step string, actions []repo.Action) error {
	if ix.hook != nil {
		if err := ix.hook(ctx, step); err != nil {
			return err
		}
	}
	// Apart only on a store that cannot delete a key in a transaction (Azurite, for U+2028
	// or U+2029; see the package documentation).
	_, err := repo.SubmitOrSplit(ctx, actions...)
	if ix.afterSubmit != nil {
		err = ix.afterSubmit(step, err)
	}
	return err
}

// Insert adds v and lists its RowKey in the index entity of its value, in one entity group
// transaction (the design guide's option 2, steps 1 to 3): read the value's index entities, then
// insert v and update the index entity conditional on its ETag (or insert it: the first
// writer of a value creates it); when another writer changed or created it first, read
// again and retry with jittered backoff. No id is lost however many writers add entities
// with the same value at once. An entity whose value is "" is inserted without an index
// entry. On success v's ETag field holds its new ETag.
//
// Errors: errs.ErrInvalidInput before any request (v breaks a limit, its RowKey lies in the
// index's KeyRange, its value would make an index RowKey over 1 KiB, its id is longer than
// a page); errs.ErrAlreadyExists (an *repo.ActionError) when v exists; errs.ErrOutcomeUnknown
// when a retried transaction may have landed (repo.DecideOutcome starts over only when the
// value's index entity, updated conditionally, is still at the version read; an absent v
// proves nothing: another writer may have deleted it since); errs.ErrTransient wrapping
// errs.ErrPreconditionFailed when contention outlasted the Conflict policy; errs.ErrTransient,
// *repo.Error.
func (ix *SamePartition[T]) Insert(ctx context.Context, v *T) error {
	pk, rk, err := ix.check(v)
	if err != nil {
		return err
	}
	value := ix.value(v)
	return ix.loop(ctx, "insert", pk, rk, func(ctx context.Context) error {
		actions := []repo.Action{ix.primary.InsertAction(v)}
		if value != "" {
			add, err := ix.planAdd(ctx, pk, value, rk)
			if err != nil {
				return err
			}
			actions = append(actions, add...)
		}
		err := ix.submit(ctx, "insert", actions)
		if errors.Is(err, repo.ErrOutcomeUnknown) {
			return repo.DecideOutcome(ctx, err, actions...)
		}
		if actionConflict(err, 1) {
			return retry.Again(err)
		}
		return err
	})
}

func (ix *SamePartition[T]) planAdd(ctx context.Context, pk, value, rk string) ([]repo.Action, error) {
	loc, err := ix.location(pk, value)
	if err != nil {
		return nil, err
	}
	pages, err := ix.pages.read(ctx, loc)
	if err != nil {
		return nil, err
	}
	a, ok, err := ix.pages.planAdd(loc, pages, rk)
	if err != nil {
		return nil, err
	}
	if !ok {
		// Listed already (a stale entry, or an earlier attempt of this write): the entity
		// write that goes with it must not succeed unless the entry is still listed when
		// it is applied, or a concurrent delete that removes the entry would leave the
		// entity unlisted.
		if a, ok = ix.pages.planGuard(loc, pages, rk); !ok {
			return nil, nil
		}
	}
	return []repo.Action{a}, nil
}

func (ix *SamePartition[T]) planRemove(ctx context.Context, pk, value, rk string) ([]repo.Action, error) {
	loc, err := ix.location(pk, value)
	if err != nil {
		return nil, err
	}
	pages, err := ix.pages.read(ctx, loc)
	if err != nil {
		return nil, err
	}
	return ix.pages.planRemove(loc, pages, rk), nil
}

// Update replaces the stored entity with v. When v's indexed value differs from the stored
// one (a rename: Jones becomes Smith), one entity group transaction updates three entities
// (the design guide's option 2): the entity, the old value's index entity (the id removed; deleted when it
// becomes empty) and the new value's (the id added; created when it is the first), each
// conditional on the ETag read just before. When the value is unchanged it is a single
// conditional update.
//
// When v carries an ETag the update is conditional on it: errs.ErrPreconditionFailed if the
// entity changed since v was read. Without one, Update reads the entity and retries on
// conflicts (last writer wins). Conflicts on index entities are always retried. On success
// v's ETag field holds the new ETag. A transaction whose outcome repo cannot prove
// (errs.ErrOutcomeUnknown) is decided by repo.DecideOutcome: the entity (or an index
// entity) still at the version read, it starts over; gone or at another version, the
// update may have landed before another writer's change, and the errs.ErrOutcomeUnknown
// error is returned, never success, errs.ErrNotFound or errs.ErrPreconditionFailed.
//
// Errors: errs.ErrInvalidInput before any request (as Insert); errs.ErrNotFound; errs.ErrPreconditionFailed;
// errs.ErrOutcomeUnknown (see above);
// errs.ErrTransient wrapping errs.ErrPreconditionFailed when contention outlasted the Conflict
// policy; errs.ErrTransient, *repo.Error.
func (ix *SamePartition[T]) Update(ctx context.Context, v *T) error {
	pk, rk, err := ix.check(v)
	if err != nil {
		return err
	}
	callerETag := ix.codec.ETag(v)
	newValue := ix.value(v)
	err = ix.loop(ctx, "update", pk, rk, func(ctx context.Context) error {
		cur, err := ix.primary.Get(ctx, pk, rk)
		if err != nil {
			return err
		}
		if callerETag != "" && ix.codec.ETag(&cur) != callerETag {
			return errs.Precondition("update", ix.primary.Name(), pk, rk, staleETag)
		}
		ix.codec.SetETag(v, ix.codec.ETag(&cur))
		actions := []repo.Action{ix.primary.UpdateAction(v, nil)}
		if oldValue := ix.value(&cur); oldValue != newValue {
			if oldValue != "" {
				rm, err := ix.planRemove(ctx, pk, oldValue, rk)
				if err != nil {
					return err
				}
				actions = append(actions, rm...)
			}
			if newValue != "" {
				add, err := ix.planAdd(ctx, pk, newValue, rk)
				if err != nil {
					return err
				}
				actions = append(actions, add...)
			}
		}
		err = ix.submit(ctx, "update", actions)
		if errors.Is(err, repo.ErrOutcomeUnknown) {
			return repo.DecideOutcome(ctx, err, actions...)
		}
		if actionConflict(err, 1) || (callerETag == "" && actionConflict(err, 0)) {
			return retry.Again(err)
		}
		return err
	})
	if err != nil {
		ix.codec.SetETag(v, callerETag)
	}
	return err
}

// Delete removes the entity and its id from its value's index entity (the index entity is
// deleted with its last id), in one entity group transaction. With opts.ETag set the
// delete is conditional on it; without, it deletes whatever is stored, retrying on
// conflicts. After a transaction whose outcome repo cannot prove (errs.ErrOutcomeUnknown)
// repo.DecideOutcome reads again: the entity (or the index entity) still at the version
// read, it starts over; otherwise (gone, or another version: the delete may have landed
// and another writer re-created the entity) it returns the errs.ErrOutcomeUnknown error,
// never success nor errs.ErrPreconditionFailed.
//
// Errors: errs.ErrInvalidInput (keys; nothing sent); errs.ErrNotFound; errs.ErrPreconditionFailed;
// errs.ErrOutcomeUnknown (see above);
// errs.ErrTransient wrapping errs.ErrPreconditionFailed when contention outlasted the Conflict
// policy; errs.ErrTransient, *repo.Error.
func (ix *SamePartition[T]) Delete(ctx context.Context, pk, rk string, opts *repo.DeleteOptions) error {
	// The index's own entities live in the same partition: a RowKey in their range is
	// never an entity of T, and deleting it would lose the ids it lists.
	if err := ix.checkKeys(pk, rk); err != nil {
		return err
	}
	var want string
	if opts != nil {
		want = opts.ETag
	}
	return ix.loop(ctx, "delete", pk, rk, func(ctx context.Context) error {
		cur, err := ix.primary.Get(ctx, pk, rk)
		if err != nil {
			return err
		}
		etag := ix.codec.ETag(&cur)
		if want != "" && etag != want {
			return errs.Precondition("delete", ix.primary.Name(), pk, rk, staleETag)
		}
		actions := []repo.Action{ix.primary.DeleteAction(pk, rk, &repo.DeleteOptions{ETag: etag})}
		if value := ix.value(&cur); value != "" {
			rm, err := ix.planRemove(ctx, pk, value, rk)
			if err != nil {
				return err
			}
			actions = append(actions, rm...)
		}
		err = ix.submit(ctx, "delete", actions)
		if errors.Is(err, repo.ErrOutcomeUnknown) {
			return repo.DecideOutcome(ctx, err, actions...)
		}
		if actionConflict(err, 1) || (want == "" && actionConflict(err, 0)) {
			return retry.Again(err)
		}
		return err
	})
}

// IDs returns the RowKeys the index lists for value in partition pk, sorted: one range
// query (index entities of one value are read together, however many pages the list
// spilled into). An unknown value gives an empty list.
//
// Errors: errs.ErrInvalidInput (nothing sent) for an empty or over-long value or a bad key;
// errs.ErrTransient, *repo.Error.
func (ix *SamePartition[T]) IDs(ctx context.Context, pk, value string) ([]string, error) {
	return ix.ids(ctx, pk, ix.norm(value))
}

// ids is IDs for a normalized value.
func (ix *SamePartition[T]) ids(ctx context.Context, pk, value string) ([]string, error) {
	if err := checkKey(Key{pk, ""}); err != nil {
		return nil, err
	}
	loc, err := ix.location(pk, value)
	if err != nil {
		return nil, err
	}
	pages, err := ix.pages.read(ctx, loc)
	if err != nil {
		return nil, err
	}
	return entriesOf(pages), nil
}

// Lookup returns the entities of partition pk whose value is value, in RowKey order
// (the design guide's option 2, "find all employees named Jones in Sales"): the index entities with
// one range query, then the entities with point queries, at most Concurrency at once.
// An entity deleted or renamed between the two steps is left out, so every entity
// returned has the value; so is an entry that names no possible entity (the index
// entities are stored data: a forged entry cannot make the lookup fail).
//
// Errors: as IDs, and those of repo.Table.Get.
func (ix *SamePartition[T]) Lookup(ctx context.Context, pk, value string) ([]T, error) {
	value = ix.norm(value)
	ids, err := ix.ids(ctx, pk, value)
	if err != nil {
		return nil, err
	}
	ks := make([]Key, len(ids))
	for i, id := range ids {
		ks[i] = Key{pk, id}
	}
	got, err := fetch(ctx, ix.primary, ks, ix.conc)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(got, func(v T) bool { return ix.value(&v) != value }), nil
}

// staleETag is the reason of a write refused because the caller's ETag no longer matches
// the entity, found by the read that precedes the write (so no write was sent).
const staleETag = "the entity's ETag changed since it was read: another writer changed it (read it again and redo the change)"
