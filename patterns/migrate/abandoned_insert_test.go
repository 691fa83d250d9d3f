package migrate

import (
	"context"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
)

// TestCleanUpEndsWhenAnAbandonedInsertLandsBehindADetachedCopy: an Upsert of a new entity
// made before clean-up (an insert in the old layout, the entity absent) is abandoned, its
// request held; the migration goes on to CleanUp, where the application writes the
// entity again (a copy that stands alone, detached); only then does the service apply the
// abandoned insert, an old entity older than the copy. The reader keeps the newer value,
// the application's writes of the entity go on succeeding, and clean-up (its chunks, or
// the write's own finish) ends with the old layout empty: a late insert neither steps
// the reader back nor wedges the migration.
func TestCleanUpEndsWhenAnAbandonedInsertLandsBehindADetachedCopy(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name        string
		same, write bool // same table; the application writes again before clean-up runs
	}{{"another table", false, true}, {"same table", true, true}, {"clean-up alone", false, false}} {
		same := c.same
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, same, true)
			f.planned(t, 6, 1)
			f.advanceTo(t, DualWrite)
			f.settled(t)
			ctx, pk, rk := f.b.Ctx, "dept00", "emp900001"
			v := func(seq int64) *Employee { return &Employee{Department: pk, EmployeeID: rk, Name: "n" + rk, Seq: seq} }
			l := holdFirst(t, f.b.Proxy(), faultproxy.All(faultproxy.IsInsertEntity, onTable(f.src.Name())))
			l.abandon(t, ctx, func(ctx context.Context) error { return f.m.Upsert(ctx, v(5)) })
			f.advanceTo(t, CleanUp)
			f.settled(t)
			if err := f.m.Upsert(ctx, v(6)); err != nil {
				t.Fatalf("write of Seq 6 at CleanUp: %v", err)
			}
			l.land(t, ctx)
			if got, err := f.m.Get(ctx, pk, rk); err != nil || got.Seq != 6 {
				t.Fatalf("Get once the abandoned insert landed = Seq %d, %v; want 6", got.Seq, err)
			}
			want := int64(6)
			if c.write {
				want = 7
				if err := f.m.Upsert(ctx, v(7)); err != nil {
					t.Fatalf("write of Seq 7 once the abandoned insert landed: %v", err)
				}
			}
			f.advanceTo(t, Done)
			if got, err := f.m.Get(ctx, pk, rk); err != nil || got.Seq != want {
				t.Errorf("Get at Done = Seq %d, %v; want %d", got.Seq, err, want)
			}
			if old, _ := f.rows(t, f.src.Name()); len(old) != 0 {
				t.Errorf("at Done the old layout holds %d entities, want none", len(old))
			}
		})
	}
}
