package migrate

import (
	"sync"
	"testing"
)

// TestTwoDeliveriesOfOneCleanUpJobAtOnce runs the same clean-up job twice at once, page by
// page, while a writer updates and deletes some entities: the two detach the same copies
// and delete the same old entities in transactions, each failing where the other moved
// first; the end is exactly the latest version of each live entity in the new layout and
// an empty old layout.
func TestTwoDeliveriesOfOneCleanUpJobAtOnce(t *testing.T) {
	t.Parallel()
	f := setup(t, false, false)
	f.patient(t) // both deliveries' chunks and the writer's clean-up writes meet their deadline on a loaded machine
	chunksStayChunks(t, f.m)
	keys, md := f.planned(t, 150, 3)
	f.advanceTo(t, CleanUp)
	f.settled(t)
	stop := make(chan struct{})
	w := &writer{f: f, md: md, keys: keys[:30], deletes: true}
	ww := w.run(f.b.Ctx, t, 2, stop)
	jobs, err := f.m.Jobs(KindCleanUp)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for job := &jobs[0]; job != nil; {
				next, _, err := f.m.RunJob(f.b.Ctx, *job)
				if err != nil {
					t.Error(err)
					return
				}
				job = next
			}
		})
	}
	wg.Wait()
	close(stop)
	ww.Wait()
	if old, _ := f.rows(t, f.src.Name()); len(old) != 0 {
		t.Errorf("%d old entities left after both deliveries", len(old))
	}
	f.advanceTo(t, Done)
	f.mustHoldExactly(t, md)
}
