package migrate

import (
	"testing"
)

// TestSchemaAbortAtEachStageLeavesEveryEntityAtTheFromVersion aborts a schema
// migration at each stage before CleanUp while a writer updates, inserts and deletes:
// at the end every live entity is stored at the version the migration started from,
// in its shape, with exactly its latest value, and none that was deleted is back. At
// Backfill the abort lands after one page of the rewrite (a table of both versions).
// Once CleanUp began, Abort is refused.
func TestSchemaAbortAtEachStageLeavesEveryEntityAtTheFromVersion(t *testing.T) {
	t.Parallel()
	for _, stage := range []Stage{Planned, DualWrite, Backfill, Verify, CutOver, CleanUp} {
		t.Run(string(stage), func(t *testing.T) {
			t.Parallel()
			f := setupStaged(t, false, 20)
			keys, md := f.planned(t, 60, 3)
			for i := 60; i < 70; i++ { // keys the writer inserts
				pk, rk := key(i%3, i)
				keys = append(keys, [2]string{pk, rk})
			}
			stop := make(chan struct{})
			w := &stagedWriter{s: f.s, md: md, keys: keys, deletes: true}
			ww := w.run(f.b.Ctx, t, 2, stop)
			f.advanceTo(t, stage)
			if stage == Backfill {
				if _, err := f.s.WaitSettled(f.b.Ctx); err != nil {
					t.Fatal(err)
				}
				jobs, err := f.s.Jobs(KindSchemaRewrite)
				if err != nil {
					t.Fatal(err)
				}
				if _, _, err := f.s.RunJob(f.b.Ctx, jobs[0]); err != nil {
					t.Fatalf("one page of the rewrite: %v", err)
				}
			}
			_, err := f.s.Abort(f.b.Ctx)
			if stage == CleanUp {
				close(stop)
				ww.Wait()
				if !isInvalid(err) {
					t.Fatalf("Abort at CleanUp = %v, want ErrInvalidInput", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			f.advanceTo(t, Aborted)
			close(stop)
			ww.Wait()
			f.mustHoldAt(t, md, 1)
			if w.writes.Load() == 0 {
				t.Error("the writer wrote nothing")
			}
		})
	}
}

// TestSchemaAbortWithoutDowngradesRefusedBeforeAnyRequest: a migration declared
// without Downgrades cannot return to the old shape; its Abort is refused before any
// request, and it writes the latest version from the start.
func TestSchemaAbortWithoutDowngradesRefusedBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	f := setupStaged(t, true, 0)
	s := f.newSchema(t, "no-way-back", false, 0)
	if err := s.Plan(f.b.Ctx); err != nil {
		t.Fatal(err)
	}
	before := f.b.Proxy().Count()
	if _, err := s.Abort(f.b.Ctx); !isInvalid(err) {
		t.Fatalf("Abort = %v, want ErrInvalidInput", err)
	}
	if n := f.b.Proxy().Count() - before; n != 0 {
		t.Errorf("%d requests sent for a refused abort", n)
	}
	if err := s.Upsert(f.b.Ctx, &EmployeeSplit{Department: "dept00", EmployeeID: "e1", FirstName: "F", LastName: "L"}); err != nil {
		t.Fatal(err)
	}
	e, err := f.b.Raw.Get(f.b.Ctx, "dept00", "e1")
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := s.version(&e); v != 2 {
		t.Errorf("written at version %d in Planned without Downgrades, want 2", v)
	}
}
