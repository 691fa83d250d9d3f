package indexentity

import (
	"context"
	"time"
)

// seams is the one thing tests set on an index (the field seams of SamePartition and
// Eventual): step runs before each step of a write or a reconciliation ("insert",
// "update", "delete" for SamePartition's transactions; "enqueue", "write", "add",
// "remove" for Eventual's steps), and an error stops it there, as a crash would;
// afterSubmit replaces the outcome of each SamePartition transaction, to play the answers
// of a retried transaction whose first attempt landed; clock is Handle's clock, so that
// tests need not wait for Settle; stopped runs when a backfill page or a repair has
// recorded its first failure (no call starts after it, the running ones go on), so that
// a test can release a call it holds at that point.
type seams struct {
	step        func(ctx context.Context, step string) error
	afterSubmit func(step string, err error) error
	clock       func() time.Time
	stopped     func()
}

// at runs the step seam, if set, before step.
func (s seams) at(ctx context.Context, step string) error {
	if s.step == nil {
		return nil
	}
	return s.step(ctx, step)
}

// submitted returns the outcome of the transaction of step: err, or what the afterSubmit
// seam makes of it.
func (s seams) submitted(step string, err error) error {
	if s.afterSubmit == nil {
		return err
	}
	return s.afterSubmit(step, err)
}

// now is the time by Handle's clock.
func (s seams) now() time.Time {
	if s.clock == nil {
		return time.Now()
	}
	return s.clock()
}
