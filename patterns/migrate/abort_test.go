package migrate

import (
	"testing"
)

// TestAbortAtEachStageLeavesTheOldLayoutCompleteAndCurrent aborts a migration at each
// stage before clean-up while a writer updates and deletes and a reader reads: the old
// layout ends with exactly the latest version of each live entity, no copy is left, and
// the reader saw no step back.
func TestAbortAtEachStageLeavesTheOldLayoutCompleteAndCurrent(t *testing.T) {
	t.Parallel()
	for _, stage := range []Stage{Planned, DualWrite, Backfill, Verify, CutOver} {
		t.Run(string(stage), func(t *testing.T) {
			t.Parallel()
			f := setup(t, stage == Verify, false)
			keys, md := f.planned(t, 40, 4)
			stop := make(chan struct{})
			w := &writer{f: f, md: md, keys: keys[10:], deletes: true}
			ww := w.run(f.b.Ctx, t, 2, stop)
			rd := &reader{f: f, keys: keys[:10]}
			rw := rd.run(f.b.Ctx, stop)
			f.advanceTo(t, stage)
			if stage != Planned {
				f.settled(t)
				if kind, ok := jobOf[stage]; ok {
					if _, err := f.m.RunAll(f.b.Ctx, kind); err != nil {
						t.Fatal(err)
					}
				}
			}
			if _, err := f.m.Abort(f.b.Ctx); err != nil {
				t.Fatal(err)
			}
			f.advanceTo(t, Aborted)
			close(stop)
			ww.Wait()
			rw.Wait()
			rd.check(t)
			f.mustHoldOldOnly(t, md)
		})
	}
}

// TestAbortRefusedOnceCleanUpBegan: the old layout is being removed at CleanUp, so an
// abort is refused (ErrInvalidInput) and the migration goes on.
func TestAbortRefusedOnceCleanUpBegan(t *testing.T) {
	t.Parallel()
	f := setup(t, false, false)
	f.planned(t, 10, 2)
	f.advanceTo(t, CleanUp)
	if _, err := f.m.Abort(f.b.Ctx); !isInvalid(err) {
		t.Fatalf("Abort at CleanUp = %v, want ErrInvalidInput", err)
	}
}
