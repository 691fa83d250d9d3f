package heterogeneous_test

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/heterogeneous"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Attacks OneToMany.Delete's "With opts.ETag set the delete is also conditional on the
// child's ETag: errs.ErrPreconditionFailed once the child changed since it was read" at
// the window after its own read: the child and the parent were read at the ETag given and
// the transaction is held while another writer updates the child. Released, the
// transaction fails; the retry must not delete the newer child (its own re-read sees an
// ETag that is no longer the caller's), and the count is unchanged.
func TestOneToManyConditionalDeleteKeepsAChildChangedAfterItsRead(t *testing.T) {
	t.Parallel()
	b := setup(t, layouts[0])
	b.dept(t, "Sales")
	for i := 1; i <= 2; i++ {
		if err := b.depts.Add(b.ctx, b.emp("Sales", i)); err != nil {
			t.Fatal(err)
		}
	}
	direct, err := repo.New[codec.Entity](b.Direct.Tables, b.Table, b.RepoOptions())
	if err != nil {
		t.Fatal(err)
	}
	otherTable, _ := departments(t, direct, b.l)
	read, err := heterogeneous.Get[Employee](b.ctx, b.t, "Sales", b.emp("Sales", 1).RowKey)
	if err != nil {
		t.Fatal(err)
	}
	ps := b.Proxy().PauseAt("held delete", faultproxy.IsBatch, 1)
	t.Cleanup(ps.Release)
	done := make(chan error, 1)
	go func() { done <- b.depts.Delete(b.ctx, "Sales", read.RowKey, &repo.DeleteOptions{ETag: read.ETag}) }()
	if err := ps.Wait(b.ctx); err != nil {
		t.Fatal(err)
	}
	changed := read
	changed.Age++
	if err := heterogeneous.Update(b.ctx, otherTable, &changed, nil); err != nil {
		t.Fatal(err)
	}
	ps.Release()
	if err := <-done; !errors.Is(err, repo.ErrPreconditionFailed) {
		t.Fatalf("delete of a child changed after its read: %v, want ErrPreconditionFailed", err)
	}
	got, err := heterogeneous.Get[Employee](b.ctx, b.t, "Sales", read.RowKey)
	if err != nil || got.Age != changed.Age {
		t.Fatalf("the newer child after the refused delete: %+v %v", got, err)
	}
	b.checkCount(t, "Sales", 2)
}
