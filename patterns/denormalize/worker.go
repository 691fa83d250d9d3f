package denormalize

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/fanout"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// SourceChange is the payload of the messages that announce a source update
// (AcrossPartitions mode). The handler trusts only the keys: it re-reads the source and its
// links, so duplicated, reordered and replayed messages end in the same copies.
type SourceChange struct {
	// PartitionKey and RowKey identify the source.
	PartitionKey string `json:"pk"`
	RowKey       string `json:"rk"`
	// Fingerprint identifies the content the write gives the source: the state the handler
	// waits for (see Options.Settle).
	Fingerprint string `json:"fp,omitempty"`
}

// TargetChange is the payload of the messages that announce a target write
// (AcrossPartitions mode). The handler trusts only the keys; the rest are hints.
type TargetChange struct {
	// PartitionKey and RowKey identify the target.
	PartitionKey string `json:"pk"`
	RowKey       string `json:"rk"`
	// Ref is the source the write makes the target copy (nil: none), and Deleted whether
	// it deletes the target: the state the handler waits for.
	Ref     *Key `json:"ref,omitempty"`
	Deleted bool `json:"deleted,omitempty"`
	// Old lists the sources the target copied before, whose links may remain.
	Old []Key `json:"old,omitempty"`
}

// SourceKind returns the kind of the relation's SourceChange messages,
// "denormalize.source.<name>".
func (r *Relation[S, D]) SourceKind() string { return "denormalize.source." + r.name }

// TargetKind returns the kind of the relation's TargetChange messages,
// "denormalize.target.<name>".
func (r *Relation[S, D]) TargetKind() string { return "denormalize.target." + r.name }

// Register registers HandleSource and HandleTarget for the relation's messages in reg,
// under SourceKind and TargetKind.
//
// Errors: errs.ErrInvalidInput when a kind is already registered.
func (r *Relation[S, D]) Register(reg *queueworker.Registry) error {
	if err := queueworker.Handle(reg, r.SourceKind(), r.HandleSource); err != nil {
		return err
	}
	return queueworker.Handle(reg, r.TargetKind(), r.HandleTarget)
}

// writeCtx bounds a message and the write it announces with one deadline, Settle/2 from
// now, taken before the message's envelope is built: the handler waits for the write
// until the message is Settle old by its EnqueuedAt, which Enqueue stamps after this
// moment, so the write can never land after the handler gave up, however slow the
// enqueue and its retries were. Pass the returned context to both.
func (r *Relation[S, D]) writeCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return r.settle.Write(ctx)
}

// targetState is what a reconciliation found a target to be at its end.
type targetState struct {
	found bool
	ref   Key
	ok    bool
}

func (r *Relation[S, D]) readTarget(ctx context.Context, k Key) (D, targetState, error) {
	d, found, err := r.getTarget(ctx, k)
	if err != nil || !found {
		return d, targetState{}, err
	}
	ref, ok := r.ref(&d)
	return d, targetState{found: true, ref: ref, ok: ok}, nil
}

// ReconcileTarget makes the links and the copy of target k agree with k as it is now
// (AcrossPartitions mode): it reads k, writes the link from its source (idempotent
// upsert), deletes the links from every other source in old (the sources it may have
// copied), refreshes k's copy from the source as it is now (conditional on k's ETag), and
// reads k again, starting over if its reference changed meanwhile. Every step is
// idempotent, so it may run any number of times, concurrently, in any order, or stop
// anywhere and run again.
//
// Errors: errs.ErrInvalidInput (a bad key); the errors of the reads and writes; an error when
// the target changed more than 8 times during the call.
func (r *Relation[S, D]) ReconcileTarget(ctx context.Context, k Key, old ...Key) error {
	_, err := r.reconcileTarget(ctx, k, old)
	return err
}

