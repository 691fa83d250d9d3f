package wideentity

import (
	"errors"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// conflictOp is the retry.Op of a read-modify-write: it retries the races lost to other
// writers, not the transient failures (repo already retried those).
func (s *Store) conflictOp(name, pk, rk string) retry.Op {
	return retry.Op{Name: name, Resource: s.table.Name(), PartitionKey: pk, RowKey: rk,
		Retryable: func(err error) bool {
			var fe *fnError
			if errors.As(err, &fe) || isTableNotFound(err) {
				return false
			}
			if errors.Is(err, repo.ErrOutcomeUnknown) {
				// The transaction may have committed: running fn again could apply it twice.
				return false
			}
			return errors.Is(err, repo.ErrPreconditionFailed) || errors.Is(err, repo.ErrAlreadyExists) || errors.Is(err, repo.ErrNotFound)
		}}
}

// isTableNotFound tells a missing table, which no retry cures, from a missing chunk.
func isTableNotFound(err error) bool {
	var se *errs.ServiceError
	var ae *repo.ActionError
	return errors.As(err, &se) && se.Code == "TableNotFound" || errors.As(err, &ae) && ae.Code == "TableNotFound"
}

// fnError carries an error of the caller's fn through retry.Do, which does not retry it.
type fnError struct{ err error }

func (e *fnError) Error() string { return e.err.Error() }
func (e *fnError) Unwrap() error { return e.err }
