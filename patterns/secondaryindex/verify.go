package secondaryindex

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"github.com/tablepatterns/tablepatterns/retry"
)

// Verify compares the primary entities of partition pk with their index copies and
// reports, read-only, the missing copies (an entity with a value and no copy), the stale
// ones (a copy that does not hold what the entity holds, or whose ref does not record the
// entity's current version) and the orphans (a copy of an entity that is gone or has
// another value), with counts and the first VerifyOptions.Samples of them. An entity with
// a value no copy can hold (the copy's key, or the index partition of pk, over the key
// limit: stored around this package) is counted Unindexable, never passed over.
//
// It reads the primaries and then each index partition, not one snapshot: copies of
// entities written during the call (whose reconciliation is still queued) show as
// drift. Run it when the queue is drained, or read drift as "repair would look at these".
//
// Copies of an entity type with encrypted fields are compared by key and ref only: their
// ciphertext differs at every encoding.
//
// Cost: 1 query per 1,000 primaries, 1 query per 1,000 copies and refs per index.
//
// Errors: errs.ErrInvalidInput (bad key or options; nothing sent), errs.ErrTransient,
// *repo.Error.
func (x *Inter[T]) Verify(ctx context.Context, pk string, opts *VerifyOptions) (*Report, error) {
	samples, err := opts.samples()
	if err == nil {
		err = x.checkRef(pk, "")
	}
	if err != nil {
		return nil, err
	}
	prim, err := x.primary.Collect(ctx, repo.Query{Filter: filter.PartitionKey(pk)})
	if err != nil {
		return nil, err
	}
	r := &Report{PartitionKey: pk, Entities: len(prim)}
	byRK := make(map[string]*T, len(prim))
	for i := range prim {
		_, rk := x.c.Keys(&prim[i])
		byRK[rk] = &prim[i]
	}
	for _, ix := range x.idx {
		part, err := ix.partition(pk)
		if err != nil {
			// This index can hold no copy of pk (its name and the key exceed the key
			// limit): every entity with a value in it is unindexable, not clean.
			for rk, v := range byRK {
				if k, err := x.copyKeyOf(ix, v, rk); k != "" || err != nil {
					r.add(Sample{Drift: Unindexable, Index: ix.Name, PartitionKey: pk, RowKey: rk}, samples)
				}
			}
			continue
		}
		rows, err := ix.copies.Collect(ctx, repo.Query{Filter: filter.PartitionKey(part)})
		if err != nil {
			return nil, err
		}
		refs := map[string]*codec.Entity{}
		copies := map[string]*codec.Entity{}
		for i := range rows {
			e := &rows[i]
			if e.RowKey < lowestCopy {
				refs[e.RowKey] = e
			} else {
				copies[e.RowKey] = e
				r.Copies++
			}
		}
		for rk, v := range byRK {
			want, err := x.copyKeyOf(ix, v, rk)
			if err != nil {
				r.add(Sample{Drift: Unindexable, Index: ix.Name, PartitionKey: pk, RowKey: rk}, samples)
				continue
			}
			if want == "" {
				continue // an orphan copy of it, if any, is found below
			}
			ref := refs[refKey(rk)]
			refOK := ref != nil && str(ref, "Key") == want && str(ref, "SourceETag") == x.c.ETag(v)
			s := Sample{Index: ix.Name, PartitionKey: pk, RowKey: rk, CopyKey: want}
			have := copies[want]
			if have == nil {
				s.Drift = Missing
				r.add(s, samples)
				continue
			}
			wantE, err := project(x.c, v, part, want, ix.props)
			if err != nil {
				return nil, err
			}
			if !refOK || (!x.c.Encrypted() && !sameProperties(have.Properties, wantE.Properties)) {
				s.Drift = Stale
				r.add(s, samples)
			}
		}
		for key := range copies {
			parts, err := keys.Split(key)
			owner := ""
			if err == nil && len(parts) == 2 {
				owner = parts[1]
			}
			if v := byRK[owner]; v != nil && owner != "" && x.wantKey(ix, v, owner) == key {
				continue
			}
			r.add(Sample{Drift: Orphan, Index: ix.Name, PartitionKey: pk, RowKey: owner, CopyKey: key}, samples)
		}
	}
	return r, nil
}

// str returns e's string property name, "" when it is absent or not a string.
func str(e *codec.Entity, name string) string {
	s, _ := e.Properties[name].(string)
	return s
}

