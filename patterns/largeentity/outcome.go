package largeentity

import (
	"context"
	"errors"

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
