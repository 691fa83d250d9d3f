package secondaryindex

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync/atomic"

	"github.com/tablepatterns/tablepatterns/codec"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/patterns/internal/maintain"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"github.com/tablepatterns/tablepatterns/retry"
	"go.uber.org/zap"
)

// BackfillKind returns the message kind of this index set's backfill jobs: Kind followed
// by ".backfill" ("secondaryindex.reconcile.Employees.backfill" by default).
func (x *Inter[T]) BackfillKind() string { return x.opts.Kind + ".backfill" }

// Partitions lists the partitions of the primary table, in key order, with one query per
// partition (index partitions kept in the primary's table are passed over). It is how
// StartBackfill finds what to backfill when given no partitions.
//
// Errors (yielded): errs.ErrTransient, *repo.Error.
func (x *Inter[T]) Partitions(ctx context.Context) iter.Seq2[string, error] {
	return maintain.Partitions(ctx, x.primary, func(pk string) bool { return x.checkRef(pk, "") != nil })
}

// StartBackfill enqueues one backfill job per partition (every partition of the primary
// table when none is given; see Partitions) for the workers that Register set up: the
// partitions are backfilled in parallel, as many at once as there are worker slots. Each
// job backfills up to 1,000 entities and enqueues the rest of its partition as a new job
// from its checkpoint, so a stopped worker resumes where the partition stood.
//
// Errors: errs.ErrInvalidInput (a bad partition key; nothing sent), those of Partitions
// and of queueworker.Enqueue.
func (x *Inter[T]) StartBackfill(ctx context.Context, partitions ...string) error {
	return x.jobs().Start(ctx, x.BackfillKind(), partitions, x.Partitions)
}

// BackfillPartition brings the index copies of the primary entities of partition pk in
// line, page by page in RowKey order from opts.After: the way to build an index added to
// a table that already holds data, or to catch up after writes made around this package.
// It is safe while the application keeps writing: every entity whose refs do not record
// the version the page read is reconciled by Reconcile, the live path, which never
// replaces a newer copy (a concurrent write's own message reconciles what changes after
// the page was read). It is idempotent: a rerun, a concurrent run, or a run from an older
// checkpoint only reads what is done.
//
// It returns the checkpoint reached (Done at the partition's end), also when it stops on
// an error: resume with BackfillOptions.After = Checkpoint.After.
//
// Cost: per page of up to 1,000 entities, 1 query of the primaries and 1 query of the
// refs per index; per entity not up to date, a Reconcile (1 read per index, 1 read of
// the primary, 1 transaction per index that changes). The entities of a page are
// reconciled at most 2 at once, so at most 2 transactions are in flight in each index
// partition (see the package documentation, "Throughput").
//
// Errors: errs.ErrInvalidInput (bad keys or options; nothing sent), errs.ErrTransient,
// *repo.Error, ctx's error, the Checkpoint callback's error.
func (x *Inter[T]) BackfillPartition(ctx context.Context, pk string, opts *BackfillOptions) (Checkpoint, error) {
	o, err := opts.withDefaults()
	cp := Checkpoint{PartitionKey: pk, After: o.After}
	if err == nil {
		err = x.checkRef(pk, o.After)
	}
	if err != nil {
		return cp, err
	}
	f := filter.PartitionKey(pk)
	if o.After != "" {
		f = filter.And(f, filter.Gt("RowKey", o.After))
	}
	pager := x.primary.Pages(repo.Query{Filter: f, PageSize: o.PageSize})
	for pager.More() {
		page, err := pager.Next(ctx)
		if err != nil {
			return cp, err
		}
		todo, err := x.behind(ctx, pk, page.Items)
		if err != nil {
			return cp, err
		}
		var reconciled atomic.Int64
		err = forEachIn(ctx, x.opts.Table.Concurrency, x.writesTo(pk), todo, func(ctx context.Context, rk string) error {
			// An entity whose transaction landed in one index is written, also when
			// another index then fails (Written counts it).
			ctx, rec := recordLanded(ctx)
			err := x.Reconcile(ctx, pk, rk)
			if errors.Is(err, repo.ErrInvalidInput) {
				// A stored value no index can hold: reconciled as far as it goes (its
				// other indexes are written); verify reports it. The backfill goes on.
				x.opts.Table.Logger.Warn("secondaryindex: backfill met an entity that cannot be indexed")
				err = nil
			}
			if err == nil || rec.Load() {
				reconciled.Add(1)
			}
			return err
		})
		cp.Written += int(reconciled.Load()) // a page stopped by a failure wrote these too
		if err != nil {
			return cp, err
		}
		cp.Scanned += len(page.Items)
		if n := len(page.Items); n > 0 {
			_, cp.After = x.c.Keys(&page.Items[n-1])
		}
		cp.Done = !pager.More()
		if o.Checkpoint != nil {
			if err := o.Checkpoint(ctx, cp); err != nil {
				return cp, err
			}
		}
		if o.Limit > 0 && cp.Scanned >= o.Limit {
			break
		}
	}
	cp.Done = !pager.More()
	return cp, nil
}