// Repair runs Verify on partition pk and fixes what it found, through the live path's
// reconciliation: for each entity with drift, a Reconcile (which writes its refs if it
// has none) and then, per drifted index, the same transaction forced (the copy rewritten
// from a fresh read of the primary, the orphan deleted, the ref updated, all conditional
// on the ref's ETag), so a repair never replaces a newer copy and a concurrent write or
// reconciliation makes it start over. An orphan whose copy names no entity is left and
// reported (nothing this package wrote). It is idempotent: a second Repair finds nothing.
// The report is Verify's, with Repaired set to the entities it wrote: also one whose
// repair failed after one of its transactions landed and answered; never one it left, nor
// one whose every transaction failed (when an answer was lost, whether it landed is
// unknown: not counted).
//
// Cost: Verify's, plus per drifted entity a Reconcile and 1 transaction per drifted
// index.
//
// Errors: as Verify and Reconcile.
func (x *Inter[T]) Repair(ctx context.Context, pk string, opts *VerifyOptions) (*Report, error) {
	r, err := x.Verify(ctx, pk, opts)
	if err != nil {
		return nil, err
	}
	type fix struct {
		drifted map[string]bool     // index names
		orphans map[string][]string // index name -> orphan copy keys (an entity can leave several)
	}
	fixes := map[string]*fix{}
	var order []string
	for _, s := range r.found {
		if s.RowKey == "" || s.Drift == Unindexable {
			continue // a copy naming no entity, or an entity no copy can hold: reported, left
		}
		f := fixes[s.RowKey]
		if f == nil {
			f = &fix{drifted: map[string]bool{}, orphans: map[string][]string{}}
			fixes[s.RowKey] = f
			order = append(order, s.RowKey)
		}
		f.drifted[s.Index] = true
		if s.Drift == Orphan {
			f.orphans[s.Index] = append(f.orphans[s.Index], s.CopyKey)
		}
	}
	for _, f := range fixes {
		for _, ks := range f.orphans {
			slices.Sort(ks) // in key order: a rerun deletes in the same order
		}
	}
	var repaired atomic.Int64
	err = forEachIn(ctx, x.opts.Table.Concurrency, x.writesTo(pk), order, func(ctx context.Context, rk string) error {
		f := fixes[rk]
		if x.checkRef(pk, rk) != nil {
			return nil // a key read from a copy that no entity can have: left, and reported, not repaired
		}
		// Counted when one of its transactions landed and answered, even if a later one
		// failed: the entity was written.
		wrote, err := x.repairEntity(ctx, pk, rk, f.drifted, f.orphans)
		if wrote {
			repaired.Add(1)
		}
		return err
	})
	r.Repaired = int(repaired.Load())
	return r, err
}

// repairEntity reconciles the entity rk, forcing the indexes in drifted: their copy is
// rewritten even when the ref says it is up to date (a copy changed or deleted by hand),
// and each of orphans[index], copies the ref does not know, is deleted by a forced
// transaction of its own, each conditional on the ref's ETag read just before it. wrote
// reports that one of its transactions (the live Reconcile's or a forced one) landed and
// answered: an error after it leaves the entity written in part.
func (x *Inter[T]) repairEntity(ctx context.Context, pk, rk string, drifted map[string]bool, orphans map[string][]string) (wrote bool, err error) {
	if x.checkRef(pk, rk) != nil {
		return false, nil // a key read from a copy that no entity can have: left, and reported
	}
	ctx, rec := recordLanded(ctx)
	// The live path first: it writes a ref where there is none, so every decision below
	// is conditional on a ref's ETag.
	if err := x.Reconcile(ctx, pk, rk); err != nil && !errors.Is(err, repo.ErrInvalidInput) {
		return rec.Load(), err
	}
	// Round i deletes the i-th orphan of each index (round 0 also rewrites every drifted
	// index): a transaction names one old copy per index, and each round reads the refs
	// again, so every delete stays conditional on the ref version it decided from.
	for i := 0; ; i++ {
		round := map[string]string{}
		forced := drifted
		if i > 0 {
			forced = map[string]bool{}
		}
		for name, ks := range orphans {
			if i < len(ks) {
				round[name] = ks[i]
				forced[name] = true
			}
		}
		if i > 0 && len(round) == 0 {
			return rec.Load(), nil
		}
		if err := x.forceIndexes(ctx, pk, rk, forced, round); err != nil {
			return rec.Load(), err
		}
	}
}

