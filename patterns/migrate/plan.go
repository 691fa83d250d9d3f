package migrate

import (
	"context"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
)

// checkKeys is planning's check: one scan of the old layout's keys, computing each new
// key; two old keys with one new key, or (in one table) a new key that is an old key,
// are refused.
func (m *Migration[O, N]) checkKeys(ctx context.Context) error {
	olds := map[[2]string]bool{}
	news := map[[2]string][2]string{}
	for e, err := range m.src.Query(ctx, repo.Query{Select: []string{"PartitionKey", "RowKey", PropMigration}}) {
		if err != nil {
			return tableGone(err)
		}
		if m.sameTable && e.Properties[PropMigration] != nil {
			continue
		}
		npk, nrk, err := m.newKeys(e.PartitionKey, e.RowKey)
		if err != nil {
			return err
		}
		old, nk := [2]string{e.PartitionKey, e.RowKey}, [2]string{npk, nrk}
		if first, dup := news[nk]; dup {
			return errs.Invalid("Spec.Keys", "(%s, %s) and (%s, %s) map to one new key", first[0], first[1], old[0], old[1])
		}
		news[nk], olds[old] = old, true
	}
	for nk, old := range news {
		if m.sameTable && olds[nk] {
			return errs.Invalid("Spec.Keys", "the new key of (%s, %s) is the key of an old entity", old[0], old[1])
		}
	}
	return nil
}

// forgedDetached is the refusal of a detached copy before clean-up began.
func forgedDetached(pk, rk string) error {
	return errs.Invalid("copy", "the row at the new keys of (%s, %s) claims to be detached before clean-up began", pk, rk)
}
