package migrate

import (
	"context"
	"errors"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/repo"
)

// An application write whose client gave up (its deadline passed, its answer lost) may
// still be applied by the service later, after the application wrote again and wrote a
// newer version: a loaded store goes on with a request it received, and a request that
// reached it on a connection it had not read yet can be applied after later requests.
// Sent without a condition, such a write puts the older version back over the newer
// one, and a reader reads it after the newer one
// (TestReaderNeverStepsBackWhenAnAbandonedWriteLandsLate). So the migration sends none of
// the application's writes without a condition: one the application made unconditional
// (an Upsert, an Update or a Delete without an ETag) is written If-Match the row read
// just before (or inserted where there was none), and an abandoned request landing late
// meets the condition of a row that has changed since, and is refused. The cost is a read
// of the old entity before such a write until clean-up began; from then on the copy is
// read anyway.

// unconditional reports whether the application's write o, with the ETag etag it holds,
// would be sent without a condition: an Upsert always (it ignores any ETag), an Update or
// a Delete without an ETag.
func unconditional(o op, etag string) bool {
	return o == opUpsert || o != opInsert && etag == ""
}

// upsertCopy is an Upsert once clean-up began: the copy e written If-Match the copy read
// (c), or inserted where there was none.
func (m *Migration[O, N]) upsertCopy(ctx context.Context, e *codec.Entity, c version) error {
	if !c.found {
		return m.tgt.Insert(ctx, e)
	}
	e.ETag = c.etag
	return m.tgt.Update(ctx, e, nil)
}

// gone is an Update's or a Delete's answer when the row read again is not there:
// errs.ErrNotFound, unless an earlier round's write may have been applied (landed: its
// answer lost, the retry meeting its own success as 412 or 404). Then the write that
// removed the row may be this one, and the outcome stays unknown (ErrOutcomeUnknown, as
// a plain table's Delete reports it), never "not found"
// (TestUnconditionalDeleteWhoseAnswerIsLostNeverReportsNotFound).
func gone(landed error, s version, pk, rk string) error {
	if landed != nil {
		return landed
	}
	return present(s, nil, pk, rk)
}

// readsAgain reports whether a write sent If-Match the row read (inserted where there
// was none) reads the row again after err: the application's write was unconditional
// and another write moved the row first (a replace meets 412, or 404 once the row was
// deleted; an insert meets 409). An Upsert also reads again after ErrOutcomeUnknown (its
// answer lost, the retry meeting its own success): written again over whatever is read,
// it succeeds, as before clean-up (writeOldGuarded), where an Update or a Delete read
// again could find its own effect and misreport it. Used once clean-up began (the copy)
// and by Schema (schema_abandoned_write.go).
func readsAgain(o op, etag string, err error) bool {
	switch {
	case o == opUpsert:
		return errors.Is(err, repo.ErrPreconditionFailed) || errors.Is(err, repo.ErrAlreadyExists) || errors.Is(err, repo.ErrNotFound) ||
			errors.Is(err, repo.ErrOutcomeUnknown)
	case etag == "" && o != opInsert:
		return errors.Is(err, repo.ErrPreconditionFailed)
	}
	return false
}