// behind returns the RowKeys of the entities of a page whose refs, in some index, do not
// record the version read: one range query of refs per index.
func (x *Inter[T]) behind(ctx context.Context, pk string, items []T) ([]string, error) {
	if len(items) == 0 {
		return nil, nil
	}
	_, first := x.c.Keys(&items[0])
	_, last := x.c.Keys(&items[len(items)-1])
	late := make(map[string]bool)
	for _, ix := range x.idx {
		part, err := ix.partition(pk)
		if err != nil {
			return nil, err
		}
		refs, err := ix.refs.Collect(ctx, repo.Query{Filter: filter.And(filter.PartitionKey(part),
			filter.Ge("RowKey", refKey(first)), filter.Le("RowKey", refKey(last)))})
		if err != nil {
			return nil, err
		}
		byKey := make(map[string]*refRow, len(refs))
		for i := range refs {
			byKey[refs[i].RowKey] = &refs[i]
		}
		for i := range items {
			v := &items[i]
			_, rk := x.c.Keys(v)
			ref := byKey[refKey(rk)]
			if ref == nil || ref.SourceETag != x.c.ETag(v) || ref.Key != x.wantKey(ix, v, rk) {
				late[rk] = true
			}
		}
	}
	var out []string
	for i := range items {
		_, rk := x.c.Keys(&items[i])
		if late[rk] {
			out = append(out, rk)
		}
	}
	return out, nil
}

// writesTo is the partition whose transactions bound a backfill or repair of partition
// pk: the first index partition that can exist. Every entity of pk has its copy of index
// ix in the one partition "<ix>_<pk>", and a reconciliation writes its indexes one after
// the other, so the entities of pk all write the same partitions, one transaction at a
// time each: at most 2 of them at once (forEachIn) puts at most 2 transactions in flight
// in each. pk itself when no index partition can exist (nothing is written).
func (x *Inter[T]) writesTo(pk string) string {
	for _, ix := range x.idx {
		if p, err := ix.partition(pk); err == nil {
			return p
		}
	}
	return pk
}

// wantKey is the RowKey of v's copy in ix, "" when v has none (or can have none: see
// copyKeyOf).
func (x *Inter[T]) wantKey(ix *interIndex[T], v *T, rk string) string {
	k, _ := x.copyKeyOf(ix, v, rk)
	return k
}

// copyKeyOf is the RowKey of v's copy in ix: "" and nil when v has no value there, ""
// and an *errs.InvalidInputError when its value cannot be part of a copy's key (a stored
// value written around this package).
func (x *Inter[T]) copyKeyOf(ix *interIndex[T], v *T, rk string) (string, error) {
	val, err := ix.value(v)
	if err != nil || val == "" {
		return "", err
	}
	return ix.copyKey(val, rk)
}

// BackfillKind returns the message kind of this Intra's backfill jobs:
// "secondaryindex.backfill." followed by the table's name.
func (x *Intra[T]) BackfillKind() string { return "secondaryindex.backfill." + x.rows.Name() }

// Partitions lists the partitions of the table, in key order, with one query per
// partition. It is how StartBackfill finds what to backfill when given no partitions.
//
// Errors (yielded): errs.ErrTransient, *repo.Error.
func (x *Intra[T]) Partitions(ctx context.Context) iter.Seq2[string, error] {
	return maintain.Partitions(ctx, x.dyn, nil)
}

