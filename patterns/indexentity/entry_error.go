package indexentity

import (
	"fmt"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// entryError is a failed change of a value's index entities in a TableStore: it names
// the operation and the index, never the partition, which holds the value ("idx!<name>!<value>"),
// and gives only the cause's class (status and code, sentinel). The cause stays
// reachable for errors.Is and errors.As.
type entryError struct {
	op, index string
	err       error
}

func (e *entryError) Error() string {
	return fmt.Sprintf("indexentity: %s in index %q: %s", e.op, e.index, errs.Class(e.err))
}

func (e *entryError) Unwrap() error { return e.err }
