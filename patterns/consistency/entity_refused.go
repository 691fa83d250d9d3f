package consistency

import (
	"errors"
	"fmt"

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
//
// The same holds for a companion's copy in the transaction: its delete answered 404
// twice, at the same version of the entity, while the companion found the copy there
// both times (it builds its actions from the rows it reads), or that repo found there
// unchanged after the refusal (misaddressedRefusal). Any other 412 or 409 on a copy is
// contention (a shared index row) and always restarts.
type refusals struct {
	version   string
	companion string // the version and the copy's row of the last companion refusal
}

// check returns err, or the permanent error when err is the second refusal of one
// version's delete.
func (r *refusals) check(err error) error {
	var cr *companionRefused
	if errors.As(err, &cr) {
		if cr.status != 404 && !cr.misaddressed {
			return err
		}
		key := cr.version + "\x00" + cr.row
		if r.companion != key {
			r.companion = key
			return err
		}
		return errs.Invalid("companions", "the store refuses the delete of a companion's copy (action %d: 404 %s, twice) while the companion finds it there (a key it cannot address in an entity group transaction?): the copy is in the target, the entity and its companions' copies stay in the source", cr.action, cr.code)
	}
	var rd *refusedDelete
	if !errors.As(err, &rd) {
		return err
	}
	if r.version != rd.etag {
		r.version = rd.etag
		return err
	}
	return errs.Invalid("RowKey", "the store refuses the delete of the source entity (twice) while the entity is there, unchanged (a key it cannot address in an entity group transaction?): the copy is in the target, the entity stays in the source")
}

// companionRefused reports that a companion's action (action, its index in the
// transaction) failed with status and code: its copy changed or went since the companion
// read it, or the store cannot address it. It is an errRestart: the transaction is
// atomic, so nothing of it landed. Its text never holds the copy's keys (an index copy's
// RowKey holds the indexed value).
type companionRefused struct {
	action, status int
	code           string
	row            string // the copy's RowKey: compared, never printed
	version        string // the entity's version the move deleted at
	// misaddressed: the store refused the delete of a copy that is there unchanged
	// (repo.ErrDeleteMisaddressed), whatever its status.
	misaddressed bool
}

func (e *companionRefused) Error() string {
	return fmt.Sprintf("%s: a companion's copy changed or went (action %d: %d %s)", errRestart.Error(), e.action, e.status, e.code)
}

func (e *companionRefused) Unwrap() error { return errRestart }
