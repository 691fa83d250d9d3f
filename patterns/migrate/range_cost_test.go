package migrate

import (
	"sync/atomic"
	"testing"
)

// rangeJobCost runs the range jobs of a migration of n entities over parts partitions and
// returns the requests each job sent per entity (the state record's own reads left out).
func rangeJobCost(t testing.TB, n, parts int) map[string]float64 {
	f := setup(t, false, false)
	ctr := f.b.CountRequests()
	f.src = mustTable[Employee](t, f, f.src.Name())
	f.tgt = mustTable[EmployeeV2](t, f, f.tgt.Name())
	f.m = f.newMigration(t, "cost", f.m.control.Name())
	f.planned(t, n, parts)
	var views atomic.Int64
	f.m.seams.stateRead = func() { views.Add(1) }
	out := map[string]float64{}
	for _, stage := range []Stage{Backfill, Verify, CleanUp} {
		f.advanceTo(t, stage)
		f.settled(t)
		kind := jobOf[stage]
		before, v0 := ctr.Count(), views.Load()
		rep, err := f.m.RunAll(f.b.Ctx, kind)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if rep.Problems() != 0 {
			t.Errorf("%s: %+v", kind, rep)
		}
		out[kind] = float64(ctr.Count()-before-(views.Load()-v0)) / float64(n)
	}
	f.advanceTo(t, Done)
	return out
}

// TestRangeJobsSendAboutOneRequestPerEntity: the backfill, verify and clean-up of
// entities whose copies are written once read a chunk's copies and old entities with
// range queries (one per partition), so that what is left per entity is its one write:
// the copy insert (backfill), nothing (verify), the copy's detach (clean-up; the old
// entities deleted in transactions of up to 100).
func TestRangeJobsSendAboutOneRequestPerEntity(t *testing.T) {
	t.Parallel()
	cost := rangeJobCost(t, 200, 2)
	for kind, most := range map[string]float64{KindBackfill: 1.3, KindVerify: 0.3, KindCleanUp: 1.3} {
		if cost[kind] > most {
			t.Errorf("%s: %.2f requests per entity, want at most %.1f", kind, cost[kind], most)
		}
	}
	t.Logf("requests per entity: %v", cost)
}
