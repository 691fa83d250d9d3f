package migrate

import (
	"context"
	"errors"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/repo"
)

// A Schema write whose client gave up may still be applied by the service after the
// application's newer, acknowledged write, as a re-keying migration's
// (abandoned_write.go). Sent without a condition it puts the older value back (a reader
// steps back: TestSchemaReaderNeverStepsBackWhenAnAbandonedWriteLandsLate) and, in a
// staged migration, the version of the stage it was sent in: one of the from version
// sent before Backfill lands below the latest after the rewrite and Verify
// (TestSchemaAbandonedWriteLandingAfterTheRewriteLeavesNoEntityBelowTheLatest), one of
// the latest lands at it after the downgrade
// (TestSchemaAbandonedWriteLandingAfterTheDowngradeLeavesNoEntityAtTheLatest). So a
// write the application made unconditional (Upsert, Update or Delete without an ETag)
// reads the row first and is sent If-Match it (an insert where there was none): landing
// late, it meets a row that changed since and is refused. One more request per such
// write, with or without stages (the same path).

// send is the application's write o of e (its ETag the one the application holds; keys
// alone for a delete), never sent without a condition.
func (s *Schema[T]) send(ctx context.Context, o op, e *codec.Entity) error {
	switch {
	case o == opInsert:
		return s.raw.Insert(ctx, e)
	case !unconditional(o, e.ETag) && o == opDelete:
		return s.raw.Delete(ctx, e.PartitionKey, e.RowKey, &repo.DeleteOptions{ETag: e.ETag})
	case !unconditional(o, e.ETag):
		return s.raw.Update(ctx, e, nil)
	}
	for round := 1; ; round++ {
		err := s.sendIfMatchRead(ctx, o, e)
		if !readsAgain(o, "", err) {
			return err
		}
		if err := giveUp(ctx, round, "write", e.PartitionKey, e.RowKey); err != nil {
			return err
		}
	}
}

// sendIfMatchRead is one round of an unconditional write: read the row, then write
// If-Match the ETag read, or insert where there was none (an Upsert; an Update or
// Delete of a missing entity is errs.ErrNotFound).
func (s *Schema[T]) sendIfMatchRead(ctx context.Context, o op, e *codec.Entity) error {
	cur, err := s.raw.Get(ctx, e.PartitionKey, e.RowKey)
	switch {
	case errors.Is(err, repo.ErrNotFound) && o == opUpsert:
		e.ETag = ""
		return s.raw.Insert(ctx, e)
	case err != nil:
		return err
	case o == opDelete:
		return s.raw.Delete(ctx, e.PartitionKey, e.RowKey, &repo.DeleteOptions{ETag: cur.ETag})
	}
	e.ETag = cur.ETag
	return s.raw.Update(ctx, e, nil)
}