func (r *Relation[S, D]) reconcileTarget(ctx context.Context, k Key, old []Key) (_ targetState, err error) {
	ctx, end := r.span(ctx, "denormalize.reconcile_target", r.targets.Name())
	defer func() { end(err) }()
	if err := r.checkKey("target", k, r.targetsShareSourceTable()); err != nil {
		return targetState{}, err
	}
	stale := slices.Clone(old)
	for range maxRounds {
		d, now, err := r.readTarget(ctx, k)
		if err != nil {
			return targetState{}, err
		}
		if now.ok {
			if err := r.link(ctx, now.ref, k); err != nil {
				return targetState{}, err
			}
		}
		slices.SortFunc(stale, compareKeys)
		stale = slices.Compact(stale)
		for _, src := range stale {
			if now.ok && src == now.ref {
				continue
			}
			if err := r.unlink(ctx, src, k); err != nil {
				return targetState{}, err
			}
		}
		if now.ok {
			stale = append(stale, now.ref)
			switch err := r.refreshCopy(ctx, d, now.ref); {
			case isConflict(err) && !errors.Is(err, errSourceGone):
				continue // the target changed under us: look again
			case err != nil && !errors.Is(err, errSourceGone):
				return targetState{}, err
			}
		}
		_, again, err := r.readTarget(ctx, k)
		if err != nil {
			return targetState{}, err
		}
		if again == now {
			return now, nil
		}
	}
	return targetState{}, fmt.Errorf("denormalize: target (PartitionKey=%q, RowKey=%q) changed %d times during reconciliation; retry later", k.PartitionKey, k.RowKey, maxRounds)
}

// errSourceGone: the source a target names does not exist (nothing to copy).
var errSourceGone = errors.New("denormalize: source not found")

// refreshCopy writes a fresh copy of source src into target d if it differs, conditional on
// d's ETag.
func (r *Relation[S, D]) refreshCopy(ctx context.Context, d D, src Key) error {
	if err := r.seams.at(ctx, "copy"); err != nil {
		return err
	}
	s, err := r.sources.Get(ctx, src.PartitionKey, src.RowKey)
	if errors.Is(err, repo.ErrNotFound) {
		return errSourceGone
	}
	if err != nil {
		return err
	}
	next, changed := r.copied(d, &s)
	if !changed {
		return nil
	}
	return r.targets.Update(ctx, &next, nil)
}

// link writes the link src -> k (an idempotent upsert).
func (r *Relation[S, D]) link(ctx context.Context, src, k Key) error {
	if err := r.seams.at(ctx, "link"); err != nil {
		return err
	}
	rk, err := r.linkKey(src, k)
	if err != nil {
		return err
	}
	return r.links.Upsert(ctx, &linkRow{PartitionKey: src.PartitionKey, RowKey: rk, TargetPartitionKey: k.PartitionKey, TargetRowKey: k.RowKey}, nil)
}

// unlink deletes the link src -> k if it exists.
func (r *Relation[S, D]) unlink(ctx context.Context, src, k Key) error {
	if err := r.checkKey("source", src, true); err != nil {
		return err
	}
	if err := r.seams.at(ctx, "unlink"); err != nil {
		return err
	}
	rk, err := r.linkKey(src, k)
	if err != nil {
		return err
	}
	return r.links.DeleteIfExists(ctx, src.PartitionKey, rk)
}

// RefreshSource brings every copy of source src up to date (AcrossPartitions mode): it
// reads the source and its links, and writes a fresh copy into each target that still
// names it and differs (conditional on the target's ETag, retried on conflicts, at most
// Concurrency at once); then it reads the source again and starts over if it changed. A
// link whose target no longer names the source is left to ReconcileTarget, which owns the
// links. A missing source has nothing to copy.
//
// Errors: errs.ErrInvalidInput (a bad key); the errors of the reads and writes; an error when
// the source changed more than 8 times during the call.
func (r *Relation[S, D]) RefreshSource(ctx context.Context, src Key) error {
	_, _, err := r.refreshSource(ctx, src)
	return err
}

func (r *Relation[S, D]) refreshSource(ctx context.Context, src Key) (fingerprint string, found bool, err error) {
	ctx, end := r.span(ctx, "denormalize.refresh_source", r.sources.Name())
	defer func() { end(err) }()
	if err := r.checkKey("source", src, true); err != nil {
		return "", false, err
	}
	for range maxRounds {
		s, err := r.sources.Get(ctx, src.PartitionKey, src.RowKey)
		if errors.Is(err, repo.ErrNotFound) {
			return "", false, nil
		}
		if err != nil {
			return "", false, err
		}
		_, links, err := r.readLinks(ctx, src)
		if err != nil {
			return "", false, err
		}
		err = fanout.Do(ctx, len(links), r.conc, func(ctx context.Context, i int) error {
			return r.refreshOne(ctx, targetOf(&links[i]), src, &s)
		})
		if err != nil {
			return "", false, err
		}
		again, err := r.sources.Get(ctx, src.PartitionKey, src.RowKey)
		if errors.Is(err, repo.ErrNotFound) {
			return "", false, nil
		}
		if err != nil {
			return "", false, err
		}
		if r.scodec.ETag(&again) == r.scodec.ETag(&s) {
			return r.fingerprint(&s), true, nil
		}
	}
	return "", false, fmt.Errorf("denormalize: source (PartitionKey=%q, RowKey=%q) changed %d times during refresh; retry later", src.PartitionKey, src.RowKey, maxRounds)
}

