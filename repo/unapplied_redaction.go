package repo

import (
	"fmt"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// rereadError is a failed read of a transaction's entity after an attempt whose outcome is
// unknown (Unapplied, Submit looking for its write ids): the entity may be an index copy
// (a secondary index's transaction holds its copies), whose key holds the indexed value.
// Its text names the table and gives only the cause's class; the cause stays reachable
// for errors.Is and errors.As, its keys in the *Error's fields.
type rereadError struct {
	table string
	err   error
}

func (e *rereadError) Error() string {
	return fmt.Sprintf("tablepatterns: re-read of a transaction's entity in %s to decide an unanswered attempt: %s", e.table, errs.Class(e.err))
}

func (e *rereadError) Unwrap() error { return e.err }

// withheld wraps a failed re-read as a *rereadError (nil stays nil).
func withheld(err error, table string) error {
	if err == nil {
		return nil
	}
	return &rereadError{table: table, err: err}
}
