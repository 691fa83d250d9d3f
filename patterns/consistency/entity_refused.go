package consistency

import (
	"errors"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// refusedDelete reports that the store answered the delete of a move's source with 404
// while the entity is there, at etag (confirmGone). It is an errRestart: nothing of the
// delete landed, and one such answer can be a fluke of the store.
type refusedDelete struct{ etag string }

func (e *refusedDelete) Error() string {
	return errRestart.Error() + ": the delete answered 404 while the entity is there"
}

func (e *refusedDelete) Unwrap() error { return errRestart }

// refusals tells a store that refused a move's delete once from one that refuses it
// every time (Azurite, for a key with U+2028 or U+2029 in an entity group transaction:
// it addresses another row). A move restarts after the first refusal of the version it
// copied; a second refusal of that same version, the entity still there unchanged, is
// permanent: restarting cannot change the answer, and the error must not claim that the
// source or the target changed.
type refusals struct{ version string }

// check returns err, or the permanent error when err is the second refusal of one
// version's delete.
func (r *refusals) check(err error) error {
	var rd *refusedDelete
	if !errors.As(err, &rd) {
		return err
	}
	if r.version != rd.etag {
		r.version = rd.etag
		return err
	}
	return errs.Invalid("RowKey", "the store refuses the delete of the source entity (404, twice) while the entity is there, unchanged (a key it cannot address in an entity group transaction?): the copy is in the target, the entity stays in the source")
}
