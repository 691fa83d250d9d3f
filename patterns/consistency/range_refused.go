package consistency

import (
	"errors"
	"fmt"
)

// rangeCopyGone reports that a companion's action (action, its index in the delete
// transaction) of the entity at RowKey rk, read at version, answered 404 for the copy
// at row: the copy went since the companion read it, or the store cannot address it
// (Azurite's $batch, for a key with U+2028 or U+2029). It is an errRestart: the
// transaction is atomic, nothing of it landed. Its text never holds the keys (a
// companion's row holds an indexed value).
type rangeCopyGone struct {
	action           int
	rk, version, row string
}

func (e *rangeCopyGone) Error() string {
	return fmt.Sprintf("%s: action %d of the delete transaction met a gone row", errRestart.Error(), e.action)
}

func (e *rangeCopyGone) Unwrap() error { return errRestart }

// copyRefusals tells a companion copy that went once (a concurrent run: the batch starts
// over) from one the store refuses every time: the same copy of the same entity version
// answered 404 in two attempts in a row, while the companion, which builds its actions
// from the rows it reads, found it there each time. Restarting cannot change that
// answer: the batch leaves that entity (skipped) and moves the rest.
type copyRefusals struct{ last string }

// twice returns the RowKey of the entity whose companion copy err (an attempt's error)
// reports refused for the second time in a row.
func (r *copyRefusals) twice(err error) (string, bool) {
	var g *rangeCopyGone
	if !errors.As(err, &g) {
		r.last = ""
		return "", false
	}
	key := g.rk + "\x00" + g.version + "\x00" + g.row
	if r.last != key {
		r.last = key
		return "", false
	}
	r.last = ""
	return g.rk, true
}
