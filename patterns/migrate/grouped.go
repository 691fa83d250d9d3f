package migrate

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"github.com/tablepatterns/tablepatterns/retry"
)

// The reads and writes of a chunk (page.go), grouped by partition: the rows of one
// partition that a chunk reads are read with one range query (PartitionKey eq, RowKey
// from the smallest to the largest wanted), a lone row with a point read; the writes of
// one partition go in entity group transactions, each write with the condition it has
// alone (insert: none there; replace, merge and delete: If-Match the version read). A row a range
// query returns is an answer of the store: it must lie in the range asked and come in
// ascending key order, or the chunk is refused. Rows in the range that were not asked
// for are ignored.

// readCopies reads the copies of items (at their new keys) and validates each as
// readCopy does.
func (m *Migration[O, N]) readCopies(ctx context.Context, items []item) error {
	ks := make([][2]string, len(items))
	for i, it := range items {
		npk, nrk, err := m.newKeys(it.pk, it.rk)
		if err != nil {
			return err
		}
		ks[i] = [2]string{npk, nrk}
	}
	vs, err := m.readMany(ctx, m.tgt, ks, scanProps)
	if err != nil {
		return err
	}
	for i := range items {
		items[i].npk = ks[i][0]
		if items[i].c = vs[i]; vs[i].found {
			if err := m.copyMeta(&items[i].c, items[i].pk, items[i].rk); err != nil {
				return err
			}
		}
	}
	return nil
}

// readOlds reads the old entities of items into their s, whole (to be copied) or only
// their keys and version; a copy at old keys is refused as readSource refuses it.
func (m *Migration[O, N]) readOlds(ctx context.Context, items []*item, whole bool) error {
	ks := make([][2]string, len(items))
	for i, it := range items {
		ks[i] = [2]string{it.pk, it.rk}
	}
	sel := []string{"PartitionKey", "RowKey", PropMigration}
	if whole {
		sel = nil
	}
	vs, err := m.readMany(ctx, m.src, ks, sel)
	if err != nil {
		return err
	}
	for i, it := range items {
		if v := vs[i]; v.found && m.sameTable && v.e.Properties[PropMigration] != nil {
			return errs.Invalid("source row", "a copy of a migration sits at old keys (%s, %s)", it.pk, it.rk)
		}
		it.s = vs[i]
	}
	return nil
}

// readMany reads the rows at ks of t (absent: a version with found false), a range query
// per partition with more than one of them.
func (m *Migration[O, N]) readMany(ctx context.Context, t *repo.Table[codec.Entity], ks [][2]string, sel []string) ([]version, error) {
	out := make([]version, len(ks))
	byPK := map[string][]int{}
	var pks []string
	for i, k := range ks {
		if byPK[k[0]] == nil {
			pks = append(pks, k[0])
		}
		byPK[k[0]] = append(byPK[k[0]], i)
	}
	if len(pks) == 0 {
		return out, nil
	}
	err := retry.Schedule(ctx, pks, &retry.ScheduleOptions{Concurrency: m.opts.Concurrency, PartitionConcurrency: 1}, func(ctx context.Context, g int) error {
		pk, idx := pks[g], byPK[pks[g]]
		if len(idx) == 1 {
			v, err := get(ctx, t, pk, ks[idx[0]][1])
			out[idx[0]] = v
			return err
		}
		return readRange(ctx, t, pk, ks, idx, sel, out)
	})
	return out, err
}

// readRange reads the rows ks[idx] of partition pk with one range query (paged).
func readRange(ctx context.Context, t *repo.Table[codec.Entity], pk string, ks [][2]string, idx []int, sel []string, out []version) error {
	want := make(map[string]int, len(idx))
	rks := make([]string, 0, len(idx))
	for _, i := range idx {
		want[ks[i][1]] = i
		rks = append(rks, ks[i][1])
	}
	slices.SortFunc(rks, keys.Compare)
	lo, hi := rks[0], rks[len(rks)-1]
	q := repo.Query{Filter: filter.And(filter.Eq("PartitionKey", pk), filter.Ge("RowKey", lo), filter.Le("RowKey", hi)), Select: sel}
	p := t.Pages(q)
	last := ""
	for p.More() {
		page, err := p.Next(ctx)
		if err != nil {
			if isTableNotFound(err) || errors.Is(err, repo.ErrNotFound) {
				return nil
			}
			return err
		}
		for j := range page.Items {
			e := &page.Items[j]
			if e.PartitionKey != pk || keys.Compare(e.RowKey, lo) < 0 || keys.Compare(e.RowKey, hi) > 0 ||
				last != "" && keys.Compare(e.RowKey, last) <= 0 {
				return errs.Invalid("range read", "the store returned (%s, %s) outside the range asked or out of key order", e.PartitionKey, e.RowKey)
			}
			last = e.RowKey
			if i, ok := want[e.RowKey]; ok {
				out[i] = version{found: true, etag: e.ETag, e: e}
			}
		}
	}
	return nil
}

