package largeentity

import "time"

// Test hooks: crash simulates a process dying after a step of a write; clock shifts the
// service time the sweeper sees, so that tests need not wait for the grace period.

const (
	StepUploaded = stepUploaded
	StepWritten  = stepWritten
)

var ErrCrash = errCrash

// CrashAfter makes every write of s stop after step, returning ErrCrash without any clean-up,
// as if the process died there. "" turns it off.
func CrashAfter[T any](s *Store[T], step string) {
	if step == "" {
		s.crash = nil
		return
	}
	s.crash = func(got string) error {
		if got == step {
			return errCrash
		}
		return nil
	}
}

// OnStep runs f after each step of every write of s (f may itself write, to race the write).
func OnStep[T any](s *Store[T], f func(step string) error) { s.crash = f }

// ShiftClock makes the sweeper of s see the service's clock plus d.
func ShiftClock[T any](s *Store[T], d time.Duration) {
	s.now = func(t time.Time) time.Time { return t.Add(d) }
}
