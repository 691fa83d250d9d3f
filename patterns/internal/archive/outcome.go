package archive

import (
	"errors"
	"fmt"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/queueworker"
)

// Outcome says what a job found and did. Both archive packages export this type.
type Outcome string

const (
	// OutcomeMoved: the job copied its data to the target and removed it from the source.
	OutcomeMoved Outcome = "moved"
	// OutcomeAlreadyArchived: an earlier run (or a duplicate message) had done the work;
	// nothing was left to do.
	OutcomeAlreadyArchived Outcome = "already-archived"
	// OutcomeMissing: neither the source nor the target holds the data: nothing to do,
	// and something an operator should look at.
	OutcomeMissing Outcome = "missing"
)

// Permanent reports the errors a redelivery cannot fix: invalid input, a job outside
// the allowlists, and any of more (a package's own).
func Permanent(err error, more ...error) bool {
	if errors.Is(err, errs.ErrInvalidInput) || errors.Is(err, ErrNotAllowed) {
		return true
	}
	for _, m := range more {
		if errors.Is(err, m) {
			return true
		}
	}
	return false
}

// HandlerError is what a worker handler returns for a job that ended with out and err:
// a permanent error (permanent) cancels the message into the poison queue, another error
// lets it be delivered again, and OutcomeMissing cancels it with missing (the package's
// ErrNothingToArchive), naming the job's data (what).
func HandlerError(out Outcome, err error, what string, missing error, permanent func(error) bool) error {
	if permanent(err) {
		return queueworker.Cancel(err)
	}
	if err != nil {
		return err
	}
	if out == OutcomeMissing {
		return queueworker.Cancel(fmt.Errorf("%s: %w", what, missing))
	}
	return nil
}
