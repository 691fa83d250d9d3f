package indexentity

import (
	"context"

	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// loop runs attempt until it succeeds or fails with an error it did not mark with retry.Again,
// with the conflict backoff between attempts.
func (ix *SamePartition[T]) loop(ctx context.Context, name, pk, rk string, attempt func(ctx context.Context) error) error {
	op := retry.Op{Name: "index entity " + name, Resource: ix.primary.Name(), PartitionKey: pk, RowKey: rk, SensitiveKeys: true} // an attempt's error may name an index entity
	return retry.Optimistic(ctx, ix.conflict, op, func(ctx context.Context, _ int) error { return attempt(ctx) })
}

// submit sends one write's entity group transaction (insert, update or delete: step). It
// goes apart only on a store that cannot delete a key in a transaction (Azurite, for
// U+2028 or U+2029; see the package documentation). The test seam may stop the write
// before it is sent, or replace its outcome.
func (ix *SamePartition[T]) submit(ctx context.Context, step string, actions []repo.Action) error {
	if err := ix.seams.at(ctx, step); err != nil {
		return err
	}
	_, err := repo.SubmitOrSplit(ctx, actions...)
	return ix.seams.submitted(step, err)
}

// staleETag is the reason of a write refused because the caller's ETag no longer matches
// the entity, found by the read that precedes the write (so no write was sent).
const staleETag = "the entity's ETag changed since it was read: another writer changed it (read it again and redo the change)"
