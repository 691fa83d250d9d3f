package migrate

import (
	"testing"
)

// TestReaderThroughEveryTransitionSeesNoGapAndNoStepBack takes a migration through every
// stage while a writer updates every entity and a reader reads them through the
// migration: the reader never gets "not found" and never a lower Seq after a higher one,
// and the migration ends with exactly the latest version of each entity in the new
// layout and the old layout empty.
func TestReaderThroughEveryTransitionSeesNoGapAndNoStepBack(t *testing.T) {
	t.Parallel()
	for _, same := range []bool{false, true} {
		t.Run(map[bool]string{false: "another table", true: "same table"}[same], func(t *testing.T) {
			t.Parallel()
			f := setup(t, same, false)
			const n, parts = 100, 5
			f.seed(t, n, parts)
			md := newModel()
			var keys [][2]string
			for i := range n {
				pk, rk := key(i%parts, i)
				keys = append(keys, [2]string{pk, rk})
				md.set(pk, rk, 1)
			}
			if err := f.m.Plan(f.b.Ctx); err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			w := &writer{f: f, md: md, keys: keys}
			rd := &reader{f: f, keys: keys[:40], stages: map[Stage]bool{}}
			ww := w.run(f.b.Ctx, t, 4, stop)
			rw := rd.run(f.b.Ctx, stop)
			f.advanceTo(t, Done)
			close(stop)
			ww.Wait()
			rw.Wait()
			rd.check(t)
			f.mustHoldExactly(t, md)
			t.Logf("writes %d (failed attempts %d), reads %d, stages read in %v", w.writes.Load(), w.failures.Load(), rd.reads.Load(), rd.stages)
		})
	}
}
