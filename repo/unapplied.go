package repo

import (
	"context"
	"errors"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/retry"
)

// Unapplied reads again the entities of actions, a transaction (or one write built as an
// action) whose outcome is unknown (ErrOutcomeUnknown), and returns what the read proves
// (retry.Evidence): retry.NotApplied when an entity that an action would have updated or
// deleted, conditional on an ETag, still holds that ETag (the transaction is atomic: had it
// committed, every entity it touched would hold a new ETag or be gone), retry.Unproven
// otherwise. Inserts, upserts and actions without an ETag (or with "*") prove nothing: an
// entity found or not found may be another writer's doing since, so they are not read.
// The reads stop at the first proof. An entity re-read may be an index copy, whose key
// holds the indexed value: the reads' retries log no keys, and a failed read's error text
// gives its class only (the *Error with the keys stays reachable with errors.As).
//
// Errors: those of the reads (ErrTransient, *Error); a missing entity is not an error.
func Unapplied(ctx context.Context, actions ...Action) (retry.Evidence, error) {
	for i := range actions {
		w := &actions[i].w
		if w.ifMatch == "" || w.ifMatch == "*" || w.client == nil {
			continue
		}
		var now string
		err := retry.Do(ctx, actions[i].rp, retry.Op{Name: "get", Resource: w.table, PartitionKey: w.pk, RowKey: w.rk, SensitiveKeys: true}, func(ctx context.Context, _ int) error {
			resp, err := w.client.GetEntity(ctx, w.pk, w.rk, nil)
			if err != nil {
				return errs.Wrap(err, "get", w.table, w.pk, w.rk)
			}
			now = string(resp.ETag)
			return nil
		})
		if err != nil && !errors.Is(err, ErrNotFound) {
			return retry.Unproven, withheld(err, w.table) // the entity may be an index copy
		}
		if retry.Unchanged(w.ifMatch, now) == retry.NotApplied {
			return retry.NotApplied, nil
		}
	}
	return retry.Unproven, nil
}

// DecideOutcome answers for a round of retry.Optimistic whose transaction (or single write
// built as an action) of actions ended in err: when err is an ErrOutcomeUnknown, it reads
// the entities again (Unapplied) and returns retry.Decide's answer, retry.Again(err) when
// nothing of the write landed and err itself otherwise; any other err is returned as is.
//
// Errors: err; err joined with a read's error when the read failed.
func DecideOutcome(ctx context.Context, err error, actions ...Action) error {
	if !errors.Is(err, ErrOutcomeUnknown) {
		return err
	}
	ev, rerr := Unapplied(ctx, actions...)
	if rerr != nil {
		return errors.Join(err, rerr)
	}
	return retry.Decide(err, ev)
}

// DecideOutcome is the package's DecideOutcome for one write of t on (pk, rk), an update or
// delete conditional on etag, the ETag the round read before writing: when err is an
// ErrOutcomeUnknown, the entity still at etag answers retry.Again(err) (nothing landed),
// anything else answers err (an entity gone or at another version may be another writer's
// doing since this write landed). Any other err is returned as is; an etag of "" proves
// nothing and answers err.
//
// Errors: err; err joined with the read's error when the read failed.
func (t *Table[T]) DecideOutcome(ctx context.Context, err error, pk, rk, etag string) error {
	if etag == "" {
		return err
	}
	return DecideOutcome(ctx, err, t.DeleteAction(pk, rk, &DeleteOptions{ETag: etag}))
}