// StartBackfill enqueues one backfill job per partition (every partition of the table
// when none is given; see Partitions) on IntraOptions.Queue, for the workers that
// Register set up. See Inter.StartBackfill.
//
// Errors: errs.ErrInvalidInput (no IntraOptions.Queue, a bad partition key; nothing
// sent), those of Partitions and of queueworker.Enqueue.
func (x *Intra[T]) StartBackfill(ctx context.Context, partitions ...string) error {
	return x.jobs().Start(ctx, x.BackfillKind(), partitions, x.Partitions)
}

// BackfillPartition writes the missing and stale copies of the entities of partition pk,
// page by page in primary key order from opts.After: the way to build an index added to
// a table that already holds data. Each entity is rewritten in one transaction
// conditional on the ETag its page read (the primary copy merged, so properties T does
// not declare stay), so a backfill never overwrites a newer write: an entity changed
// since its page was read fails the condition, and the write that changed it has already
// written every copy. A unique copy held by another entity (two entities sharing a value
// in data older than the index: the copy names an entity whose primary copy, read to
// check, is live and has the value) is left to it and logged; Verify reports it as a
// Conflict. A copy naming an entity that is gone or holds another value is taken over.
// A unique index whose Properties leave the primary value out names no owner: its copy
// is taken over unless it equals the entity's projection, so entities sharing a value
// take it in turn; Verify reports them as a Conflict. An entity whose value cannot be indexed is logged and passed over. Every
// backfilled entity gets a new ETag (a caller holding the old one must read again). It is
// idempotent; rerun it, or resume from the returned checkpoint.
//
// Cost: 1 query per page of up to 1,000 primary copies; per entity, 1 read per unique
// index where it has a value (1 more when its copy names another entity) and 1
// transaction; at most 2 entities at once, so at most 2 transactions are in flight in pk
// (see the package documentation, "Throughput").
//
// Errors: errs.ErrInvalidInput (bad keys or options; nothing sent), errs.ErrTransient,
// *repo.Error, ctx's error, the Checkpoint callback's error. An error about a copy names
// the index and the entity's keys, never the copy's key (it holds the indexed value).
func (x *Intra[T]) BackfillPartition(ctx context.Context, pk string, opts *BackfillOptions) (Checkpoint, error) {
	o, err := opts.withDefaults()
	cp := Checkpoint{PartitionKey: pk, After: o.After}
	if err != nil {
		return cp, err
	}
	if pk == "" {
		return cp, errs.Invalid("PartitionKey", "is empty")
	}
	if err := codec.ValidateKey("PartitionKey", pk); err != nil {
		return cp, err
	}
	f := filter.RowKeyPrefix(pk, x.all[0].Name+sep)
	if o.After != "" {
		f = filter.And(f, filter.Gt("RowKey", o.After))
	}
	pager := x.rows.Pages(repo.Query{Filter: f, PageSize: o.PageSize})
	for pager.More() {
		page, err := pager.Next(ctx)
		if err != nil {
			return cp, err
		}
		var written atomic.Int64
		err = forEachIn(ctx, maintenanceConcurrency, pk, page.Items, func(ctx context.Context, v T) error {
			w, err := x.rewrite(ctx, "backfill", &v)
			if w {
				written.Add(1)
			}
			return err
		})
		cp.Written += int(written.Load()) // a page stopped by a failure wrote these too
		if err != nil {
			return cp, err
		}
		cp.Scanned += len(page.Items)
		if n := len(page.Items); n > 0 {
			_, cp.After = x.c.Keys(&page.Items[n-1])
		}
		cp.Done = !pager.More()
		if o.Checkpoint != nil {
			if err := o.Checkpoint(ctx, cp); err != nil {
				return cp, err
			}
		}
		if o.Limit > 0 && cp.Scanned >= o.Limit {
			break
		}
	}
	cp.Done = !pager.More()
	return cp, nil
}

// maintenanceConcurrency bounds the entities an Intra backfill or repair writes at once.
// They all write partition pk, so forEachIn's 2 per partition is the bound that holds.
const maintenanceConcurrency = 8

