package queueworker

import (
	"errors"
	"fmt"
	"time"
)

// ErrAlreadyStarted is returned by Start and Drain when the worker is already running.
var ErrAlreadyStarted = errors.New("queueworker: worker already running")

// ErrNoHandler is the error recorded for a message whose kind has no registered handler.
// It is an ordinary failure (the message is retried, then poisoned), not a permanent one,
// because during a rolling deployment another worker may already know the kind.
var ErrNoHandler = errors.New("queueworker: no handler registered for kind")

// SnoozeError is returned (through Snooze) by a handler that wants its message delivered
// again after Duration without the delivery counting as a failure.
type SnoozeError struct {
	// Duration is how long the message stays invisible, rounded up to whole seconds
	// and capped at 7 days (the service's limits).
	Duration time.Duration
}

// Error implements error.
func (e *SnoozeError) Error() string { return fmt.Sprintf("queueworker: snoozed for %v", e.Duration) }

// Snooze returns an error that, returned by a handler, releases its message to be delivered
// again after d. The delivery is counted neither as a failure nor towards MaxDequeueCount:
// Azure Queue storage increments DequeueCount on every delivery and cannot reset it, so the
// worker records the snooze in the message envelope (field "uncounted") by rewriting the
// message text, and subtracts it. If the rewrite fails (a lost lock) the message still
// reappears when its lock expires, and that delivery counts. A negative d is taken as 0 (visible at once).
func Snooze(d time.Duration) error {
	if d < 0 {
		d = 0
	}
	return &SnoozeError{Duration: d}
}

// CancelError is returned (through Cancel) by a handler whose message can never succeed.
type CancelError struct {
	// Err is the reason, recorded in the poison message.
	Err error
}

// Error implements error.
func (e *CancelError) Error() string {
	if e.Err == nil {
		return "queueworker: cancelled"
	}
	return "queueworker: cancelled: " + e.Err.Error()
}

// Unwrap returns the reason.
func (e *CancelError) Unwrap() error { return e.Err }

// Cancel returns an error that, returned by a handler, marks its message as a permanent
// failure: it is moved to the poison queue at once with err recorded, whatever its dequeue
// count. The worker also treats a payload that does not decode into the handler's type, or
// a text that is no envelope, as cancelled.
func Cancel(err error) error { return &CancelError{Err: err} }
