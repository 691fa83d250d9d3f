package secondaryindex

import "fmt"

// lookupError is a failed read of a unique index's copy by its value: it names the index
// and the partition, never the copy's key (it holds the value looked up), and gives only
// the cause's class. The cause stays reachable for errors.Is and errors.As (ErrNotFound,
// *repo.Error).
type lookupError struct {
	index, pk string
	err       error
}

func (e *lookupError) Error() string {
	return fmt.Sprintf("secondaryindex: lookup in index %q of partition %s: %s", e.index, e.pk, causeClass(e.err))
}

func (e *lookupError) Unwrap() error { return e.err }
