package migrate

import (
	"sync/atomic"
	"testing"
)

// rangeJobCostWith is rangeJobCost for a migration whose Keys is keys.
func rangeJobCostWith(t testing.TB, n, parts int, keys func(pk, rk string) (string, string, error)) map[string]float64 {
	t.Helper()
	f := setup(t, false, false)
	ctr := f.b.CountRequests()
	f.src = mustTable[Employee](t, f, f.src.Name())
	f.tgt = mustTable[EmployeeV2](t, f, f.tgt.Name())
	m, err := New(Spec[Employee, EmployeeV2]{Name: "cost", Service: f.b.Clients.Tables, Source: f.src, Target: f.tgt,
		Keys: keys, Transform: upgrade, Control: f.m.control.Name()}, patientOptions())
	if err != nil {
		t.Fatal(err)
	}
	f.m = m
	chunksStayChunks(t, m)
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

// TestRangeJobsSendAboutTwoRequestsPerEntityWhenEachCopyHasItsOwnPartition: the cost the
// package documents for copies spread one per partition (doc.go, Cost: backfill about 2
// requests per entity, 2.2 at most, verify about 1, 1.1 at most, clean-up about 3, 3.3
// at most) for a
// re-keying that turns each old entity's RowKey into its own PartitionKey (one old
// partition spread over as many new ones as it has entities: the cure of a hot
// partition taken to its end). Each copy is read with a point read and written
// (inserted, detached) alone, and clean-up reads each copy once more before it deletes;
// the old entities are still read and deleted by partition.
func TestRangeJobsSendAboutTwoRequestsPerEntityWhenEachCopyHasItsOwnPartition(t *testing.T) {
	t.Parallel()
	cost := rangeJobCostWith(t, 200, 2, func(pk, rk string) (string, string, error) { return "e" + rk, pk, nil })
	for kind, most := range map[string]float64{KindBackfill: 2.2, KindVerify: 1.1, KindCleanUp: 3.3} {
		if cost[kind] > most {
			t.Errorf("%s: %.2f requests per entity, want at most %.1f", kind, cost[kind], most)
		}
	}
	t.Logf("requests per entity: %v", cost)
}
