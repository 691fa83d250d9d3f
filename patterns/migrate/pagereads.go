package migrate

import (
	"context"
	"errors"
	"slices"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"github.com/tablepatterns/tablepatterns/retry"
)

// The reads and deletes of a chunk (page.go), grouped by partition: the rows of one
// partition that a chunk reads are read with one range query (PartitionKey eq, RowKey
// from the smallest to the largest wanted), a lone row with a point read. A row a range
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

// deleteOlds deletes the old entities of items If-Match the version each one's detached
// copy records: those of one partition in entity group transactions (all or nothing); a
// transaction refused (one entity gone or changed since) deletes its entities one by one.
func (m *Migration[O, N]) deleteOlds(ctx context.Context, items []*item) error {
	byPK := map[string][]*item{}
	var pks []string
	for _, it := range items {
		if byPK[it.pk] == nil {
			pks = append(pks, it.pk)
		}
		byPK[it.pk] = append(byPK[it.pk], it)
	}
	var batches [][]*item
	for _, pk := range pks {
		for g := range slices.Chunk(byPK[pk], repo.MaxTransactionActions) {
			batches = append(batches, g)
		}
	}
	parts := make([]string, len(batches))
	for i, b := range batches {
		parts[i] = b[0].pk
	}
	return retry.Schedule(ctx, parts, &retry.ScheduleOptions{Concurrency: m.opts.Concurrency, PartitionConcurrency: 1}, func(ctx context.Context, i int) error {
		b := batches[i]
		if len(b) > 1 {
			actions := make([]repo.Action, len(b))
			for j, it := range b {
				actions[j] = m.src.DeleteAction(it.pk, it.rk, &repo.DeleteOptions{ETag: it.c.srcETag})
			}
			_, err := repo.Submit(ctx, actions...)
			if err == nil {
				return nil
			}
			if !conflict(err) && !errors.Is(err, errs.ErrDeleteMisaddressed) {
				return err
			}
		}
		for _, it := range b {
			if err := m.deleteOldOne(ctx, it); err != nil {
				return err
			}
		}
		return nil
	})
}
