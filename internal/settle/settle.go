// Package settle is the Settle/2 write protocol of the eventually consistent patterns
// (the Azure Table storage design guide's "Eventually consistent transactions pattern"),
// written once: a write announces itself with a queue message and then writes, and the
// message's handler reconciles what it finds until the write is visible or can no longer
// land.
//
// The writer takes one deadline, Settle/2 from the moment before the message's envelope is
// built, and gives it to both the enqueue and the write (Window.Write). The queue stamps
// the message's EnqueuedAt after that moment, so the write can never land later than
// Settle/2 after EnqueuedAt, however slow the enqueue and its retries were. The handler
// notes the clock before its reads (started), reconciles, and, when the state the message
// announces is not visible yet, looks again later until the message was Settle old when
// its reads started (Window.Wait): by then the write has landed, and the reads saw it, or
// it never will. The age is measured from EnqueuedAt clamped to the queue's InsertionTime
// (Sent), so that a forged envelope cannot keep a message young. Settle must exceed the
// clock skew between writers, the queue service and workers.
package settle

import (
	"context"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// Min is the shortest Settle: the queue counts whole seconds, and a write gets half.
const Min = 2 * time.Second

// Window is one pattern's Settle.
type Window struct {
	settle time.Duration
}

// New returns the window of d: def when d is 0, d when it is at least Min. field names the
// option in the *errs.InvalidInputError returned for any other value (negative, or under
// Min).
func New(d, def time.Duration, field string) (Window, error) {
	if d == 0 {
		d = def
	}
	if d < Min {
		return Window{}, errs.Invalid(field, "must be at least %v, got %v", Min, d)
	}
	return Window{settle: d}, nil
}

// Settle returns the window's length.
func (w Window) Settle() time.Duration { return w.settle }

// Write returns the context that bounds a message and the write it announces: Settle/2
// from now. Call it before building the message's envelope, and pass the context to both.
func (w Window) Write(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, w.settle/2)
}

// Wait decides what a handler does once it reconciled: 0 (done) when the state its message
// announces is visible (arrived) or when the message was Settle old, by Sent(enqueuedAt,
// insertedAt), when the reconciliation started reading (started, taken before the reads:
// read after them, a slow reconciliation could judge settled a write that landed after its
// reads); otherwise how long to wait before looking again, at least a second and never
// past the end of the window. enqueuedAt is the envelope's stamp, insertedAt the queue
// service's InsertionTime of the message (zero when the message did not come from a queue).
func (w Window) Wait(arrived bool, enqueuedAt, insertedAt, started time.Time) time.Duration {
	if arrived {
		return 0
	}
	age := started.Sub(Sent(enqueuedAt, insertedAt))
	if age >= w.settle {
		return 0
	}
	return min(w.settle-age, max(time.Second, age))
}

// Sent is the moment a message's age is measured from: its envelope's enqueuedAt (the
// writer's clock, stamped after the write's deadline was taken), but never later than
// insertedAt, when the queue stored the message (the service's clock). The envelope is
// untrusted input (whoever can enqueue writes it): an enqueuedAt far in the future would
// keep the message younger than Settle for good, snoozing forever (snoozes do not count
// towards the worker's MaxDequeueCount). The service stores the message after the writer
// built its envelope, so the clamp never makes an honest message younger; it makes it
// older only by the clock skew between writer and service, which Settle must exceed
// anyway. A zero insertedAt (a message not read from a queue) leaves enqueuedAt as is.
func Sent(enqueuedAt, insertedAt time.Time) time.Time {
	if !insertedAt.IsZero() && (enqueuedAt.IsZero() || enqueuedAt.After(insertedAt)) {
		return insertedAt
	}
	return enqueuedAt
}
