package dataseries

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// settle decides a series write whose outcome repo could not prove (err, an
// errs.ErrOutcomeUnknown) from a fresh read, with retry.Decide: the operation id in the
// stored ops proves the write landed (Applied: done is the series read); the series still
// at read, the ETag the round read before its conditional write, proves it did not
// (NotApplied: the next round applies the change again). Anything else answers err: the
// ops are data that any writer of the series can change (a delete and a re-creation, a
// copy written back), so a series gone, or changed without the id, may be another
// writer's doing after this write landed, and applying the change again would count it
// twice. An attempt left undecided is remembered in lost, so that update's final error
// still says the change may have landed.
func (s *Store[V]) settle(ctx context.Context, lost *lostWrite, err error, pk, rk, opID, read string) (Series[V], error) {
	done, derr := s.decideLostWrite(ctx, err, pk, rk, opID, read)
	if derr != nil && !retry.IsAgain(derr) {
		lost.unknown = err
	}
	return done, derr
}

// decideLostWrite reads the series again and turns what it shows into retry.Decide's
// evidence.
func (s *Store[V]) decideLostWrite(ctx context.Context, err error, pk, rk, opID, read string) (done Series[V], _ error) {
	e, gerr := s.table.Get(ctx, pk, rk)
	ev := retry.Unproven
	switch {
	case errors.Is(gerr, repo.ErrNotFound):
	case gerr != nil:
		return done, errors.Join(err, gerr)
	case slices.Contains(strings.Fields(opsOf(&e)), opID):
		if done, gerr = s.decode(&e); gerr != nil {
			return done, errors.Join(err, gerr)
		}
		ev = retry.Applied
	default:
		ev = retry.Unchanged(read, e.ETag)
	}
	return done, retry.Decide(err, ev)
}

// opsOf returns the ops recorded in a series entity ("" for none).
func opsOf(e *codec.Entity) string {
	ops, _ := e.Properties[OpsProperty].(string)
	return ops
}

// entityETag returns the ETag of a series entity as read ("" for one not stored).
func entityETag(e *codec.Entity, exists bool) string {
	if !exists {
		return ""
	}
	return e.ETag
}

// lostWrite remembers an attempt of update whose write may have landed (a
// repo.ErrOutcomeUnknown that settle could not decide).
type lostWrite struct{ unknown error }

// keep returns err, the final error of update, as an errs.ErrOutcomeUnknown when an
// earlier attempt's write may have landed: the re-read that would have found the
// operation id failed, so the change may be stored, and a caller must not retry the
// failure blindly.
func (l *lostWrite) keep(err error, table, pk, rk string) error {
	if err == nil || l.unknown == nil || errors.Is(err, repo.ErrOutcomeUnknown) {
		return err
	}
	var ue *repo.OutcomeUnknownError
	errors.As(l.unknown, &ue)
	return &repo.OutcomeUnknownError{Op: "series update", Resource: table, PartitionKey: pk, RowKey: rk, Cause: ue, Err: err}
}
