package denormalize

import (
	"context"
	"errors"

	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// targetOutcome decides a write of target k (alone, or in a transaction) whose outcome
// repo could not prove (err, an errs.ErrOutcomeUnknown), from a fresh read with
// retry.Decide: the target still at read, the ETag the round read before writing (the
// write was conditional on it), proves that nothing landed and the round starts over.
// Anything else answers err: a target found or not found, at another version, may be
// another writer's doing after this call's write landed, and writing again would undo it.
// It returns err unchanged when err is not an errs.ErrOutcomeUnknown.
func (r *Relation[S, D]) targetOutcome(ctx context.Context, err error, k Key, read string) error {
	if !errors.Is(err, repo.ErrOutcomeUnknown) {
		return err
	}
	d, found, gerr := r.getTarget(ctx, k)
	if gerr != nil {
		return errors.Join(err, gerr)
	}
	now := ""
	if found {
		now = r.tcodec.ETag(&d)
	}
	return retry.Decide(err, retry.Unchanged(read, now))
}

// sourceOutcome is targetOutcome for a write of source src.
func (r *Relation[S, D]) sourceOutcome(ctx context.Context, err error, src Key, read string) error {
	if !errors.Is(err, repo.ErrOutcomeUnknown) {
		return err
	}
	s, gerr := r.sources.Get(ctx, src.PartitionKey, src.RowKey)
	now := ""
	switch {
	case errors.Is(gerr, repo.ErrNotFound):
	case gerr != nil:
		return errors.Join(err, gerr)
	default:
		now = r.scodec.ETag(&s)
	}
	return retry.Decide(err, retry.Unchanged(read, now))
}
