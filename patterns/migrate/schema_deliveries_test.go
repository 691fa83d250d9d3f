package migrate

import (
	"sync"
	"testing"
)

// TestTwoDeliveriesOfOneSchemaRewriteJobAtOnce runs the same rewrite job twice at once,
// page by page (pages of 50 rows), while a writer updates and deletes: each entity's
// upgrade is written once (the other delivery's replace fails If-Match and re-reads),
// and every live entity ends at the latest version with its latest value.
func TestTwoDeliveriesOfOneSchemaRewriteJobAtOnce(t *testing.T) {
	t.Parallel()
	f := setupStaged(t, false, 50)
	keys, md := f.planned(t, 150, 3)
	f.advanceTo(t, Backfill)
	if _, err := f.s.WaitSettled(f.b.Ctx); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	w := &stagedWriter{s: f.s, md: md, keys: keys, deletes: true}
	ww := w.run(f.b.Ctx, t, 2, stop)
	jobs, err := f.s.Jobs(KindSchemaRewrite)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var reps [2]SchemaReport
	for d := range 2 {
		wg.Go(func() {
			for job := &jobs[0]; job != nil; {
				next, rep, err := f.s.RunJob(f.b.Ctx, *job)
				if err != nil {
					t.Error(err)
					return
				}
				reps[d].add(rep)
				job = next
			}
		})
	}
	wg.Wait()
	close(stop)
	ww.Wait()
	f.mustHoldAt(t, md, 2)
	if got := reps[0].Rewritten + reps[1].Rewritten; got == 0 || got > len(keys) {
		t.Errorf("the deliveries rewrote %d + %d entities, want from 1 to %d", reps[0].Rewritten, reps[1].Rewritten, len(keys))
	}
	if reps[0].Scanned < 3 || reps[1].Scanned < 3 {
		t.Errorf("a delivery scanned nothing: %+v, %+v", reps[0], reps[1])
	}
}
