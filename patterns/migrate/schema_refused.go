package migrate

import (
	"errors"
	"fmt"
	"strings"
)

// An upgrade or downgrade function that refuses an entity leaves it at its version, and
// the next stage relies on the work being whole: from CutOver nothing of the old shape is
// left to serve, and once Aborted the processes of the from version's code read every
// entity. So a schema job counts such an entity by its keys (SchemaReport.Refused,
// RefusedKeys: keys only, since a function's error may quote values), and Advance
// refuses to record the next stage while its own pass of the stage's work left one
// (*IncompleteError). An entity of a version this code does not know (newer code wrote
// it, or forged) is not the migration's to convert: it is counted Unknown, left, and does
// not hold Advance back.

// ErrStageIncomplete is returned by Schema.Advance when the stage's work left entities
// that an upgrade or downgrade refused: the next stage is not recorded.
var ErrStageIncomplete = errors.New("migrate: the stage's work left entities its upgrade or downgrade refused")

// IncompleteError is an ErrStageIncomplete with the stage, the number of entities left
// and up to MaxReportKeys of their keys (never values).
type IncompleteError struct {
	Stage   Stage
	Refused int
	Keys    [][2]string
}

func (e *IncompleteError) Error() string {
	var b strings.Builder
	for i, k := range e.Keys[:min(len(e.Keys), 5)] {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "(%s, %s)", k[0], k[1])
	}
	return fmt.Sprintf("migrate: %s left %d entities its functions refused, first %s: fix them or the functions, then Advance again",
		e.Stage, e.Refused, b.String())
}

// Unwrap returns ErrStageIncomplete.
func (e *IncompleteError) Unwrap() error { return ErrStageIncomplete }

// refusal marks the error of an upgrade or downgrade function (it unwraps to the
// ErrInvalidInput a read or a write returns).
type refusal struct{ err error }

func (r *refusal) Error() string { return r.err.Error() }
func (r *refusal) Unwrap() error { return r.err }

// refused reports whether err is a function's refusal and, if so, counts the entity.
func (r *SchemaReport) refusedBy(err error, pk, rk string) bool {
	var rf *refusal
	if !errors.As(err, &rf) {
		return false
	}
	r.add(SchemaReport{Refused: 1, RefusedKeys: [][2]string{{pk, rk}}})
	return true
}

// leftBehind is Advance's check of its own pass over the stage's work.
func leftBehind(stage Stage, rep SchemaReport) error {
	if rep.Refused == 0 {
		return nil
	}
	return &IncompleteError{Stage: stage, Refused: rep.Refused, Keys: rep.RefusedKeys}
}
