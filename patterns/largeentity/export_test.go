package largeentity

import "time"

// The test seam: CrashAfter and OnStep stop or race a write after one of its steps;
// ShiftClock shifts the service time the sweeper sees, so that tests need not wait for
// the grace period.

const (
	StepUploaded = stepUploaded
	StepWritten  = stepWritten
)

var ErrCrash = errCrash

// CrashAfter makes every write of s stop after step, returning ErrCrash without any clean-up,
// as if the process died there. "" turns it off.
func CrashAfter[T any](s *Store[T], step string) {
	if step == "" {
		s.seams.afterStep = nil
		return
	}
	s.seams.afterStep = func(got string) error {
		if got == step {
			return errCrash
		}
		return nil
	}
}

// OnStep runs f after each step of every write of s (f may itself write, to race the write).
func OnStep[T any](s *Store[T], f func(step string) error) { s.seams.afterStep = f }

// ShiftClock makes the sweeper of s see the service's clock plus d.
func ShiftClock[T any](s *Store[T], d time.Duration) {
	s.seams.clock = func(t time.Time) time.Time { return t.Add(d) }
}
