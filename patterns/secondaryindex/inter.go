package secondaryindex

import (
	"context"
	"errors"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// The inter-partition secondary index, as the guide writes it with its "Eventually
// consistent transactions pattern": an entity group transaction cannot reach across partitions,
// so a write changes the primary entity and enqueues a message, and the worker's
// reconciliation reads the primary again and brings every index copy in line with it.
// The write methods and their checks are in inter_write.go, reads in inter_read.go; an
// unproven or refused request is decided in inter_outcome.go, forged refs in forged.go.

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

// refPrefix starts the RowKey of every ref. Copies are keyed by escaped values
// (keys.Join), whose first character is always above '!', so refs sort before every copy
// and never appear in a value range.
const refPrefix = "!"

// lowestCopy is the lowest RowKey a copy can have (see refPrefix).
const lowestCopy = "\""

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

// refKey is the RowKey of the ref of the primary entity rk.
func refKey(rk string) string { return refPrefix + keys.Join(rk) }

// write runs the three steps of an eventually consistent write: the safety message
// (invisible for SafetyDelay), the primary write do (bounded to half of it), the prompt
// message. Each step is safe to interrupt: a stop after the first leaves a message that
// finds nothing to change, a stop after the second leaves the first to reconcile it.
func (x *Inter[T]) write(ctx context.Context, pk, rk string, do func(context.Context) error) error {
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
	if err := x.primaryWritten(ctx, pk, rk, do(wctx)); err != nil {
		return err
	}
	return x.promptEnqueued(pk, rk, x.Notify(ctx, pk, rk))
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

// enqueue sends the reconciliation message of (pk, rk), invisible for delay. It carries
// the keys only: the worker reads the entity.
func (x *Inter[T]) enqueue(ctx context.Context, pk, rk string, delay time.Duration) error {
	_, err := queueworker.Enqueue(ctx, x.queue, x.opts.Kind, "", Ref{PartitionKey: pk, RowKey: rk},
		&queueworker.EnqueueOptions{VisibilityDelay: delay})
	return err
}

// reconcile is Reconcile's body, for keys already checked: per index, read the ref, then
// the primary, then reconcile each index in its own partition. An attempt that loses a
// race on a ref starts over from fresh reads. An index that cannot hold the entity is
// reported (in the error returned) after the others are reconciled.
func (x *Inter[T]) reconcile(ctx context.Context, pk, rk string) error {
	op := retry.Op{Name: "reconcile index", Resource: x.primary.Name(), PartitionKey: pk, RowKey: rk, SensitiveKeys: true} // it reads and writes copies
	var bad error
	err := retry.Optimistic(ctx, x.retry, op, func(ctx context.Context, _ int) error {
		ctx, cancel := x.boundByTombstoneAge(ctx)
		defer cancel()
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
		cur, err := x.present(x.primary.Get(ctx, pk, rk))
		if err != nil {
			return err
		}
		for i, ix := range x.idx {
			if parts[i] == "" {
				continue // refused above
			}
			err := x.reconcileIndex(ctx, ix, parts[i], rk, cur, refs[i])
			if err := x.indexDone(ix, err, &bad); err != nil {
				return err
			}
		}
		if overGoneTombstone(refs, cur != nil) {
			return x.stillPresent(ctx, pk, rk, x.c.ETag(cur)) // see tombstone.go
		}
		return nil
	})
	if err != nil {
		return err
	}
	return bad
}

// reconcileIndex brings one index's copy of the entity rk (cur, nil if it is gone) in
// line, given its ref (nil if none): one entity group transaction in the index partition
// part that writes the new copy, deletes the old one and moves the ref, conditional on
// the ref's ETag (an insert when there is none).
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
	// The copy the ref names is deleted below only if it is a copy of this very entity.
	forged := x.forgedRef(ix, part, rk, have)
	// Up to date only when the ref records this very version of the primary (its ETag, or
	// "" for a primary that is gone). A ref is never deleted: a primary without a copy in
	// this index leaves a tombstone (Key ""), and even the first reconciliation of an
	// entity that has none writes one. Every decision therefore rests on a ref version
	// that a concurrent reconciliation must change to decide otherwise, and a slow
	// reconciliation that read an older state fails its condition and starts over. Were
	// the ref deleted, a slow reconciliation that read "no copy yet, the primary has the
	// value" could insert a fresh ref after the entity was deleted and reconciled, and
	// leave a copy of a deleted entity.
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
	// (see the package documentation, "Consistency").
	_, err := repo.SubmitOrSplit(ctx, acts...)
	if err := x.refMoved(ctx, err, acts, dropAt); err != nil {
		return err
	}
	return invalid
}
