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
// twice.
func (s *Store[V]) settle(ctx context.Context, err error, pk, rk, opID, read string) (done Series[V], _ error) {
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
