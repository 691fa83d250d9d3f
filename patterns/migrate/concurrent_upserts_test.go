package migrate

import (
	"fmt"
	"sync"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/repo"
)

// TestConcurrentUnconditionalUpsertsOfOneEntityAllApplyAndEnd: writers Upsert one
// entity at once through the migration, each a run of its own values. Every Upsert the
// application made unconditional is sent If-Match the row read, so writers meet each
// other's conditions: yet every call succeeds (never errs.ErrPreconditionFailed, never
// another writer winning every round), the entity ends at the last value of one of the
// writers, and the ETag each call returns is the stored one when no other write
// followed it (the last call's, checked against a plain read of the table), at a stage
// that writes the old layout and one that writes the copy alone.
func TestConcurrentUnconditionalUpsertsOfOneEntityAllApplyAndEnd(t *testing.T) {
	t.Parallel()
	for _, stage := range []Stage{DualWrite, CleanUp} {
		t.Run(string(stage), func(t *testing.T) {
			t.Parallel()
			f := setup(t, false, false)
			keys, _ := f.planned(t, 6, 1)
			f.advanceTo(t, stage)
			f.settled(t)
			ctx, k := f.b.Ctx, keys[1]
			const writers, each = 4, 12
			var wg sync.WaitGroup
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						v := &Employee{Department: k[0], EmployeeID: k[1], Name: fmt.Sprint(w), Seq: int64(w*1000 + i)}
						if err := f.m.Upsert(ctx, v); err != nil {
							t.Errorf("writer %d, Upsert %d: %v", w, i, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			got, err := f.m.Get(ctx, k[0], k[1])
			if err != nil {
				t.Fatal(err)
			}
			if got.Seq%1000 != each-1 {
				t.Errorf("the entity ends at Seq %d, not the last value of any writer", got.Seq)
			}
			last := &Employee{Department: k[0], EmployeeID: k[1], Name: "last", Seq: 99}
			if err := f.m.Upsert(ctx, last); err != nil {
				t.Fatal(err)
			}
			stored := f.storedETag(t, stage, k)
			if stored == "" || last.ETag != stored {
				t.Errorf("Upsert returned ETag %s, the stored one is %s", last.ETag, stored)
			}
			last.Seq = 100
			if err := f.m.Update(ctx, last); err != nil {
				t.Errorf("Update If-Match the ETag the Upsert returned: %v", err)
			}
		})
	}
}

// storedETag reads the ETag of k's row in the layout stage writes, without the migration.
func (f *fix) storedETag(t *testing.T, stage Stage, k [2]string) string {
	t.Helper()
	table, pk, rk := f.src.Name(), k[0], k[1]
	if stage == CleanUp || stage == Done {
		var err error
		if pk, rk, err = f.m.newKeys(k[0], k[1]); err != nil {
			t.Fatal(err)
		}
		table = f.tgt.Name()
	}
	raw, err := repo.New[codec.Entity](f.b.Direct.Tables, table, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := raw.Get(f.b.Ctx, pk, rk)
	if err != nil {
		t.Fatal(err)
	}
	return e.ETag
}

// TestConcurrentSchemaUpsertsOfOneEntityAllApplyAndEnd: the same through a Schema,
// whose Upsert is sent If-Match the row read as well.
func TestConcurrentSchemaUpsertsOfOneEntityAllApplyAndEnd(t *testing.T) {
	t.Parallel()
	f := setupStaged(t, false, 0)
	keys, _ := f.planned(t, 6, 1)
	f.s = f.newSchema(t, "", true, 0)
	ctx, k := f.b.Ctx, keys[1]
	const writers, each = 4, 12
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				v := &EmployeeSplit{Department: k[0], EmployeeID: k[1], FirstName: fmt.Sprint(w), LastName: "L", Seq: int64(w*1000 + i)}
				if err := f.s.Upsert(ctx, v); err != nil {
					t.Errorf("writer %d, Upsert %d: %v", w, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	got, err := f.s.Get(ctx, k[0], k[1])
	if err != nil {
		t.Fatal(err)
	}
	if got.Seq%1000 != each-1 {
		t.Errorf("the entity ends at Seq %d, not the last value of any writer", got.Seq)
	}
}
