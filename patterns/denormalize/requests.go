package denormalize

import (
	"context"

	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
)

// The writes of the algorithm (denormalize.go) send their messages, transactions and
// entity writes through these functions, so that the test seam (seams.go) can stop or
// race a write just before each one.

// submit sends one entity group transaction. A link's or a target's delete goes apart
// only on a store that cannot delete its key in a transaction (Azurite, for U+2028 or
// U+2029; see the package documentation).
func (r *Relation[S, D]) submit(ctx context.Context, actions ...repo.Action) error {
	if err := r.seams.at(ctx, "transaction"); err != nil {
		return err
	}
	_, err := repo.SubmitOrSplit(ctx, actions...)
	return err
}

// writeTarget updates the target d (exists) or inserts it, conditional on its ETag.
func (r *Relation[S, D]) writeTarget(ctx context.Context, d *D, exists bool) error {
	if err := r.seams.at(ctx, "write"); err != nil {
		return err
	}
	if exists {
		return r.targets.Update(ctx, d, nil)
	}
	return r.targets.Insert(ctx, d)
}

// removeTarget deletes the target k.
func (r *Relation[S, D]) removeTarget(ctx context.Context, k Key, opts *repo.DeleteOptions) error {
	if err := r.seams.at(ctx, "write"); err != nil {
		return err
	}
	return r.targets.Delete(ctx, k.PartitionKey, k.RowKey, opts)
}

// writeSource updates the source s, conditional on its ETag.
func (r *Relation[S, D]) writeSource(ctx context.Context, s *S) error {
	if err := r.seams.at(ctx, "write"); err != nil {
		return err
	}
	return r.sources.Update(ctx, s, nil)
}

// enqueueSource announces a source write (AcrossPartitions).
func (r *Relation[S, D]) enqueueSource(ctx context.Context, c SourceChange) error {
	if err := r.seams.at(ctx, "enqueue"); err != nil {
		return err
	}
	_, err := queueworker.Enqueue(ctx, r.queue, r.SourceKind(), "", c, nil)
	return err
}

// enqueueTarget announces a target write (AcrossPartitions).
func (r *Relation[S, D]) enqueueTarget(ctx context.Context, c TargetChange) error {
	if err := r.seams.at(ctx, "enqueue"); err != nil {
		return err
	}
	_, err := queueworker.Enqueue(ctx, r.queue, r.TargetKind(), "", c, nil)
	return err
}
