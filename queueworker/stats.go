package queueworker

import "sync/atomic"

// Stats is a snapshot of a Worker's counters since New. Counters only grow, except InFlight.
type Stats struct {
	// Dequeued counts messages received from the queue.
	Dequeued int64
	// Processed counts messages whose handler succeeded and that were then deleted (a
	// delete that found the message already gone, after a lost response, counts too).
	Processed int64
	// Failed counts deliveries whose handler returned an error (panics and ErrNoHandler
	// included; Snooze and shutdown interruptions not).
	Failed int64
	// Retried counts failed messages released for another delivery.
	Retried int64
	// Snoozed counts deliveries that ended in Snooze.
	Snoozed int64
	// Interrupted counts deliveries whose handler was cancelled by a shutdown.
	Interrupted int64
	// Poisoned counts messages moved to the poison queue.
	Poisoned int64
	// Renewed counts lock renewals that succeeded.
	Renewed int64
	// Lost counts deliveries whose lock was lost (a renewal or a settle met a stale pop
	// receipt or a missing message): the worker left such a message alone.
	Lost int64
	// SettleErrors counts deletes, releases and poison moves that failed after retries
	// (the message then reappears when its lock expires).
	SettleErrors int64
	// Dequeues counts dequeue calls (each with its retries), EmptyWaits the waits of the
	// empty-queue (or failing-queue) polling.
	Dequeues, EmptyWaits int64
	// InFlight is the number of handlers running now.
	InFlight int64
}

type counters struct {
	dequeued, processed, failed, retried, snoozed, interrupted  atomic.Int64
	poisoned, renewed, lost, settleErrors, dequeues, emptyWaits atomic.Int64
	inFlight                                                    atomic.Int64
}

// Stats returns a snapshot of the worker's counters. Each counter is read atomically; the
// snapshot as a whole is not (a message may be counted as in flight and processed).
func (w *Worker) Stats() Stats {
	c := &w.c
	return Stats{
		Dequeued:     c.dequeued.Load(),
		Processed:    c.processed.Load(),
		Failed:       c.failed.Load(),
		Retried:      c.retried.Load(),
		Snoozed:      c.snoozed.Load(),
		Interrupted:  c.interrupted.Load(),
		Poisoned:     c.poisoned.Load(),
		Renewed:      c.renewed.Load(),
		Lost:         c.lost.Load(),
		SettleErrors: c.settleErrors.Load(),
		Dequeues:     c.dequeues.Load(),
		EmptyWaits:   c.emptyWaits.Load(),
		InFlight:     c.inFlight.Load(),
	}
}
