package retry

import (
	"context"
	"errors"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// Again marks err as a lost race: the round of Optimistic that returns it is followed by
// another round, from a fresh read. It returns nil for nil. The mark is seen only on the
// round's own return value, so an error that merely wraps a marked one (an inner loop's
// error, a fmt.Errorf) is final: one loop's races never restart another. The marked error
// has err's text and unwraps to err.
func Again(err error) error {
	if err == nil {
		return nil
	}
	return &againError{err: err}
}

type againError struct{ err error }

func (e *againError) Error() string { return e.err.Error() }
func (e *againError) Unwrap() error { return e.err }

// IsAgain reports whether err itself was marked by Again.
func IsAgain(err error) bool {
	_, ok := err.(*againError)
	return ok
}

// unmark removes the mark of Again, so that no marked error leaves a loop.
func unmark(err error) error {
	if a, ok := err.(*againError); ok {
		return a.err
	}
	return err
}

// Conflicted reports the answers that mean that an optimistic write lost a race: 412
// (the If-Match ETag no longer matches: errs.ErrPreconditionFailed) and 409 (a creation
// race: errs.ErrAlreadyExists). An *errs.OutcomeUnknownError is neither: it unwraps to
// ErrOutcomeUnknown only, and is decided from a fresh read (see Optimistic).
func Conflicted(err error) bool {
	return errors.Is(err, errs.ErrPreconditionFailed) || errors.Is(err, errs.ErrAlreadyExists)
}

// Unknown reports an errs.ErrOutcomeUnknown: a write whose earlier attempt may have been
// applied. It is never success and never "nothing written": re-read and decide again.
func Unknown(err error) bool { return errors.Is(err, errs.ErrOutcomeUnknown) }

// Optimistic runs an optimistic-concurrency loop: each round reads what it needs, decides
// the write, and writes conditionally (If-Match on the ETags it read, or an insert where
// it read nothing). The round returns nil when its write succeeded (success means the
// write happened), Again(err) when it lost a race and must start over from a fresh read,
// or any other error to stop the loop with that error as it is.
//
// The rules every round follows, so that each pattern's loop means the same:
//   - a 412 or a 409 on what the round itself read (Conflicted) is Again: another
//     writer won between the read and the write;
//   - a 412 on an ETag the caller supplied is the caller's answer, not Again: the caller
//     asked to write only over the version it read (build it with errs.Precondition when
//     the round's read already shows it, so no write is sent);
//   - an errs.ErrOutcomeUnknown (Unknown: the write may or may not have landed) is
//     decided from a fresh read by Decide (see Evidence): Again only when an entity the
//     write would have changed still holds the version the round read (Unchanged), nil
//     only on a trace that this write alone leaves, the error itself otherwise. Found or
//     not found is no evidence, nor is the value read: another writer may have acted
//     since, and writing again would make this call take effect twice, over that
//     writer's acknowledged change. Never success, and never another round, on a guess.
//
// p is completed field by field from Conflict() (p.Or(Conflict())): the zero Policy is
// Conflict(). op names the loop in logs and errors; op.Retryable, if set, marks more errors
// as worth another round besides Again (the transient ones are retried by repo under each
// request and are final here).
//
// It returns nil, the round's error as it is, an *ExhaustedError (unwrapping to
// ErrTransient and to the last round's error, unmarked) when the rounds or the time of p
// ran out, the context's error when ctx ended, or an *errs.InvalidInputError for an
// invalid p (nothing run). No error it returns is marked by Again.
func Optimistic(ctx context.Context, p Policy, op Op, round func(ctx context.Context, n int) error) error {
	more := op.Retryable
	op.Retryable = func(err error) bool { return IsAgain(err) || (more != nil && more(err)) }
	err := Do(ctx, p.Or(Conflict()), op, round)
	switch e := err.(type) {
	case *ExhaustedError:
		e.Err = unmark(e.Err)
	case *interruptedError:
		e.last = unmark(e.last)
	}
	return unmark(err)
}