// forceIndexes runs one forced reconciliation of the indexes in drifted of the entity rk,
// naming orphans[index] as the old copy to delete where the ref's copy is the one to keep.
func (x *Inter[T]) forceIndexes(ctx context.Context, pk, rk string, drifted map[string]bool, orphans map[string]string) error {
	op := retry.Op{Name: "repair index", Resource: x.primary.Name(), PartitionKey: pk, RowKey: rk, SensitiveKeys: true} // it reads and writes copies
	return retry.Optimistic(ctx, x.retry, op, func(ctx context.Context, _ int) error {
		parts := make([]string, len(x.idx))
		refs := make([]*refRow, len(x.idx))
		for i, ix := range x.idx {
			if !drifted[ix.Name] {
				continue
			}
			p, err := ix.partition(pk)
			if err != nil {
				continue
			}
			parts[i] = p
			// As in Reconcile: the ref before the primary.
			ref, err := ix.refs.Get(ctx, p, refKey(rk))
			switch {
			case errors.Is(err, repo.ErrNotFound):
				return retry.Again(err) // collected meanwhile: Reconcile writes it again
			case err != nil:
				return err
			}
			refs[i] = &ref
		}
		cur, err := x.primary.Get(ctx, pk, rk)
		var curp *T
		switch {
		case errors.Is(err, repo.ErrNotFound):
		case err != nil:
			return err
		default:
			curp = &cur
		}
		for i, ix := range x.idx {
			if refs[i] == nil {
				continue
			}
			forced := *refs[i]
			// Never the ETag of a primary: the ref reads as out of date, so the copy is
			// rewritten (the ref's own ETag, kept, makes the transaction conditional).
			forced.SourceETag = "repair:" + forced.SourceETag
			if k := orphans[ix.Name]; k != "" && (forced.Key == "" || forced.Key == x.wantOf(ix, curp, rk)) {
				// The ref's copy, if any, is the one to keep: name the orphan as the copy
				// to delete instead.
				forced.Key = k
			}
			err := x.reconcileIndex(ctx, ix, parts[i], rk, curp, &forced)
			if errors.Is(err, repo.ErrInvalidInput) {
				continue
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

func (x *Inter[T]) wantOf(ix *interIndex[T], v *T, rk string) string {
	if v == nil {
		return ""
	}
	return x.wantKey(ix, v, rk)
}

// Verify compares the primary copies of partition pk with their index copies and
// reports, read-only, the missing copies (an entity with a value and no copy), the stale
// ones (a copy that does not hold what the primary copy holds), the orphans (a copy
// no primary copy wants) and the conflicts (an entity whose value in a unique index is
// held by the copy of another entity), with counts and the first VerifyOptions.Samples.
// An entity with a value no copy key can hold is counted Unindexable.
//
// Writes are atomic, so drift comes only from writes around this package (or from the
// primaries of a table that held data before an index was added). The call reads the
// primaries and then each index's copies: an entity written in between can show as drift
// that is not there; Repair re-checks before it writes.
//
// Two live entities with one unique value whose copy exists are a Conflict whatever the
// copy holds: each of them but the one the copy is proven to be (all of them when it is
// proven none's, as a partial copy equal to several projections). When there is no copy,
// each is Missing; Repair writes the copy for one, and the next Verify reports the others
// as Conflicts. For the only entity with a value,
// whose the copy is is decided by the rule Backfill, Repair and Removal follow
// (copyOwner; the named owner checked against the partition read, without a request):
// one whose owner cannot be told (it does not decode, differs from a partial
// projection, or names an entity that is gone or holds another value) is Stale. The
// properties of copies of an entity type with encrypted fields are not compared beyond
// that: their ciphertext differs at every encoding.
//
// Cost: 1 query per 1,000 primaries, 1 query per 1,000 copies per index.
//
// Errors: errs.ErrInvalidInput (bad key or options; nothing sent), errs.ErrTransient,
// *repo.Error, and for a type with encrypted fields the key holder's own failure. An
// error about a copy names the index and the entity's keys, never the copy's key.
func (x *Intra[T]) Verify(ctx context.Context, pk string, opts *VerifyOptions) (*Report, error) {
	r, _, err := x.verify(ctx, pk, opts)
	return r, err
}

func (x *Intra[T]) verify(ctx context.Context, pk string, opts *VerifyOptions) (*Report, map[string]*T, error) {
	samples, err := opts.samples()
	if err == nil && pk == "" {
		err = errs.Invalid("PartitionKey", "is empty")
	}
	if err == nil {
		err = codec.ValidateKey("PartitionKey", pk)
	}
	if err != nil {
		return nil, nil, err
	}
	prim, err := x.rows.Collect(ctx, repo.Query{Filter: filter.RowKeyPrefix(pk, x.all[0].Name+sep)})
	if err != nil {
		return nil, nil, err
	}
	r := &Report{PartitionKey: pk, Entities: len(prim)}
	byRK := make(map[string]*T, len(prim))
	wanted := make([]map[string]bool, len(x.all))
	for i := range wanted {
		wanted[i] = map[string]bool{}
	}
	type want struct {
		v  *T
		rk string
		ks []string
	}
	var wants []want
	for i := range prim {
		v := &prim[i]
		_, rk := x.c.Keys(v)
		byRK[rk] = v
		_, ks, err := x.keysOf(v)
		if err != nil {
			// A stored value no key can hold: the entity can have no copy (Repair leaves
			// it), and a verify must not read it as clean.
			for _, name := range x.unindexable(v) {
				r.add(Sample{Drift: Unindexable, Index: name, PartitionKey: pk, RowKey: rk}, samples)
			}
			continue
		}
		for n, k := range ks {
			if k != "" {
				wanted[n][k] = true
			}
		}
		wants = append(wants, want{v, rk, ks})
	}
	for n := 1; n < len(x.all); n++ {
		ix := x.all[n]
		rows, err := x.dyn.Collect(ctx, repo.Query{Filter: filter.RowKeyPrefix(pk, ix.Name+sep)})
		if err != nil {
			return nil, nil, err
		}
		r.Copies += len(rows)
		copies := make(map[string]*codec.Entity, len(rows))
		for i := range rows {
			copies[rows[i].RowKey] = &rows[i]
		}
		// The entities that want each key: two live entities with one unique value are a
		// Conflict whatever the copy holds (the copy can be only one's).
		byKey := map[string][]int{}
		var keyOrder []string
		for j, w := range wants {
			if k := w.ks[n]; k != "" {
				if byKey[k] == nil {
					keyOrder = append(keyOrder, k)
				}
				byKey[k] = append(byKey[k], j)
			}
		}
		for _, k := range keyOrder {
			group := byKey[k]
			have := copies[k]
			if have == nil {
				for _, j := range group {
					r.add(Sample{Drift: Missing, Index: ix.Name, PartitionKey: pk, RowKey: wants[j].rk, CopyKey: k}, samples)
				}
				continue
			}
			holds := x.partitionHolder(byRK, pk, n, k)
			owns := make([]ownership, len(group))
			owner := -1 // the one entity of the group the copy is proven to be, if exactly one
			for g, j := range group {
				if owns[g], err = x.copyOwner(ctx, have, wants[j].v, pk, n, holds); err != nil {
					return nil, nil, x.aboutCopy(err, "verify", n, pk, wants[j].rk)
				}
				if owns[g] == ownedByEntity {
					if owner == -1 {
						owner = g
					} else {
						owner = -2 // equal to two projections: proven to be neither's
					}
				}
			}
			for g, j := range group {
				w := wants[j]
				s := Sample{Index: ix.Name, PartitionKey: pk, RowKey: w.rk, CopyKey: k}
				switch {
				case g == owner:
					e, err := x.copyOf(w.v, pk, n, k)
					if err != nil {
						return nil, nil, x.aboutCopy(err, "verify", n, pk, w.rk)
					}
					if !x.c.Encrypted() && !sameProperties(have.Properties, e.Properties) {
						s.Drift = Stale
						r.add(s, samples)
					}
				case len(group) > 1 || owns[g] == ownedByOther:
					// Another live entity holds the value too (or the copy is proven
					// another's): not this entity's to rewrite (Repair would hand it back
					// and forth between the two).
					s.Drift = Conflict
					r.add(s, samples)
				default:
					// The only entity with the value, and a copy under it that cannot be
					// told to be its own (it does not decode, differs from the entity's
					// projection, or names an entity that does not hold the value): drift,
					// which Repair rewrites as a backfill does.
					s.Drift = Stale
					r.add(s, samples)
				}
			}
		}
		for k := range copies {
			if !wanted[n][k] {
				r.add(Sample{Drift: Orphan, Index: ix.Name, PartitionKey: pk, CopyKey: k}, samples)
			}
		}
	}
	return r, byRK, nil
}

// Repair runs Verify on partition pk and fixes what it found. An entity with a missing or
// stale copy is rewritten as BackfillPartition does, conditional on the ETag Verify read
// (one transaction rewriting every copy it can have); one changed since needs nothing,
// since the write that changed it wrote every copy. A Conflict is reported and left:
// Repair never takes a unique copy over from another entity. An orphan is read
// again, the primaries are read again after it, and the orphan is deleted conditional
// on the ETag read only if no primary wants it: a write that makes it wanted rewrites it
// first, and the delete fails its condition. It is idempotent: a second Repair finds
// nothing. The report is Verify's, with Repaired set to the entities and orphans written.
//
// Cost: Verify's, plus per drifted entity 1 read per unique index with a value and 1
// transaction; when there are orphans, 1 read each, one more query of the primaries,
// and 1 delete each.
//
// Errors: as Verify and Update. An error about a copy names the index and the entity's
// keys (the partition only, for an orphan), never the copy's key.
func (x *Intra[T]) Repair(ctx context.Context, pk string, opts *VerifyOptions) (*Report, error) {
	r, byRK, err := x.verify(ctx, pk, opts)
	if err != nil {
		return nil, err
	}
	var entities []*T
	seen := map[string]bool{}
	var orphans []Sample
	for _, s := range r.found {
		if s.Drift == Orphan {
			orphans = append(orphans, s)
			continue
		}
		if s.Drift == Conflict || s.Drift == Unindexable {
			continue // another entity's copy, or a value no key can hold: reported, left
		}
		if !seen[s.RowKey] {
			seen[s.RowKey] = true
			entities = append(entities, byRK[s.RowKey])
		}
	}
	var repaired atomic.Int64
	err = forEachIn(ctx, maintenanceConcurrency, pk, entities, func(ctx context.Context, v *T) error {
		w, err := x.rewrite(ctx, "repair", v)
		if w {
			repaired.Add(1)
		}
		return err
	})
	if err == nil && len(orphans) > 0 {
		var n int
		n, err = x.dropOrphans(ctx, pk, orphans)
		repaired.Add(int64(n))
	}
	r.Repaired = int(repaired.Load())
	return r, err
}

// unindexable names the indexes in which v has a value no copy key can hold (the primary
// index when its own key cannot be built: then no copy can exist at all).
func (x *Intra[T]) unindexable(v *T) []string {
	_, primary, _, err := x.primaryOf(v)
	if err != nil {
		return []string{x.all[0].Name}
	}
	var out []string
	for _, ix := range x.all[1:] {
		val, err := ix.value(v)
		if err == nil && val != "" {
			_, err = ix.intraKey(val, primary)
		}
		if err != nil {
			out = append(out, ix.Name)
		}
	}
	return out
}

// dropOrphans deletes the copies of orphans that are still orphans: each is read (its
// ETag), then every primary is read, and a copy no primary wants is deleted conditional on
// the ETag read.
func (x *Intra[T]) dropOrphans(ctx context.Context, pk string, orphans []Sample) (int, error) {
	ctx = retry.WithSensitiveKeys(ctx) // the orphans' keys hold their values
	etags := make([]string, len(orphans))
	for i, s := range orphans {
		e, err := x.dyn.Get(ctx, pk, s.CopyKey)
		switch {
		case errors.Is(err, repo.ErrNotFound):
			continue
		case err != nil:
			return 0, &copyError{op: "repair", index: s.Index, pk: pk, err: err} // not the key: it holds the value
		}
		etags[i] = e.ETag
	}
	prim, err := x.rows.Collect(ctx, repo.Query{Filter: filter.RowKeyPrefix(pk, x.all[0].Name+sep)})
	if err != nil {
		return 0, err
	}
	wanted := map[string]bool{}
	for i := range prim {
		if _, ks, err := x.keysOf(&prim[i]); err == nil {
			for _, k := range ks {
				wanted[k] = true
			}
		}
	}
	n := 0
	for i, s := range orphans {
		if etags[i] == "" || wanted[s.CopyKey] {
			continue
		}
		err := x.dyn.Delete(ctx, pk, s.CopyKey, &repo.DeleteOptions{ETag: etags[i]})
		switch {
		case err == nil:
			n++
		case errors.Is(err, repo.ErrPreconditionFailed), errors.Is(err, repo.ErrNotFound), errors.Is(err, repo.ErrOutcomeUnknown):
			// Rewritten or removed meanwhile (or by this call): the next Verify tells.
		default:
			return n, &copyError{op: "repair", index: s.Index, pk: pk, err: err}
		}
	}
	return n, nil
}

// partitionHolder is the holder of the copy key k of the index i for Verify, which has
// every primary of partition pk in byRK (by primary RowKey): no request.
func (x *Intra[T]) partitionHolder(byRK map[string]*T, pk string, i int, k string) holder {
	return func(_ context.Context, owner string) (ownership, error) {
		rk, err := x.all[0].intraKey(owner, "")
		if err != nil {
			return ownerVanished, nil
		}
		o := byRK[rk]
		if o == nil {
			return ownerVanished, nil
		}
		return x.holdsKey(o, rk, i, k), nil
	}
}
