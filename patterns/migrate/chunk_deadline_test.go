package migrate

import (
	"context"
	"sync/atomic"
	"testing"
)

// TestChunkPastItsDeadlineGoesThroughThePerEntityRule: a chunk whose shared steps
// outlast its deadline (WriteTimeout, here held in the window after the page scan until
// the deadline passed, as a loaded store would) does not fail its page: its entities go
// through the per-entity rule under deadlines of their own, each copy is written once,
// and every copy ends current. The page runs once (RunJob, not RunAll, which would run a
// failed page again and count only the copies of its last run), with a WriteTimeout a
// loaded machine meets for an entity's four requests.
func TestChunkPastItsDeadlineGoesThroughThePerEntityRule(t *testing.T) {
	t.Parallel()
	f := setup(t, false, false)
	keys, _ := f.planned(t, 20, 2)
	f.advanceTo(t, Backfill)
	f.patient(t) // the only process from here on: its stage settles by its own WriteTimeout
	f.settled(t)
	victim := keys[3]
	var held, late atomic.Int64
	f.m.seams.chunkLate = func() { late.Add(1) }
	f.m.seams.scanned = func(ctx context.Context, pk, rk string) {
		if pk == victim[0] && rk == victim[1] {
			held.Add(1)
			<-ctx.Done()
		}
	}
	next, rep, err := f.m.RunJob(f.b.Ctx, Job{Migration: f.m.spec.Name, Kind: KindBackfill, Phase: phaseSource})
	if err != nil || next != nil {
		t.Fatalf("the backfill's page with a chunk past its deadline: next %v, %v; want it done", next, err)
	}
	if held.Load() == 0 {
		t.Fatal("the backfill never reached the window")
	}
	if late.Load() == 0 {
		t.Error("no chunk was reported past its deadline (the seam tests rely on to see one)")
	}
	if rep.Copied != len(keys) {
		t.Errorf("copied %d, want %d", rep.Copied, len(keys))
	}
	for _, k := range keys {
		f.mustBeCurrent(t, k[0], k[1])
	}
}
