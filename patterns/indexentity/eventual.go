package indexentity

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// maxRounds bounds the re-reads of one Reconcile while the entity keeps changing under
// it; past it the message is retried later.
const maxRounds = 8

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
	if err := ix.announce(wctx, &Change{PartitionKey: k.PartitionKey, RowKey: k.RowKey, Value: value}); err != nil {
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
		var c *Change // an unchanged value needs no message
		if old := ix.value(&cur); old != value {
			c = &Change{PartitionKey: k.PartitionKey, RowKey: k.RowKey, Value: value}
			if old != "" {
				c.Old = []string{old}
			}
		}
		if err := ix.announce(wctx, c); err != nil {
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
		var c *Change // an entity without a value is listed nowhere
		if old := ix.value(&cur); old != "" {
			c = &Change{PartitionKey: pk, RowKey: rk, Deleted: true, Old: []string{old}}
		}
		if err := ix.announce(wctx, c); err != nil {
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

// Keys returns the keys value's list holds, as the store has them: possibly stale
// (eventual consistency). Find verifies them.
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

// Find returns the entities whose value is value, in PartitionKey, RowKey order: the list
// (one request), then the entities with point queries, at most Concurrency at once, 100
// keys ahead of the caller (an early break reads no further). Every entity is checked
// against the value, so a stale entry of the list (an entity renamed or deleted whose
// message the worker has not handled yet) is left out; an entity written moments ago may
// be missing until the worker catches up. An entry that names no possible entity (stored
// data: possibly forged) is skipped. Nothing is sent until the iteration starts.
//
// Errors (yielded, then the iteration ends): errs.ErrInvalidInput (nothing sent); those
// of the Store and of repo.Table.Get.
func (ix *Eventual[T]) Find(ctx context.Context, value string, opts *FindOptions) iter.Seq2[T, error] {
	value = ix.norm(value)
	return func(yield func(T, error) bool) {
		conc, err := opts.concurrency(ix.conc)
		var ks []Key
		if err == nil {
			ks, err = ix.keys(ctx, value)
		}
		if err != nil {
			var zero T
			yield(zero, err)
			return
		}
		slices.SortFunc(ks, compareKeys)
		found(ctx, ix.primary, ks, conc, func(v *T) bool { return ix.value(v) == value }, yield)
	}
}
