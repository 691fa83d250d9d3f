package indexentity

import (
	"context"
	"errors"
	"iter"
	"strings"

	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/patterns/internal/maintain"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"github.com/tablepatterns/tablepatterns/retry"
)

// BackfillKind returns the kind of this index's backfill jobs,
// "indexentity.backfill.<table>.<name>".
func (ix *SamePartition[T]) BackfillKind() string {
	return jobKind("backfill", ix.primary.Name(), ix.name)
}

// Partitions lists the partitions of the table, one query per partition.
//
// Errors (yielded): errs.ErrTransient, *repo.Error.
func (ix *SamePartition[T]) Partitions(ctx context.Context) iter.Seq2[string, error] {
	return maintain.Partitions(ctx, ix.pages.tbl, nil)
}

// StartBackfill enqueues one backfill job per partition (every partition when none is
// given) on SamePartitionOptions.Queue, for the workers that Register set up: the
// partitions are backfilled in parallel, each job resuming from its checkpoint.
//
// Errors: errs.ErrInvalidInput (no queue, a bad partition key; nothing sent), those of
// Partitions and of queueworker.Enqueue.
func (ix *SamePartition[T]) StartBackfill(ctx context.Context, partitions ...string) error {
	return ix.jobs().Start(ctx, ix.BackfillKind(), partitions, ix.Partitions)
}

// entities selects the entities of partition pk, leaving out the index's own entities.
func (ix *SamePartition[T]) entities(pk string) filter.Expr {
	outside := filter.Lt("RowKey", ix.lo)
	if ix.hi != "" {
		outside = filter.Or(outside, filter.Ge("RowKey", ix.hi))
	}
	return filter.And(filter.PartitionKey(pk), outside)
}

// BackfillPartition lists every entity of partition pk under its value, page by page in
// RowKey order from opts.After: the way to build an index added to a table that already
// holds data. Each entity not yet listed gets the live path's transaction: the entity
// rewritten conditional on the ETag read (merged, so properties T does not declare
// stay), and its id added to its value's index entity
// conditional on that entity's ETag, so a backfill never lists an entity under a value it
// no longer has, and a concurrent write makes it read again. Listed entities are left
// alone; a backfilled entity gets a new ETag. An entity whose value cannot be indexed is
// logged and counted in Checkpoint.Skipped, and the backfill goes on (Verify reports it).
// Any other failure stops the page: no other entity's transaction starts, those running
// finish, and Checkpoint.Written counts every one that wrote. It is idempotent; resume
// from the returned checkpoint.
//
// Cost: 1 query per page of entities; per entity with a value, 1 range query of its
// value's index entities, and 1 transaction when it is not listed.
//
// Errors: errs.ErrInvalidInput (bad keys or options; nothing sent), errs.ErrTransient,
// *repo.Error, ctx's error, the Checkpoint callback's error.
func (ix *SamePartition[T]) BackfillPartition(ctx context.Context, pk string, opts *BackfillOptions) (Checkpoint, error) {
	o, err := opts.withDefaults()
	if err == nil {
		err = checkKey(Key{pk, ""})
	}
	if err != nil {
		return Checkpoint{PartitionKey: pk, After: o.After}, err
	}
	return backfillPages(ctx, ix.primary, pk, o, ix.entities(pk), func(ctx context.Context, items []T) (int, int, error) {
		// Every transaction writes partition pk (the entity and its value's index entity).
		return fixEach(ctx, "backfill", ix.conc, ix.primary.Logger(), ix.seams.stopped, items, func(T) string { return pk }, func(ctx context.Context, v T) (bool, error) {
			_, rk := ix.codec.Keys(&v)
			return ix.relist(ctx, pk, rk, &v, nil)
		})
	})
}

