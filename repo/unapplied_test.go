package repo_test

import (
	"testing"

	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// Unapplied proves "not applied" only by an entity still at the ETag an action was
// conditional on; an applied, deleted or inserted entity proves nothing.
func TestUnappliedProvesOnlyAnUnchangedVersion(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	tbl := table[Counter](t, b, nil)
	c := mustInsertCounter(t, tbl, 5)
	read := *c
	upd := read
	upd.N = 6
	pending := tbl.UpdateAction(&upd, nil) // never submitted: the entity stays at read's ETag
	if ev, err := repo.Unapplied(b.ctx, tbl.InsertAction(&Counter{PK: "c", RK: "2"}), pending); err != nil || ev != retry.NotApplied {
		t.Fatalf("unchanged entity: %v, %v; want not applied", ev, err)
	}
	other := read
	other.N = 7
	if err := tbl.Update(b.ctx, &other, nil); err != nil {
		t.Fatal(err)
	}
	if ev, err := repo.Unapplied(b.ctx, pending); err != nil || ev != retry.Unproven {
		t.Fatalf("changed entity: %v, %v; want unproven", ev, err)
	}
	if err := tbl.Delete(b.ctx, "c", "1", nil); err != nil {
		t.Fatal(err)
	}
	if ev, err := repo.Unapplied(b.ctx, pending, tbl.DeleteAction("c", "1", &repo.DeleteOptions{ETag: read.ETag})); err != nil || ev != retry.Unproven {
		t.Fatalf("deleted entity: %v, %v; want unproven", ev, err)
	}
	if ev, err := repo.Unapplied(b.ctx, tbl.InsertAction(&Counter{PK: "c", RK: "1"}), tbl.DeleteAction("c", "1", nil)); err != nil || ev != retry.Unproven {
		t.Fatalf("an insert and an unconditional delete: %v, %v; want unproven", ev, err)
	}
}
