package secondaryindex

import (
	"context"
	"sync/atomic"
)

// landedKey is the context key of a record of landed writes (recordLanded).
type landedKey struct{}

// recordLanded returns ctx carrying a record that a reconciliation's transaction under
// it landed and answered (see landed), and that record. Repair counts an entity it
// wrote by it, and Inter's backfill too (Checkpoint.Written): the write may be its live
// Reconcile's (a missing ref and copy written, or one index's) before a later
// transaction fails, and the live path, which returns only an error, stays the guide's
// steps.
func recordLanded(ctx context.Context) (context.Context, *atomic.Bool) {
	var rec atomic.Bool
	return context.WithValue(ctx, landedKey{}, &rec), &rec
}

// landed notes in ctx's record, if it carries one, that a transaction landed and
// answered.
func landed(ctx context.Context) {
	if rec, ok := ctx.Value(landedKey{}).(*atomic.Bool); ok {
		rec.Store(true)
	}
}