// relist makes the lists of partition pk agree with the entity rk in one transaction of
// the live path's shape: the entity rewritten conditional on its ETag (so that its value
// cannot change under the decision), its id added to its value's index entity, and
// removed from those of the values in wrong, each conditional on its ETag; a gone entity
// only has its id removed. cur, if set, is the entity as a page read it (the first
// attempt uses it; a conflict reads it again). It reports whether it wrote.
//
// When relist reads the entity itself, it reads the wrong values' pages first and the
// entity after (ref before primary, as Inter does): a gone entity's removal is
// conditional only on the pages' ETags, and a live Insert that re-creates the entity
// guards its value's page in its own transaction. Read in this order, an Insert that
// lands after the entity read changes the page under the removal (412, read again),
// and one that landed before it is seen by the entity read.
func (ix *SamePartition[T]) relist(ctx context.Context, pk, rk string, cur *T, wrong []string) (bool, error) {
	wrote := false
	err := ix.loop(ctx, "relist", pk, rk, func(ctx context.Context) error {
		found := cur
		var removals map[string][]repo.Action
		if found == nil {
			var err error
			if removals, err = ix.planRemovals(ctx, pk, rk, wrong); err != nil {
				return err
			}
			v, err := ix.primary.Get(ctx, pk, rk)
			switch {
			case errors.Is(err, repo.ErrNotFound):
			case err != nil:
				return err
			default:
				found = &v
			}
		}
		cur = nil // a retry reads again
		var actions []repo.Action
		value := ""
		if found != nil {
			value = ix.value(found)
			// Merged, not replaced: the rewrite exists only to carry the If-Match condition,
			// so properties T does not declare stay.
			actions = append(actions, ix.primary.UpdateAction(found, &repo.UpdateOptions{Mode: repo.Merge}))
		}
		changes := 0
		if value != "" {
			loc, err := ix.location(pk, value)
			if err != nil {
				return err
			}
			pages, err := ix.pages.read(ctx, loc)
			if err != nil {
				return err
			}
			a, ok, err := ix.pages.planAdd(loc, pages, rk)
			if err != nil {
				return err
			}
			if ok {
				actions = append(actions, a)
				changes++
			}
		}
		for _, w := range wrong {
			if w == value || w == "" {
				continue
			}
			rm, planned := removals[w]
			if !planned {
				var err error
				if rm, err = ix.planRemove(ctx, pk, w, rk); err != nil {
					return err
				}
			}
			actions = append(actions, rm...)
			changes += len(rm)
		}
		if changes == 0 {
			return nil
		}
		err := ix.submit(ctx, "relist", actions)
		if errors.Is(err, repo.ErrOutcomeUnknown) || actionConflict(err, 0) {
			return retry.Again(err) // read again and decide again: every step has set semantics
		}
		if err == nil {
			wrote = true
		}
		return err
	})
	return wrote, err
}

// planRemovals reads the pages of each of the values in wrong and plans the removal of
// rk from them, keyed by value (a value rk is not listed under plans nothing).
func (ix *SamePartition[T]) planRemovals(ctx context.Context, pk, rk string, wrong []string) (map[string][]repo.Action, error) {
	out := make(map[string][]repo.Action, len(wrong))
	for _, w := range wrong {
		if _, done := out[w]; done || w == "" {
			continue
		}
		rm, err := ix.planRemove(ctx, pk, w, rk)
		if err != nil {
			return nil, err
		}
		out[w] = rm
	}
	return out, nil
}

