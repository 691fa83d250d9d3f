package repo

import (
	"context"
	"errors"

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
		resp, err := t.client.GetEntity(ctx, pk, rk, nil)
		if err != nil {
			return errs.Wrap(err, "get", t.name, pk, rk)
		}
		if err := t.codec.DecodeContext(ctx, resp.Value, &out); err != nil {
			return err
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
// An insert is not idempotent, yet it is retried safely: when a retry meets an existing
// entity after an attempt whose response was lost, Insert reads the entity and reports
// success if it holds exactly what this call sent (see Submit for the general rule).
//
// Errors: ErrAlreadyExists, ErrInvalidInput (limits, keys: nothing sent), ErrTransient, *Error.
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
// Errors: ErrPreconditionFailed (another writer changed the entity), ErrNotFound,
// ErrInvalidInput (nothing sent), ErrTransient, *Error.
func (t *Table[T]) Update(ctx context.Context, v *T, opts *UpdateOptions) error {
	w := t.updateAction(v, opts)
	return t.write(ctx, &w)
}

// Delete removes the entity with these keys; conditional if opts.ETag is set.
//
// Errors: ErrNotFound, ErrPreconditionFailed, ErrInvalidInput, ErrTransient, *Error.
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
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// write sends one prepared action with retries; a retry that meets the echo of an earlier
// attempt is resolved by verify.
func (t *Table[T]) write(ctx context.Context, w *writeAction) error {
	if w.err != nil {
		return w.err
	}
	return retry.Do(ctx, t.opts.Retry, t.op(w.kind.String(), w.pk, w.rk), func(ctx context.Context, attempt int) error {
		etag, err := w.send(ctx)
		if err != nil && attempt > 1 && w.ambiguous(err) {
			var ok bool
			var verr error
			etag, ok, verr = w.verify(ctx)
			if verr != nil {
				return verr
			}
			if !ok {
				return err
			}
			err = nil
		}
		if err == nil && w.setETag != nil {
			w.setETag(etag)
		}
		return err
	})
}
