package secondaryindex

import (
	"context"
	"errors"
	"fmt"

	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
	"go.uber.org/zap"
)

// primaryWritten is the answer err of an Inter write's primary write (step 2). A write
// that may have landed (its response was lost) or whose primary is gone (a retried
// delete whose first try landed) is announced anyway, with one enqueue: without a safety
// message nothing else would reconcile its copies. A refused write is returned; the
// safety message, if any, finds nothing to change.
func (x *Inter[T]) primaryWritten(ctx context.Context, pk, rk string, err error) error {
	if err != nil {
		if errors.Is(err, repo.ErrOutcomeUnknown) || errors.Is(err, repo.ErrNotFound) {
			if nerr := x.Notify(ctx, pk, rk); nerr != nil {
				return errors.Join(err, nerr)
			}
		}
		return err
	}
	return x.seams.after("written")
}

// promptEnqueued is the answer err of the prompt message's enqueue (step 3), after the
// primary write succeeded. With a safety message that will reconcile the write, a failure
// is only logged, so that the caller does not repeat a write that succeeded; without one
// it is returned, telling the caller to call Notify.
func (x *Inter[T]) promptEnqueued(pk, rk string, err error) error {
	if err == nil {
		return nil
	}
	if x.opts.SafetyDelay > 0 {
		x.opts.Table.Logger.Warn("secondaryindex: prompt reconciliation not enqueued; the safety message will run it",
			zap.String("table", x.primary.Name()), zap.String("partitionKey", pk), zap.String("rowKey", rk),
			zap.Duration("after", x.opts.SafetyDelay), zap.Error(err))
		return nil
	}
	return fmt.Errorf("secondaryindex: %s/%s was written but its reconciliation could not be enqueued (call Notify): %w", pk, rk, err)
}

// present is the reconciliation's read of the primary (cur, err): nil when the entity is
// gone.
func (x *Inter[T]) present(cur T, err error) (*T, error) {
	switch {
	case errors.Is(err, repo.ErrNotFound):
	case err != nil:
		return nil, err
	default:
		return &cur, x.seams.after("read")
	}
	return nil, x.seams.after("read")
}

// indexDone is the answer err of one index's reconciliation. An index that cannot hold the
// entity (errs.ErrInvalidInput: a value written around this package that no key can hold)
// is added to bad, so that the other indexes are still reconciled and the message is
// poisoned with the reason; any other failure stops the attempt.
func (x *Inter[T]) indexDone(ix *interIndex[T], err error, bad *error) error {
	if errors.Is(err, repo.ErrInvalidInput) {
		*bad = errors.Join(*bad, err)
		return nil
	}
	if err != nil {
		return err
	}
	return x.seams.after("index " + ix.Name + " done")
}

// refMoved is the answer err of an index partition's transaction acts, whose action dropAt
// (-1: none) deletes the old copy. A transaction whose outcome repo could not prove, or
// whose ref was moved by another reconciliation, starts over from fresh reads (the ref
// says what is written). An old copy already gone (removed by hand) is finished without.
func (x *Inter[T]) refMoved(ctx context.Context, err error, acts []repo.Action, dropAt int) error {
	if err == nil {
		landed(ctx)
	}
	if errors.Is(err, repo.ErrOutcomeUnknown) {
		return retry.Again(err)
	}
	var ae *repo.ActionError
	if err != nil && errors.As(err, &ae) {
		switch {
		case ae.Index == dropAt && errors.Is(err, repo.ErrNotFound):
			_, err = repo.Submit(ctx, acts[:dropAt]...)
			if err == nil {
				landed(ctx)
			}
			if errors.Is(err, repo.ErrOutcomeUnknown) || (err != nil && errors.As(err, &ae) && ae.Index == 0) {
				return retry.Again(err)
			}
		case ae.Index == 0:
			return retry.Again(err)
		}
	}
	return err
}
