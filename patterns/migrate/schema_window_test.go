package migrate

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/tablepatterns/tablepatterns/repo"
)

// inWindow makes the writer act once per key in the window between a rewrite's (or
// downgrade's) read of the entity and its write: act(pk, rk) runs for every key it
// returns true for, the first time only.
func (f *stagedFix) inWindow(act func(ctx context.Context, pk, rk string) bool) {
	var mu sync.Mutex
	done := map[[2]string]bool{}
	f.s.m.seams.copyWrite = func(ctx context.Context, pk, rk string) {
		mu.Lock()
		first := !done[[2]string{pk, rk}]
		done[[2]string{pk, rk}] = true
		mu.Unlock()
		if first {
			act(ctx, pk, rk)
		}
	}
}

// windowWrites makes the writer update dept00's emp000000 (Seq 9) and delete its
// emp000003 in the window, and records them in the model.
func (f *stagedFix) windowWrites(t *testing.T, md *model) {
	f.inWindow(func(ctx context.Context, pk, rk string) bool {
		switch rk {
		case "emp000000":
			if err := f.s.Upsert(ctx, &EmployeeSplit{Department: pk, EmployeeID: rk, FirstName: "F" + rk, LastName: "L", Seq: 9}); err != nil {
				t.Error(err)
			}
			md.set(pk, rk, 9)
		case "emp000003":
			if err := f.s.Delete(ctx, pk, rk, nil); err != nil && !errors.Is(err, repo.ErrNotFound) {
				t.Error(err)
			}
			md.del(pk, rk)
		}
		return true
	})
}

// TestWriterBetweenSchemaRewriteReadAndWriteIsNeverReplacedByAnOlderUpgrade: a writer
// updates one entity and deletes another after the rewrite read them and before it
// writes their upgrades: the update stays (the upgrade of the older version is refused
// If-Match and re-read), the deleted entity never comes back.
func TestWriterBetweenSchemaRewriteReadAndWriteIsNeverReplacedByAnOlderUpgrade(t *testing.T) {
	t.Parallel()
	f := setupStaged(t, false, 0)
	_, md := f.planned(t, 6, 3)
	f.advanceTo(t, Backfill)
	if _, err := f.s.WaitSettled(f.b.Ctx); err != nil {
		t.Fatal(err)
	}
	f.windowWrites(t, md)
	if _, err := f.s.RunAll(f.b.Ctx, KindSchemaRewrite); err != nil {
		t.Fatal(err)
	}
	f.mustHoldAt(t, md, 2)
}

// TestWriterBetweenSchemaDowngradeReadAndWriteIsNeverReplacedByAnOlderDowngrade: the
// same window in an abort's downgrade: the writer's update (at the version the abort
// returns to) stays and its delete holds.
func TestWriterBetweenSchemaDowngradeReadAndWriteIsNeverReplacedByAnOlderDowngrade(t *testing.T) {
	t.Parallel()
	f := setupStaged(t, false, 0)
	_, md := f.planned(t, 6, 3)
	f.advanceTo(t, Verify)
	if _, err := f.s.Abort(f.b.Ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.WaitSettled(f.b.Ctx); err != nil {
		t.Fatal(err)
	}
	f.windowWrites(t, md)
	if _, err := f.s.RunAll(f.b.Ctx, KindSchemaDowngrade); err != nil {
		t.Fatal(err)
	}
	f.mustHoldAt(t, md, 1)
}