// refreshOne writes s's details into target k if k still copies src, retrying when k
// changes under it.
func (r *Relation[S, D]) refreshOne(ctx context.Context, k, src Key, s *S) error {
	op := retry.Op{Name: "denormalize refresh copy", Resource: r.targets.Name(), PartitionKey: k.PartitionKey, RowKey: k.RowKey}
	return retry.Optimistic(ctx, r.conflict, op, func(ctx context.Context, _ int) error {
		d, now, err := r.readTarget(ctx, k)
		if err != nil || !now.ok || now.ref != src {
			return err
		}
		if err := r.seams.at(ctx, "copy"); err != nil {
			return err
		}
		next, changed := r.copied(d, s)
		if !changed {
			return nil
		}
		err = r.targets.Update(ctx, &next, nil)
		if isConflict(err) {
			return retry.Again(err)
		}
		return err
	})
}

// settled decides what a handler returns once it reconciled: nil when the write its message
// announced is visible or the message was Settle old when the reconciliation started
// reading (started: so that a write landing within its deadline was seen by the reads),
// else a snooze to look again. The age runs from the envelope's EnqueuedAt clamped to the
// queue's InsertionTime (settle.Sent): a forged future stamp cannot keep a message young.
func (r *Relation[S, D]) settled(arrived bool, enqueuedAt, insertedAt, started time.Time) error {
	if d := r.settle.Wait(arrived, enqueuedAt, insertedAt, started); d > 0 {
		return queueworker.Snooze(d)
	}
	return nil
}

// HandleSource is the queueworker handler of SourceChange messages: RefreshSource, then,
// while the source does not yet hold the content the message announces and the message is
// younger than Settle, a snooze to look again (the write may not have landed yet).
//
// Errors: those of RefreshSource; queueworker.Cancel for a malformed key.
func (r *Relation[S, D]) HandleSource(ctx context.Context, msg *queueworker.Message[SourceChange]) error {
	c := msg.Payload
	started := r.seams.clock() // before the reads: see settled
	fp, found, err := r.refreshSource(ctx, Key{c.PartitionKey, c.RowKey})
	if errors.Is(err, errs.ErrInvalidInput) {
		return queueworker.Cancel(err)
	}
	if err != nil {
		return err
	}
	return r.settled(found && fp == c.Fingerprint, msg.EnqueuedAt, msg.InsertionTime, started)
}

// HandleTarget is the queueworker handler of TargetChange messages: ReconcileTarget with
// the message's old sources (and the announced one, in case the target no longer names
// it), then, while the target is not yet in the announced state and the message is younger
// than Settle, a snooze to look again.
//
// Errors: those of ReconcileTarget; queueworker.Cancel for a malformed key.
func (r *Relation[S, D]) HandleTarget(ctx context.Context, msg *queueworker.Message[TargetChange]) error {
	c := msg.Payload
	old := slices.Clone(c.Old)
	if c.Ref != nil {
		old = append(old, *c.Ref)
	}
	started := r.seams.clock() // before the reads: see settled
	now, err := r.reconcileTarget(ctx, Key{c.PartitionKey, c.RowKey}, old)
	if errors.Is(err, errs.ErrInvalidInput) {
		return queueworker.Cancel(err)
	}
	if err != nil {
		return err
	}
	var arrived bool
	switch {
	case c.Deleted:
		arrived = !now.found
	case c.Ref == nil:
		arrived = now.found && !now.ok
	default:
		arrived = now.found && now.ok && now.ref == *c.Ref
	}
	return r.settled(arrived, msg.EnqueuedAt, msg.InsertionTime, started)
}
