package largeentity

import (
	"errors"
	"time"
)

// Steps of a write after which the test seam may stop it.
const (
	stepUploaded = "uploaded" // new blobs stored, entity not written
	stepWritten  = "written"  // entity written, old blobs not deleted
)

// errCrash is returned by the test seam that simulates a process dying between two steps.
var errCrash = errors.New("largeentity: simulated crash")

// seams is the one thing tests set on a Store (see export_test.go): afterStep runs after
// each step of a write (a process dying there, or a racing writer); clock maps the
// service's time for the sweeper, so that tests need not wait for the grace period.
type seams struct {
	afterStep func(step string) error
	clock     func(service time.Time) time.Time
}

// after runs the afterStep seam, if set, after step.
func (s seams) after(step string) error {
	if s.afterStep == nil {
		return nil
	}
	return s.afterStep(step)
}

// now returns the service's time t as the sweeper sees it.
func (s seams) now(t time.Time) time.Time {
	if s.clock == nil {
		return t
	}
	return s.clock(t)
}