// grouped runs one write per item, those of one partition (part) in entity group
// transactions of up to 100 (all or nothing), a lone one alone (one). A transaction that
// commits calls ok for each of its items; one the store refuses (an entity changed or
// gone since it was read, an outcome lost) or that cannot be sent as one calls refused
// for each, which decides from fresh reads or alone.
func (m *Migration[O, N]) grouped(ctx context.Context, items []*item, part func(*item) string, action func(*item) (repo.Action, error),
	one, refused func(context.Context, *item) error, ok func(*item)) error {
	byPK := map[string][]*item{}
	var pks []string
	for _, it := range items {
		pk := part(it)
		if byPK[pk] == nil {
			pks = append(pks, pk)
		}
		byPK[pk] = append(byPK[pk], it)
	}
	var batches [][]*item
	var parts []string
	for _, pk := range pks {
		for g := range slices.Chunk(byPK[pk], repo.MaxTransactionActions) {
			batches, parts = append(batches, g), append(parts, pk)
		}
	}
	return retry.Schedule(ctx, parts, &retry.ScheduleOptions{Concurrency: m.opts.Concurrency, PartitionConcurrency: 1}, func(ctx context.Context, i int) error {
		b := batches[i]
		if len(b) == 1 {
			return one(ctx, b[0])
		}
		actions := make([]repo.Action, len(b))
		for j, it := range b {
			a, err := action(it)
			if err != nil {
				return err
			}
			actions[j] = a
		}
		err := repo.CheckTransaction(actions...)
		if err == nil {
			_, err = repo.Submit(ctx, actions...)
			if err == nil {
				for _, it := range b {
					ok(it)
				}
				return nil
			}
			if !conflict(err) && !errors.Is(err, errs.ErrDeleteMisaddressed) {
				return err
			}
		}
		for _, it := range b {
			if err := refused(ctx, it); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeCopies is the rule's copy write for items (their copy and old entity read): the
// copy inserted, replaced If-Match the copy read, or (the old entity gone) deleted
// If-Match; those of one new partition in transactions. An entity whose write another
// writer beat (its own, or its transaction's) goes to the per-entity rule.
func (m *Migration[O, N]) writeCopies(ctx context.Context, items []*item) error {
	return m.grouped(ctx, items, func(it *item) string { return it.npk }, func(it *item) (repo.Action, error) {
		m.seams.beforeCopyWrite(ctx, it.pk, it.rk)
		switch {
		case !it.s.found:
			return m.tgt.DeleteAction(it.c.e.PartitionKey, it.c.e.RowKey, &repo.DeleteOptions{ETag: it.c.etag}), nil
		case !it.c.found:
			e, err := m.copyOf(it.s, it.pk, it.rk)
			if err != nil {
				return repo.Action{}, err
			}
			return m.tgt.InsertAction(e), nil
		default:
			e, err := m.copyOf(it.s, it.pk, it.rk)
			if err != nil {
				return repo.Action{}, err
			}
			e.ETag = it.c.etag
			return m.tgt.UpdateAction(e, nil), nil
		}
	}, func(ctx context.Context, it *item) error {
		var err error
		if it.s.found {
			err = m.writeCopy(ctx, it.s, it.c, it.pk, it.rk)
		} else {
			err = m.dropStale(ctx, it.c)
		}
		it.wrote, it.again = err == nil, conflict(err)
		if err != nil && !it.again {
			return err
		}
		return nil
	}, func(_ context.Context, it *item) error {
		it.again = true
		return nil
	}, func(it *item) { it.wrote = true })
}

// detachAll marks the current copies of items detached (a merge If-Match the copy read),
// those of one new partition in transactions, and returns the items it detached; an
// entity whose copy changed since goes to the per-entity rule.
func (m *Migration[O, N]) detachAll(ctx context.Context, items []*item) ([]*item, error) {
	var mu sync.Mutex
	var done []*item
	detached := func(it *item) {
		mu.Lock()
		defer mu.Unlock()
		done = append(done, it)
	}
	err := m.grouped(ctx, items, func(it *item) string { return it.npk }, func(it *item) (repo.Action, error) {
		return m.tgt.UpdateAction(detachment(it.c), &repo.UpdateOptions{Mode: repo.Merge}), nil
	}, func(ctx context.Context, it *item) error {
		err := m.detach(ctx, it.c)
		switch {
		case err == nil:
			detached(it)
		case conflict(err):
			it.again = true
		default:
			return err
		}
		return nil
	}, func(_ context.Context, it *item) error {
		it.again = true
		return nil
	}, detached)
	return done, err
}

// deleteOlds deletes the old entities of items If-Match the version each one's detached
// copy records, those of one partition in transactions; a transaction refused (one
// entity gone or changed since) deletes its entities one by one.
func (m *Migration[O, N]) deleteOlds(ctx context.Context, items []*item) error {
	return m.grouped(ctx, items, func(it *item) string { return it.pk }, func(it *item) (repo.Action, error) {
		return m.src.DeleteAction(it.pk, it.rk, &repo.DeleteOptions{ETag: it.c.srcETag}), nil
	}, m.deleteOldOne, m.deleteOldOne, func(*item) {})
}

// detachment is detach's merge of one property If-Match the copy read, as an action.
func detachment(c version) *codec.Entity {
	return &codec.Entity{PartitionKey: c.e.PartitionKey, RowKey: c.e.RowKey, ETag: c.etag,
		Properties: map[string]any{PropDetached: true}}
}