// listed returns, for partition pk, the values each RowKey is listed under: one range
// query of the index's entities.
func (ix *SamePartition[T]) listed(ctx context.Context, pk string) (map[string][]string, error) {
	ents, err := ix.pages.tbl.Collect(ctx, repo.Query{Filter: filter.RowKeyRange(pk, ix.lo, ix.hi)})
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, e := range ents {
		parts, err := keys.Split(e.RowKey)
		if err != nil || len(parts) != 4 || parts[0] != tagIndex || parts[1] != ix.name {
			continue // not one of this index's pages: nothing to trust
		}
		raw, _ := e.Properties[ix.pages.prop].(string)
		if raw == "" {
			continue
		}
		for _, id := range strings.Split(raw, entrySep) {
			if !contains(out[id], parts[2]) {
				out[id] = append(out[id], parts[2])
			}
		}
	}
	return out, nil
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// Verify compares the entities of partition pk with the index's entities there and
// reports, read-only, the entities listed nowhere (Missing), listed under another value
// only (Stale), and the entries of entities that are gone or listed under their own value
// as well (Orphan), with counts and the first VerifyOptions.Samples. Writes are atomic, so
// drift comes only from writes around the index or from data that predates it.
//
// Cost: 1 query per 1,000 entities and 1 range query of the index's entities.
//
// Errors: errs.ErrInvalidInput (bad key or options; nothing sent), errs.ErrTransient,
// *repo.Error.
func (ix *SamePartition[T]) Verify(ctx context.Context, pk string, opts *VerifyOptions) (*Report, error) {
	samples, err := opts.samples()
	if err == nil {
		err = checkKey(Key{pk, ""})
	}
	if err != nil {
		return nil, err
	}
	ents, err := ix.primary.Collect(ctx, repo.Query{Filter: ix.entities(pk)})
	if err != nil {
		return nil, err
	}
	values := make(map[string]string, len(ents))
	for i := range ents {
		_, rk := ix.codec.Keys(&ents[i])
		values[rk] = ix.value(&ents[i])
	}
	listed, err := ix.listed(ctx, pk)
	if err != nil {
		return nil, err
	}
	r := &Report{PartitionKey: pk, Entities: len(ents)}
	compare(r, values, listed, samples, pk)
	return r, nil
}

// Repair runs Verify on partition pk and fixes each entity it found drifted with the
// live path's transaction (see BackfillPartition): listed under its value, removed from
// the others, conditional on every ETag read, retried from fresh reads on a conflict.
// The first failure stops the repair: no other entity's transaction starts, those
// running finish, and the Report returned with the error counts in Repaired every one
// that wrote. It is idempotent: a second Repair finds nothing.
//
// Cost: Verify's, plus per drifted entity 1 read, 1 range query per value involved and
// 1 transaction.
//
// Errors: as Verify and Update.
func (ix *SamePartition[T]) Repair(ctx context.Context, pk string, opts *VerifyOptions) (*Report, error) {
	r, err := ix.Verify(ctx, pk, opts)
	if err != nil {
		return nil, err
	}
	wrong, order := wrongValues(r)
	// An entity whose value cannot be indexed is logged and left (Verify reports it).
	r.Repaired, _, err = fixEach(ctx, "repair", ix.conc, ix.primary.Logger(), ix.seams.stopped, order, func(string) string { return pk }, func(ctx context.Context, rk string) (bool, error) {
		if ix.checkKeys(pk, rk) != nil {
			return false, nil // an entry no entity can have (read from storage): left, and reported
		}
		return ix.relist(ctx, pk, rk, nil, wrong[rk])
	})
	return r, err
}

// wrongValues groups the drift of a report by entity: the values it is wrongly listed
// under, and the RowKeys in the order found.
func wrongValues(r *Report) (map[string][]string, []string) {
	wrong := map[string][]string{}
	var order []string
	for _, s := range r.found {
		if _, ok := wrong[s.Key.RowKey]; !ok {
			order = append(order, s.Key.RowKey)
			wrong[s.Key.RowKey] = nil
		}
		if s.Drift != Missing {
			wrong[s.Key.RowKey] = append(wrong[s.Key.RowKey], s.Value)
		}
	}
	return wrong, order
}

// BackfillKind returns the kind of this index's backfill jobs,
// "indexentity.backfill.<table>.<name>".
func (ix *Eventual[T]) BackfillKind() string { return jobKind("backfill", ix.primary.Name(), ix.name) }

// Partitions lists the partitions of the indexed table, one query per partition (the
// partitions of a TableStore that shares the table are passed over).
//
// Errors (yielded): errs.ErrTransient, *repo.Error.
func (ix *Eventual[T]) Partitions(ctx context.Context) iter.Seq2[string, error] {
	return maintain.Partitions(ctx, ix.primary, func(pk string) bool { return ix.checkKey(Key{pk, "x"}) != nil })
}

// StartBackfill enqueues one backfill job per partition (every partition when none is
// given) on the index's queue, for the workers Register set up.
//
// Errors: errs.ErrInvalidInput (a bad partition key; nothing sent), those of Partitions
// and of queueworker.Enqueue.
func (ix *Eventual[T]) StartBackfill(ctx context.Context, partitions ...string) error {
	return ix.jobs().Start(ctx, ix.BackfillKind(), partitions, ix.Partitions)
}

// BackfillPartition lists every entity of partition pk under its value, page by page in
// RowKey order from opts.After, through Reconcile (the live path: it reads the entity,
// adds its key to its value's list, and reads it again, starting over when it changed;
// the list entry of a value the entity lost meanwhile is removed by the message of the
// write that changed it). Checkpoint.Written counts the entities whose reconciliation
// wrote to the store; an entity whose value the store cannot index is logged and counted
// in Checkpoint.Skipped, and the backfill goes on. Any other failure stops the page: no
// other entity's reconciliation starts, those running finish, and Checkpoint.Written
// counts every one that wrote. It is idempotent; resume from the returned checkpoint.
//
// Cost: 1 query per page; per entity with a value, Reconcile's (2 reads of the entity, 1
// read of the list, 1 write when the key is not listed).
//
// Errors: errs.ErrInvalidInput (bad keys or options; nothing sent), errs.ErrTransient,
// *repo.Error, the Store's errors, ctx's error, the Checkpoint callback's error.
func (ix *Eventual[T]) BackfillPartition(ctx context.Context, pk string, opts *BackfillOptions) (Checkpoint, error) {
	o, err := opts.withDefaults()
	if err == nil {
		err = ix.checkKey(Key{pk, "x"})
	}
	if err != nil {
		return Checkpoint{PartitionKey: pk, After: o.After}, err
	}
	return backfillPages(ctx, ix.primary, pk, o, filter.PartitionKey(pk), func(ctx context.Context, items []T) (int, int, error) {
		return fixEach(ctx, "backfill", ix.conc, ix.primary.Logger(), ix.seams.stopped, items, ix.listOf, func(ctx context.Context, v T) (bool, error) {
			if ix.value(&v) == "" {
				return false, nil
			}
			_, rk := ix.codec.Keys(&v)
			_, wrote, err := ix.reconcile(ctx, Key{pk, rk}, nil)
			return wrote, err
		})
	})
}

// listOf is the partition a backfill's reconciliation of v writes: its value's list (the
// TableStore's partition, the BlobStore's blob; the value itself for another Store). An
// entity whose value changed since its page was read writes its new value's list, which
// its writer's own message reconciles too.
func (ix *Eventual[T]) listOf(v T) string {
	value := ix.value(&v)
	var where string
	var err error
	switch s := ix.store.(type) {
	case *TableStore:
		where, err = s.PartitionKey(value)
	case *BlobStore:
		where, err = s.BlobName(value)
	default:
		return value
	}
	if err != nil {
		return value // refused by the reconciliation before any request
	}
	return where
}

// lister is a Store that can list every entry of every value (TableStore), for Verify's
// orphans under values no entity has any more.
type lister interface {
	all(ctx context.Context) (map[Key][]string, error)
}

// all returns the values every key is listed under: a scan of the store's partitions.
func (s *TableStore) all(ctx context.Context) (map[Key][]string, error) {
	ents, err := s.pages.tbl.Collect(ctx, repo.Query{Filter: filter.PartitionPrefix(s.keyPrefix())})
	if err != nil {
		return nil, err
	}
	out := map[Key][]string{}
	for _, e := range ents {
		parts, err := keys.Split(e.PartitionKey)
		if err != nil || len(parts) != 3 || parts[0] != tagIndex || parts[1] != s.name {
			continue
		}
		raw, _ := e.Properties[s.pages.prop].(string)
		if raw == "" {
			continue
		}
		for _, entry := range strings.Split(raw, entrySep) {
			if k, ok := keyOf(entry); ok && !contains(out[k], parts[2]) {
				out[k] = append(out[k], parts[2])
			}
		}
	}
	return out, nil
}

// Verify compares the entities of partition pk with the lists and reports, read-only,
// what Repair would fix (see SamePartition.Verify for the kinds). With a TableStore every
// list is read, so an orphan under any value is found; with a BlobStore only the lists
// of the values the partition's entities have are read (an orphan under a value no
// entity of pk has is not seen). Entities written during the call, whose messages are
// still queued, show as drift: run it when the queue is drained.
//
// Cost: 1 query per 1,000 entities; with a TableStore a scan of the store's partitions,
// otherwise 1 list read per distinct value.
//
// Errors: errs.ErrInvalidInput (bad key or options; nothing sent), errs.ErrTransient,
// *repo.Error, the Store's errors.
func (ix *Eventual[T]) Verify(ctx context.Context, pk string, opts *VerifyOptions) (*Report, error) {
	samples, err := opts.samples()
	if err == nil {
		err = ix.checkKey(Key{pk, "x"})
	}
	if err != nil {
		return nil, err
	}
	ents, err := ix.primary.Collect(ctx, repo.Query{Filter: filter.PartitionKey(pk)})
	if err != nil {
		return nil, err
	}
	values := make(map[string]string, len(ents))
	for i := range ents {
		_, rk := ix.codec.Keys(&ents[i])
		values[rk] = ix.value(&ents[i])
	}
	listed := map[string][]string{}
	if l, ok := ix.store.(lister); ok {
		all, err := l.all(ctx)
		if err != nil {
			return nil, err
		}
		for k, vs := range all {
			if k.PartitionKey == pk {
				listed[k.RowKey] = vs
			}
		}
	} else {
		seen := map[string]bool{}
		for _, v := range values {
			if v == "" || seen[v] {
				continue
			}
			seen[v] = true
			if ix.store.Check(v) != nil {
				continue // no list can hold it: its entities are reported missing
			}
			ks, err := ix.store.Keys(ctx, v)
			if err != nil {
				return nil, err
			}
			for _, k := range ks {
				if k.PartitionKey == pk {
					listed[k.RowKey] = append(listed[k.RowKey], v)
				}
			}
		}
	}
	r := &Report{PartitionKey: pk, Entities: len(ents)}
	compare(r, values, listed, samples, pk)
	return r, nil
}

// Repair runs Verify on partition pk and fixes each drifted entity through Reconcile
// with the values it is wrongly listed under as its old values: the live path's
// reconciliation, which lists the entity under its current value and removes it from the
// others, idempotent and safe concurrently with the worker. The first failure stops the
// repair: no other entity's reconciliation starts, those running finish, and the Report
// returned with the error counts in Repaired every one that wrote, also one that wrote
// and then failed (TestEventualRepairCountsAnEntityItWroteBeforeItFailed).
//
// Cost: Verify's, plus a Reconcile per drifted entity.
//
// Errors: as Verify and Reconcile.
func (ix *Eventual[T]) Repair(ctx context.Context, pk string, opts *VerifyOptions) (*Report, error) {
	r, err := ix.Verify(ctx, pk, opts)
	if err != nil {
		return nil, err
	}
	wrong, order := wrongValues(r)
	// An entity whose value cannot be indexed is logged and left (Verify reports it).
	// The lists an entity's reconciliation writes are known only once it has read the
	// entity: one key for all bounds the repair to 2 reconciliations at once, so at most 2
	// writes in flight in any list.
	r.Repaired, _, err = fixEach(ctx, "repair", ix.conc, ix.primary.Logger(), ix.seams.stopped, order, func(string) string { return pk }, func(ctx context.Context, rk string) (bool, error) {
		if ix.checkKey(Key{pk, rk}) != nil {
			return false, nil // an entry no entity can have (read from storage): left, and reported
		}
		// wrote counts a listing written before a later step failed (Report.Repaired).
		_, wrote, err := ix.reconcile(ctx, Key{pk, rk}, wrong[rk])
		return wrote, err
	})
	return r, err
}
