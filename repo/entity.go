package repo

import (
	"context"
	"errors"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/retry"
)

// Get reads one entity by its keys (a point query, the cheapest read of the service), with
// its ETag and Timestamp fields filled.
//
// Errors: ErrNotFound, ErrInvalidInput (keys), ErrTransient, *Error.
func (t *Table[T]) Get(ctx context.Context, pk, rk string) (T, error) {
	var out T
	if err := checkAddressable(pk, rk); err != nil {
		return out, err
	}
	err := retry.Do(ctx, t.opts.Retry, t.op("get", pk, rk), func(ctx context.Context, _ int) error {
		resp, err := t.client.GetEntity(ctx, pk, rk, t.getOptions())
		if err != nil {
			return errs.Wrap(err, "get", t.name, pk, rk)
		}
		if err := t.codec.DecodeContext(ctx, resp.Value, &out); err != nil {
			return err
		}
		if t.track != nil {
			t.track.observe(resp.Value, string(resp.ETag))
		}
		if t.codec.ETag(&out) == "" {
			t.codec.SetETag(&out, string(resp.ETag))
		}
		return nil
	})
	return out, err
}

// Insert adds v; it fails with ErrAlreadyExists if an entity with the same keys exists.
// On success v's ETag field (if any) holds the new ETag.
//
// An insert is not idempotent. When a retry meets an existing entity after an attempt that
// may have been applied (its response was lost), Insert cannot know by itself whether that
// entity is its own: it returns ErrOutcomeUnknown. With Options.TrackWrites it reads the
// entity and returns nil when it finds its write id there (v's ETag is then one that
// matches no version: re-read before a conditional write), ErrOutcomeUnknown otherwise. A
// retry after a failure that proves nothing was applied (503 ServerBusy, 429, no
// connection) returns the service's answer as it is.
//
// Errors: ErrAlreadyExists, ErrOutcomeUnknown, ErrInvalidInput (limits, keys: nothing
// sent), ErrTransient, *Error.
func (t *Table[T]) Insert(ctx context.Context, v *T) error {
	w := t.insertAction(v)
	return t.write(ctx, &w)
}

// Upsert inserts v or, if it exists, replaces it (Mode Replace, the default) or merges it
// (Mode Merge) unconditionally. It is idempotent. On success v's ETag field holds the new ETag.
//
// Errors: ErrInvalidInput (nothing sent), ErrTransient, *Error.
func (t *Table[T]) Upsert(ctx context.Context, v *T, opts *UpsertOptions) error {
	w := t.upsertAction(v, opts)
	return t.write(ctx, &w)
}

// Update replaces or merges an existing entity. It is conditional on v's ETag when T has an
// ETag field and it is set (optimistic concurrency), unless opts.Unconditional. On success
// v's ETag field holds the new ETag.
//
// A retry that meets 412 or 404 after an attempt that may have been applied is decided as
// for Insert.
//
// Errors: ErrPreconditionFailed (another writer changed the entity), ErrNotFound,
// ErrOutcomeUnknown, ErrInvalidInput (nothing sent), ErrTransient, *Error.
func (t *Table[T]) Update(ctx context.Context, v *T, opts *UpdateOptions) error {
	w := t.updateAction(v, opts)
	return t.write(ctx, &w)
}

// Delete removes the entity with these keys; conditional if opts.ETag is set.
//
// A retry that finds the entity gone (or changed) after an attempt that may have been
// applied returns ErrOutcomeUnknown, tracked or not: the entity is gone and its history
// with it, so nothing tells whose delete it was (two consumers that claim an item by
// deleting it must not both be told they did). DeleteIfExists, which asks only that the
// entity be gone, reports that case as success.
//
// Errors: ErrNotFound, ErrPreconditionFailed, ErrOutcomeUnknown, ErrInvalidInput,
// ErrTransient, *Error.
func (t *Table[T]) Delete(ctx context.Context, pk, rk string, opts *DeleteOptions) error {
	w := t.deleteAction(pk, rk, opts)
	return t.write(ctx, &w)
}

// DeleteIfExists removes the entity if it exists; a missing entity is success. It is the
// idempotent delete that every message-driven step uses.
//
// Errors: ErrInvalidInput, ErrTransient, *Error.
func (t *Table[T]) DeleteIfExists(ctx context.Context, pk, rk string) error {
	err := t.Delete(ctx, pk, rk, nil)
	var ue *OutcomeUnknownError
	if errors.Is(err, ErrNotFound) || (errors.As(err, &ue) && errors.Is(ue.Err, ErrNotFound)) {
		return nil // gone, as asked: by this call or another
	}
	return err
}

// write sends one prepared action with retries. A retry that meets an answer its own
// earlier, unanswered attempt could explain (see echo) is decided by resolve; after a
// failure that proves nothing was applied, the next answer is the truth.
func (t *Table[T]) write(ctx context.Context, w *writeAction) error {
	if w.err != nil {
		return w.err
	}
	var cause error // the first failure that may have been applied
	err := retry.Do(ctx, t.opts.Retry, t.op(w.kind.String(), w.pk, w.rk), func(ctx context.Context, attempt int) error {
		etag, err := w.send(ctx)
		switch {
		case err == nil:
			w.succeeded(etag)
			return nil
		case cause != nil && w.echo(err):
			return w.resolve(ctx, cause, err)
		case cause == nil && retry.MayHaveApplied(err):
			cause = err
		}
		return err
	})
	if w.idempotent() {
		return err
	}
	return givenUp(err, cause, w.kind.String(), w.table, w.pk, w.rk)
}

// givenUp returns the final error of a non-idempotent write (op on table, keys pk and rk):
// an *OutcomeUnknownError when an attempt may have been applied (cause) and the retries
// ended without an answer about it (exhausted, or the context ended): those say nothing of
// that attempt, so they must not read as "not written". Any other error is returned as is.
func givenUp(err, cause error, op, table, pk, rk string) error {
	if err == nil || cause == nil || errors.Is(err, ErrOutcomeUnknown) {
		return err
	}
	if !errors.Is(err, ErrTransient) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &errs.OutcomeUnknownError{Op: op, Resource: table, PartitionKey: pk, RowKey: rk, Cause: cause, Err: err}
}

// getOptions asks for full metadata when T keeps unmapped properties (see source.full).
func (t *Table[T]) getOptions() *aztables.GetEntityOptions {
	if !t.codec.HasExtra() {
		return nil
	}
	full := aztables.MetadataFormatFull
	return &aztables.GetEntityOptions{Format: &full}
}