// rewrite writes every copy of v (a primary copy as a page read it, with its ETag) in one
// transaction conditional on that ETag, and reports whether it wrote. The primary copy is
// merged, not replaced: the rewrite exists only to carry the condition, so properties T
// does not declare stay. A copy in a unique index is read first and judged by copyOwner
// (the rule of Verify and Removal; the entity a copy names is read to check that it
// holds the value): one held by another entity (a value two entities share in data
// older than the index) is never taken over (reported by Verify as a Conflict); one of
// v, or whose owner cannot be told (it does not decode, is a partial copy that differs
// from v's, or names an entity that is gone or holds another value: Verify's Stale), is
// replaced conditional on the ETag read;
// a missing one is inserted, so a copy claimed meanwhile fails the transaction and the
// round starts over. An entity changed or deleted since v was read
// needs nothing: the write that changed it wrote every copy (or removed them). A lost
// response is decided from a fresh read of the primary copy. op names the running
// operation (backfill, repair) in the warnings it logs.
func (x *Intra[T]) rewrite(ctx context.Context, op string, v *T) (bool, error) {
	pk, ks, err := x.keysOf(v)
	if err != nil {
		// A stored value that cannot be indexed: verify reports its copies.
		x.rows.Logger().Warn("secondaryindex: " + op + " met an entity that cannot be indexed")
		return false, nil
	}
	for range maxRewrites {
		var w, again bool
		w, again, err = x.rewriteOnce(ctx, op, v, pk, ks)
		if !again {
			return w, err
		}
	}
	return false, err
}

// rewriteOnce is one round of rewrite; again reports a round to run (err says why).
func (x *Intra[T]) rewriteOnce(ctx context.Context, op string, v *T, pk string, ks []string) (wrote, again bool, err error) {
	e, err := x.copyOf(v, pk, 0, ks[0])
	if err != nil {
		return false, false, err
	}
	e.ETag = x.c.ETag(v)
	p := &plan{}
	p.add(x.dyn.UpdateAction(e, &repo.UpdateOptions{Mode: repo.Merge}), step{kind: stepPrimary, rk: ks[0]})
	for i := 1; i < len(x.all); i++ {
		k := ks[i]
		if k == "" {
			continue
		}
		c, err := x.copyOf(v, pk, i, k)
		if err != nil {
			return false, false, err
		}
		if x.all[i].AllowDuplicates {
			// The key holds the primary value: no other entity can own it.
			p.add(x.dyn.UpsertAction(c, nil), step{ix: i, kind: stepKeep, rk: k})
			continue
		}
		have, err := x.dyn.Get(retry.WithSensitiveKeys(ctx), pk, k)
		switch {
		case errors.Is(err, repo.ErrNotFound):
			p.add(x.dyn.InsertAction(c), step{ix: i, kind: stepPut, rk: k})
			continue
		case err != nil:
			return false, false, x.aboutCopy(err, op, i, pk, ks[0])
		}
		own, err := x.copyOwner(ctx, &have, v, pk, i, x.pointHolder(pk, i, k))
		if err != nil {
			return false, false, x.aboutCopy(err, op, i, pk, ks[0])
		}
		if own == ownedByOther {
			x.rows.Logger().Warn("secondaryindex: "+op+" left a unique copy held by another entity (Verify reports it as a conflict)",
				zap.String("index", x.all[i].Name))
			continue
		}
		c.ETag = have.ETag
		p.add(x.dyn.UpdateAction(c, nil), step{ix: i, kind: stepKeep, rk: k})
	}
	if len(p.acts) == 1 {
		return false, false, nil // no copy this entity can have: nothing to write
	}
	_, err = x.submitted(ctx, p)
	if err == nil {
		return true, false, nil
	}
	var ae *repo.ActionError
	switch {
	case errors.Is(err, repo.ErrOutcomeUnknown):
		var ou *errs.OutcomeUnknownError
		if errors.As(err, &ou) && errors.As(ou.Err, &ae) && ae.Index > 0 && ae.Index < len(p.steps) {
			// The retry's answer names the copy's key, which holds the value.
			err = x.aboutCopy(err, op, p.steps[ae.Index].ix, pk, ks[0])
		}
		rk := ks[0]
		cur, gerr := x.rows.Get(ctx, pk, rk)
		switch {
		case errors.Is(gerr, repo.ErrNotFound):
			return false, false, nil
		case gerr != nil:
			return false, false, errors.Join(err, gerr)
		case x.c.ETag(&cur) != x.c.ETag(v):
			return true, false, nil // written: by this call or by a write that wrote every copy
		}
		return false, true, err // not applied: the same version is still there
	case errors.As(err, &ae) && ae.Index == 0 && (errors.Is(err, repo.ErrPreconditionFailed) || errors.Is(err, repo.ErrNotFound)):
		return false, false, nil // changed or deleted since read: that write did the copies
	case errors.As(err, &ae) && ae.Index > 0 && ae.Index < len(p.steps):
		// A copy's action failed: the error names the copy's key, which holds the value.
		err = x.aboutCopy(err, op, p.steps[ae.Index].ix, pk, ks[0])
		if errors.Is(err, repo.ErrPreconditionFailed) || errors.Is(err, repo.ErrNotFound) || errors.Is(err, repo.ErrAlreadyExists) {
			return false, true, err // a copy changed since read: read it again and decide again
		}
	case err != nil && !(errors.As(err, &ae) && ae.Index == 0) && len(p.steps) > 1:
		// Not proven to be about the primary (a whole-transaction answer, an action index
		// out of range): it may name a copy's key, so it names the entity instead.
		err = &copyError{op: op, pk: pk, rk: ks[0], err: err}
	}
	return false, false, err
}

