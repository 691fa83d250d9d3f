package migrate

import (
	"errors"
	"fmt"

	"github.com/tablepatterns/tablepatterns/patterns/internal/archive"
)

// ErrWrongStage is returned by RunJob when the job's stage is not the migration's
// settled stage: a job of a stage not yet reached (the worker snoozes it) or already
// left (the worker drops it; Advance ran that stage's work to its end).
var ErrWrongStage = errors.New("migrate: the job's stage is not the migration's")

// StageError is an ErrWrongStage with the stages.
type StageError struct {
	// Kind is the job's kind, Stage the stage whose rules applied.
	Kind  string
	Stage Stage
}

func (e *StageError) Error() string {
	return fmt.Sprintf("migrate: a %s job at stage %s", e.Kind, e.Stage)
}

// Unwrap returns ErrWrongStage.
func (e *StageError) Unwrap() error { return ErrWrongStage }

func wrongStage(err error, kind string, stage Stage) error {
	if err != nil || stage == jobStage[kind] {
		return err
	}
	return &StageError{Kind: kind, Stage: stage}
}

// tableGone reads a table that does not exist as an empty one.
func tableGone(err error) error {
	if archive.IsTableNotFound(err) {
		return nil
	}
	return err
}
