package indexentity

import (
	"context"
	"errors"
	"slices"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/queueworker"
)

// Change is the payload of an Eventual index's messages: an entity whose indexed value may
// have changed. The handler trusts only the keys; everything else is a hint, since the
// message may be duplicated, reordered or replayed.
type Change struct {
	// PartitionKey and RowKey identify the entity.
	PartitionKey string `json:"pk"`
	RowKey       string `json:"rk"`
	// Value is the value the write gives the entity, and Deleted whether it deletes the
	// entity: the state the handler waits for (see EventualOptions.Settle).
	Value   string `json:"value,omitempty"`
	Deleted bool   `json:"deleted,omitempty"`
	// Old lists the values the entity had before the write, whose lists may still hold
	// its key.
	Old []string `json:"old,omitempty"`
}

// Handle is the queueworker handler of the index's messages: Reconcile with the message's
// old values and its intended value. If the entity is not (yet) in the state the message
// describes — the write has not landed, failed, or was overtaken by a later one — and the
// message is younger than Settle, it asks to see the message again later
// (queueworker.Snooze): by then the write has landed or never will. A value the store
// cannot index cancels the message (it goes to the poison queue).
//
// Errors: those of Reconcile, queueworker.Snooze and queueworker.Cancel.
func (ix *Eventual[T]) Handle(ctx context.Context, msg *queueworker.Message[Change]) error {
	c := msg.Payload
	old := slices.Clone(c.Old)
	if c.Value != "" {
		old = append(old, c.Value) // listed by an earlier reconciliation that lost the race
	}
	// The clock before the reads: "settled" must mean that the write's deadline had passed
	// before this reconciliation read the entity, so that the read saw the write if it
	// landed at all. Read afterwards, a slow reconciliation could judge settled a write
	// that landed after its read.
	started := ix.seams.now()
	now, _, err := ix.reconcile(ctx, Key{c.PartitionKey, c.RowKey}, old)
	if errors.Is(err, errs.ErrInvalidInput) {
		return queueworker.Cancel(err)
	}
	if err != nil {
		return err
	}
	arrived := (c.Deleted && !now.found) || (!c.Deleted && now.found && now.value == c.Value)
	if d := ix.settle.Wait(arrived, msg.EnqueuedAt, msg.InsertionTime, started); d > 0 {
		return queueworker.Snooze(d)
	}
	return nil
}
