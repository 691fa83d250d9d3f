package migrate

import (
	"sync"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
)

// abortScale returns the entities of each abort under load and the range
// jobs' page size: 96 entities in pages of 16 (1,200 in pages of 250 in make soak), so
// that every job, the abort's among them, runs over several pages, checkpointing and
// continuing while its worker processes die.
func abortScale(testing.TB) (n, page int) { return testenv.Scale(96, 1200), testenv.Scale(16, 250) }

// abortSourceBound and abortCopyBound cut the old layout's partitions and the copies'
// (hash prefix "00".."03") in two: two jobs of each kind.
const (
	abortSourceBound = "dept02"
	abortCopyBound   = "02"
)

// TestAbortAtEachStageUnderLoadWithKilledWorkersLeavesTheOldLayout aborts a migration
// from each stage that has something to undo (DualWrite, Backfill, Verify, CutOver; a
// Planned one has written no copy) while a writer updates, inserts and deletes, a reader
// reads, and worker processes, each killed with SIGKILL at a random point, run the
// stage's range jobs and then the abort's, every job over several pages. At the end the
// old layout holds exactly the latest version of every live entity, no copy is left, and
// the reader saw no gap and no step back.
func TestAbortAtEachStageUnderLoadWithKilledWorkersLeavesTheOldLayout(t *testing.T) {
	t.Parallel()
	bin := buildWorker(t)
	for _, stage := range []Stage{DualWrite, Backfill, Verify, CutOver} {
		t.Run(string(stage), func(t *testing.T) {
			t.Parallel()
			n, abortPage := abortScale(t)
			parts := 4
			f := setup(t, false, false)
			f.m.opts.PageSize = abortPage
			keys, md := f.planned(t, n, parts)
			more := keys[10:]
			for i := n; i < n+n/4; i++ { // keys the writer inserts
				pk, rk := key(i%parts, i)
				more = append(more, [2]string{pk, rk})
			}
			q, queue := f.b.Queue()
			f.m.opts.Queue = q
			stop := make(chan struct{})
			w1 := &writer{f: f, md: md, keys: keys[:10]}
			w2 := &writer{f: f, md: md, keys: more, deletes: true}
			rd := &reader{f: f, keys: keys[:10]}
			running := []*sync.WaitGroup{w1.run(f.b.Ctx, t, 1, stop), w2.run(f.b.Ctx, t, 2, stop), rd.run(f.b.Ctx, stop)}
			kl, kills := f.killLoop(t, bin, queue, stop)
			enqueue := func(kind string) {
				bound := abortSourceBound
				if kind == KindAbort {
					bound = abortCopyBound
				}
				jobs, err := f.m.Jobs(kind, bound)
				if err != nil {
					t.Fatal(err)
				}
				for _, j := range jobs {
					if err := f.m.EnqueueJob(f.b.Ctx, q, j); err != nil {
						t.Fatal(err)
					}
				}
			}
			f.advanceTo(t, stage)
			if kind, ok := jobOf[stage]; ok {
				enqueue(kind)
			}
			// Abort once each abort job has more than a page of copies to remove: at
			// DualWrite the writer's, at Backfill the workers' (waiting on their
			// progress), later every entity's.
			testbed.WaitFor(t, "more than a page of copies on each side of the bound", func() bool {
				lo, hi := f.copiesAround(t, abortCopyBound)
				return lo > abortPage && hi > abortPage
			})
			if _, err := f.m.Abort(f.b.Ctx); err != nil {
				t.Fatal(err)
			}
			enqueue(KindAbort)
			// The killed workers run the abort's jobs: wait until they removed copies
			// on both sides, then let Advance's own pass finish what is left.
			f.settled(t)
			testbed.WaitFor(t, "the workers to remove copies on both sides of the bound", func() bool {
				lo, hi := f.copiesAround(t, abortCopyBound)
				return lo <= abortPage && hi <= abortPage
			})
			f.advanceTo(t, Aborted)
			close(stop)
			for _, wg := range append(running, kl) {
				wg.Wait()
			}
			rd.check(t)
			f.mustHoldOldOnly(t, md)
			t.Logf("abort from %s, %d entities: writes %d (+%d), reads %d, worker processes killed by stage %v", stage, n, w1.writes.Load(), w2.writes.Load(), rd.reads.Load(), kills)
		})
	}
}

// copiesAround counts the copies whose PartitionKey orders before bound and from it on.
func (f *fix) copiesAround(t testing.TB, bound string) (lo, hi int) {
	t.Helper()
	_, copies := f.rows(t, f.tgt.Name())
	for _, c := range copies {
		if keys.Compare(c.PartitionKey, bound) < 0 {
			lo++
		} else {
			hi++
		}
	}
	return lo, hi
}
