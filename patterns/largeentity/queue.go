package largeentity

import (
	"context"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/queueworker"
)

// SweepKind is the message kind prefix of targeted sweeps: a Store's messages have the
// kind SweepKind + "/" + its prefix, so one queue can serve several Stores.
const SweepKind = "largeentity.sweep"

// maxVisibilityDelay is the longest a queue message can stay invisible (7 days).
const maxVisibilityDelay = 7 * 24 * time.Hour

// SweepMessage asks for the sweep of one entity's blobs (Store.SweepEntity).
type SweepMessage struct {
	// Prefix is the Store's blob prefix (Options.Prefix).
	Prefix string `json:"prefix"`
	// PartitionKey and RowKey name the entity.
	PartitionKey string `json:"pk"`
	RowKey       string `json:"rk"`
}

// Kind returns the message kind of this Store's sweeps.
func (s *Store[T]) Kind() string { return SweepKind + "/" + s.opts.Prefix }

// Register registers HandleSweep for this Store's kind on a queueworker registry.
//
// Errors: errs.ErrInvalidInput if the kind is already registered.
func (s *Store[T]) Register(r *queueworker.Registry) error {
	return queueworker.Handle(r, s.Kind(), s.HandleSweep)
}

// HandleSweep is the queue handler of SweepMessages: it sweeps the entity's blobs
// (SweepEntity). It re-reads everything it judges, so a message delivered twice, late,
// out of order or concurrently with writes of the entity is harmless. When some of the
// entity's blobs are still too young to judge, it snoozes the message until they are not.
// A message of another Store or with invalid keys is cancelled (poisoned at once).
//
// Errors: those of SweepEntity (the message is then delivered again), a
// *queueworker.SnoozeError, or a *queueworker.CancelError.
func (s *Store[T]) HandleSweep(ctx context.Context, msg *queueworker.Message[SweepMessage]) error {
	p := msg.Payload
	if p.Prefix != s.opts.Prefix {
		return queueworker.Cancel(errs.Invalid("SweepMessage.Prefix", "%q is not this Store's prefix %q", p.Prefix, s.opts.Prefix))
	}
	if err := validateKeys(p.PartitionKey, p.RowKey); err != nil {
		return queueworker.Cancel(err)
	}
	rep, err := s.SweepEntity(ctx, p.PartitionKey, p.RowKey)
	if err != nil {
		return err
	}
	if rep.Young > 0 && !rep.NextYoung.IsZero() {
		return queueworker.Snooze(max(rep.NextYoung.Sub(rep.At), 0) + time.Second)
	}
	return nil
}

// enqueueSweep schedules the sweep of an entity's blobs after delay, when the Store has a
// sweep queue. It runs before the step that may leave orphans (the eventually consistent
// transactions pattern: the message first), so even a process that dies right after
// leaves a message behind.
func (s *Store[T]) enqueueSweep(ctx context.Context, pk, rk, id string, delay time.Duration) error {
	if s.opts.Sweeps == nil {
		return nil
	}
	_, err := queueworker.Enqueue(ctx, s.opts.Sweeps, s.Kind(), id, SweepMessage{Prefix: s.opts.Prefix, PartitionKey: pk, RowKey: rk},
		&queueworker.EnqueueOptions{VisibilityDelay: min(delay, maxVisibilityDelay)})
	return err
}
