package largeentity

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// deleteOutcome decides an entity delete, conditional on read (the ETag the round read),
// whose outcome repo could not prove (err, an errs.ErrOutcomeUnknown), from a fresh read
// with retry.Decide: the entity still at read proves the delete did not land, and the
// round starts over (retry.Again). Anything else is unproven and answers err: an entity
// found at another version may have been re-created by another writer after this call's
// delete landed (deleting it would undo that write); an entity gone may have been deleted
// by another writer. gone reports the latter, for the caller to delete the blobs of the
// version it read, which nothing references any more.
func (s *Store[T]) deleteOutcome(ctx context.Context, err error, pk, rk, read string) (gone bool, _ error) {
	cur, gerr := s.table.Get(ctx, pk, rk)
	now := ""
	switch {
	case errors.Is(gerr, repo.ErrNotFound):
		gone = true
	case gerr != nil:
		return false, errors.Join(err, gerr)
	default:
		now = s.table.Codec().ETag(&cur)
	}
	if d := retry.Decide(err, retry.Unchanged(read, now)); retry.IsAgain(d) {
		return false, retry.Again(&raceError{err: err})
	}
	return gone, err
}

// errRace marks a conditional write that lost to another writer (returned marked with
// retry.Again, so that the loop starts over; the mark is gone once the loop ends, errRace
// stays).
var errRace = errors.New("largeentity: the entity changed during the write")

type raceError struct{ err error }

func (e *raceError) Error() string   { return e.err.Error() }
func (e *raceError) Unwrap() []error { return []error{errRace, e.err} }

// unrace returns the underlying error of a lost race returned as it is; wrapped in an
// *retry.ExhaustedError (races kept being lost: errs.ErrTransient) or in a context error, it is
// left inside.
func unrace(err error) error {
	if r, ok := err.(*raceError); ok {
		return r.err
	}
	return err
}

// failed decides what an entity write that returned err did, cleans up, and returns the
// error for the caller, or nil when the write is proven to have landed as sent. The write
// never deletes a blob after an outcome it cannot prove.
//
// The new blob names are fresh and random: an entity referencing one proves that this
// write landed (another writer can only have kept the reference after reading it). So,
// when the write uploaded blobs and the answer is a refusal (409, 412, 404; possibly the
// echo of its own earlier attempt whose answer was lost) or errs.ErrOutcomeUnknown, the
// entity is read again:
//
//   - it references a new blob and holds exactly what was sent: the write landed and
//     nothing changed since; it succeeds with the stored ETag;
//   - it references a new blob but changed since: the write landed, another writer
//     followed; the blobs are kept and the error wraps errs.ErrOutcomeUnknown (read the
//     entity again and decide);
//   - it references none (or is gone): after a plain refusal the write never landed and
//     never will (no attempt of it may still be in flight, and every Store write is
//     conditional on what it read), so the new blobs are deleted; after
//     errs.ErrOutcomeUnknown an attempt may still land, so they are left to the sweeper.
//
// Other failures (a timeout, exhausted retries) leave the new blobs to the sweeper, which
// checks; bad input (nothing sent) deletes them at once.
func (w *write[T]) failed(ctx context.Context, err error) error {
	var names []string
	for _, p := range w.parts {
		if p.pending && p.name != "" && w.uploaded {
			names = append(names, p.name)
		}
	}
	if len(names) == 0 || errors.Is(err, repo.ErrInvalidInput) {
		w.s.deleteBlobs(ctx, names)
		return err
	}
	unknown := errors.Is(err, repo.ErrOutcomeUnknown)
	refused := errors.Is(err, repo.ErrAlreadyExists) || errors.Is(err, repo.ErrPreconditionFailed) || errors.Is(err, repo.ErrNotFound)
	if !refused && !unknown {
		w.s.log.Warn("largeentity: entity write failed ambiguously; its new blobs are left to the sweeper",
			zap.String("table", w.s.table.Name()), zap.Error(err))
		return err
	}
	cur, gerr := w.s.table.Get(context.WithoutCancel(ctx), w.pk, w.rk)
	landed := false
	switch {
	case errors.Is(gerr, repo.ErrNotFound):
	case gerr != nil:
		w.s.log.Warn("largeentity: entity not read again after a refused write; its new blobs are left to the sweeper",
			zap.String("table", w.s.table.Name()), zap.Error(gerr))
		return err
	default:
		referenced := map[string]bool{}
		for _, p := range w.s.partsOf(&cur, false) {
			if p != nil && p.present && p.name != "" {
				referenced[p.name] = true
			}
		}
		for _, n := range names {
			landed = landed || referenced[n]
		}
	}
	switch {
	case landed && w.same(&cur):
		w.s.table.Codec().SetETag(w.v, w.s.table.Codec().ETag(&cur))
		return nil
	case landed:
		// Keep every new blob: the sweeper removes those the entity does not use.
		return fmt.Errorf("largeentity: %s (PartitionKey=%q, RowKey=%q): the entity references this write's new blob, so the write was applied, and the entity changed since (read it again): %w; %w",
			w.s.table.Name(), w.pk, w.rk, repo.ErrOutcomeUnknown, err)
	case unknown:
		w.s.log.Warn("largeentity: entity write outcome unknown; its new blobs are left to the sweeper",
			zap.String("table", w.s.table.Name()), zap.Error(err))
		return err
	}
	w.s.deleteBlobs(ctx, names)
	return err
}

// same reports whether the stored entity cur holds exactly what this write sent.
func (w *write[T]) same(cur *T) bool {
	sent, err1 := w.s.table.Codec().Encode(w.v)
	stored, err2 := w.s.table.Codec().Encode(cur)
	return err1 == nil && err2 == nil && bytes.Equal(sent, stored)
}
