package indexentity

import (
	"context"
	"errors"
	"iter"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

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

// Find returns the entities of partition pk whose value is value, in RowKey order
// (the design guide's option 2, "find all employees named Jones in Sales"): the index
// entities with one range query, then the entities with point queries, at most
// Concurrency at once, 100 keys ahead of the caller (an early break reads no further).
// An entity deleted or renamed between the two steps is left out, so every entity
// returned has the value; so is an entry that names no possible entity (the index
// entities are stored data: a forged entry cannot make the lookup fail). Nothing is sent
// until the iteration starts.
//
// Errors (yielded, then the iteration ends): errs.ErrInvalidInput (nothing sent), those of
// IDs, and those of repo.Table.Get.
func (ix *SamePartition[T]) Find(ctx context.Context, pk, value string, opts *FindOptions) iter.Seq2[T, error] {
	value = ix.norm(value)
	return func(yield func(T, error) bool) {
		conc, err := opts.concurrency(ix.conc)
		var ids []string
		if err == nil {
			ids, err = ix.ids(ctx, pk, value)
		}
		if err != nil {
			var zero T
			yield(zero, err)
			return
		}
		ks := make([]Key, len(ids))
		for i, id := range ids {
			ks[i] = Key{pk, id}
		}
		found(ctx, ix.primary, ks, conc, func(v *T) bool { return ix.value(v) == value }, yield)
	}
}