// maxRewrites bounds the attempts of rewrite whose outcome stays unknown.
const maxRewrites = 5

// Backfill writes every copy of items with bulk upserts (repo.BulkWrite): the way to load
// an empty partition or to rewrite the copies after an index was added. It is NOT atomic
// per entity and does not check unique indexes against what is stored (only among items,
// where a value held twice is refused before anything is sent); rerun it after a failure,
// since every write is an idempotent upsert. On success each item's ETag field holds its
// primary copy's ETag.
//
// Errors: errs.ErrInvalidInput (nothing sent), a *repo.BulkError with one slot per item (the
// first failure among its copies), ctx errors.
func (x *Intra[T]) Backfill(ctx context.Context, items []*T) error {
	var copies []*codec.Entity
	owner := []int{}
	seen := map[[2]string]int{}
	primaries := make([]*codec.Entity, len(items))
	for n, v := range items {
		pk, ks, err := x.keysOf(v)
		if err != nil {
			return fmt.Errorf("item %d: %w", n, err)
		}
		for i, rk := range ks {
			if rk == "" {
				continue
			}
			if m, dup := seen[[2]string{pk, rk}]; dup {
				if i == 0 {
					return errs.Invalid(fmt.Sprintf("index %q", x.all[0].Name), "items %d and %d have the same primary value", m, n)
				}
				return errs.Invalid(fmt.Sprintf("index %q", x.all[i].Name), "items %d and %d hold the value %q of a unique index", m, n, x.all[i].valueOf(v))
			}
			seen[[2]string{pk, rk}] = n
			e, err := x.copyOf(v, pk, i, rk)
			if err != nil {
				return fmt.Errorf("item %d: %w", n, err)
			}
			if i == 0 {
				primaries[n] = e
			}
			copies = append(copies, e)
			owner = append(owner, n)
		}
	}
	err := x.dyn.BulkWrite(ctx, copies, nil)
	var be *repo.BulkError
	if err != nil && !errors.As(err, &be) {
		return err
	}
	var out *repo.BulkError
	if be != nil {
		out = &repo.BulkError{Errors: make([]error, len(items))}
		for i, e := range be.Errors {
			if n := owner[i]; e != nil && out.Errors[n] == nil {
				// The transaction's error may name a copy's key, which holds the value.
				out.Errors[n] = &copyError{op: "backfill", pk: primaries[n].PartitionKey, rk: primaries[n].RowKey, err: e}
				out.Failed++
			}
		}
	}
	for n, v := range items {
		if out == nil || out.Errors[n] == nil {
			x.c.SetETag(v, primaries[n].ETag)
		}
	}
	if out != nil {
		return out
	}
	return nil
}
