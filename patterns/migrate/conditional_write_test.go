package migrate

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/errs"
	"github.com/tablepatterns/tablepatterns/repo"
)

// TestETagReadBeforeCleanUpRefusedOnceTheEntityChanged: a Get at CutOver returns the old
// entity's ETag; once CleanUp began, the first Update If-Match that ETag succeeds (the
// copy records it as its source version), and every later conditional write holding the
// same ETag (an Update or a Delete, at CleanUp or at Done) is refused: the entity changed
// since that ETag was read, so the write would overwrite an acknowledged one.
func TestETagReadBeforeCleanUpRefusedOnceTheEntityChanged(t *testing.T) {
	t.Parallel()
	f := setup(t, false, false)
	keys, _ := f.planned(t, 6, 2)
	f.advanceTo(t, CutOver)
	f.settled(t)
	k := keys[2]
	v, err := f.m.Get(f.b.Ctx, k[0], k[1])
	if err != nil {
		t.Fatal(err)
	}
	stale := v.ETag
	f.advanceTo(t, CleanUp)
	f.settled(t)
	first := &Employee{Department: k[0], EmployeeID: k[1], Seq: 20, ETag: stale}
	if err := f.m.Update(f.b.Ctx, first); err != nil {
		t.Fatalf("first Update If-Match the ETag Get returned: %v", err)
	}
	again := &Employee{Department: k[0], EmployeeID: k[1], Seq: 30, ETag: stale}
	if err := f.m.Update(f.b.Ctx, again); !errors.Is(err, errs.ErrPreconditionFailed) {
		t.Errorf("second Update with the stale ETag at CleanUp = %v; want ErrPreconditionFailed", err)
	}
	if err := f.m.Delete(f.b.Ctx, k[0], k[1], &repo.DeleteOptions{ETag: stale}); !errors.Is(err, errs.ErrPreconditionFailed) {
		t.Errorf("Delete with the stale ETag at CleanUp = %v; want ErrPreconditionFailed", err)
	}
	f.advanceTo(t, Done)
	f.settled(t)
	if err := f.m.Update(f.b.Ctx, &Employee{Department: k[0], EmployeeID: k[1], Seq: 40, ETag: stale}); !errors.Is(err, errs.ErrPreconditionFailed) {
		t.Errorf("Update with the stale ETag at Done = %v; want ErrPreconditionFailed", err)
	}
	if got, err := f.m.Get(f.b.Ctx, k[0], k[1]); err != nil || got.Seq != 20 {
		t.Fatalf("Get at Done = Seq %d, %v; want 20, the only write made If-Match a current ETag", got.Seq, err)
	}
	// The ETag a write returns still works.
	if err := f.m.Update(f.b.Ctx, &Employee{Department: k[0], EmployeeID: k[1], Seq: 50, ETag: first.ETag}); err != nil {
		t.Errorf("Update If-Match the ETag the first write returned: %v", err)
	}
}
