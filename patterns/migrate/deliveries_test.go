package migrate

import (
	"sync"
	"testing"
)

// TestTwoDeliveriesOfOneBackfillJobAtOnce runs the same backfill job twice at once, page
// by page, while a writer updates and deletes: the two make each other's copy writes
// fail If-Match and re-read, and every copy ends current (or gone with its entity).
func TestTwoDeliveriesOfOneBackfillJobAtOnce(t *testing.T) {
	t.Parallel()
	f := setup(t, false, false)
	keys, md := f.planned(t, 150, 3)
	f.advanceTo(t, Backfill)
	f.settled(t)
	stop := make(chan struct{})
	w := &writer{f: f, md: md, keys: keys, deletes: true}
	ww := w.run(f.b.Ctx, t, 2, stop)
	jobs, err := f.m.Jobs(KindBackfill)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var copied [2]int
	for d := range 2 {
		wg.Go(func() {
			for job := &jobs[0]; job != nil; {
				next, rep, err := f.m.RunJob(f.b.Ctx, *job)
				if err != nil {
					t.Error(err)
					return
				}
				copied[d] += rep.Copied
				job = next
			}
		})
	}
	wg.Wait()
	close(stop)
	ww.Wait()
	for _, k := range keys {
		f.mustBeCurrent(t, k[0], k[1])
	}
	if copied[0]+copied[1] < len(keys)/2 {
		t.Errorf("the deliveries copied %v, fewer than the entities", copied)
	}
	f.advanceTo(t, Done)
	f.mustHoldExactly(t, md)
}
