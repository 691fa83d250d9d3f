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

// TestRangeJobsSendUnderAFifthOfARequestPerEntity: the backfill, verify and clean-up
// of entities whose copies are written once read a chunk's copies and old entities with
// range queries (one per partition) and write a new partition's copies (inserts,
// detaches) and delete an old partition's entities in entity group transactions, so
// that an entity costs a fraction of a request.
func TestRangeJobsSendUnderAFifthOfARequestPerEntity(t *testing.T) {
	t.Parallel()
	cost := rangeJobCost(t, 200, 2)
	for _, kind := range []string{KindBackfill, KindVerify, KindCleanUp} {
		if cost[kind] > 0.2 {
			t.Errorf("%s: %.2f requests per entity, want at most 0.2", kind, cost[kind])
		}
	}
	t.Logf("requests per entity: %v", cost)
}
