package migrate

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
)

// BenchmarkDualWriteRequests counts the requests one application write costs through the
// migration at each stage's rules, on entities whose copies are current: an Upsert at
// DualWrite (a read of the old entity, the old write If-Match it, two reads, a copy
// write, the confirming read), and a Get at
// Verify (one read), CutOver (two) and Done (one). Reported: <what>-req/op.
//
//	go test -run '^$' -bench DualWriteRequests -benchtime=200x ./patterns/migrate/
func BenchmarkDualWriteRequests(b *testing.B) {
	f := setup(b, false, false)
	ctr := f.b.CountRequests()
	f.src = mustTable[Employee](b, f, f.src.Name())
	f.tgt = mustTable[EmployeeV2](b, f, f.tgt.Name())
	f.m = f.newMigration(b, "bench", f.m.control.Name())
	keys, _ := f.planned(b, 100, 10)
	f.advanceTo(b, DualWrite)
	f.settled(b)
	ctx := f.b.Ctx
	var views atomic.Int64 // the state record's reads (one per Refresh), not counted
	f.m.seams.stateRead = func() { views.Add(1) }
	measure := func(name string, op func(i int) error) {
		before, v0 := ctr.Count(), views.Load()
		for i := range b.N {
			if err := op(i); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(ctr.Count()-before-(views.Load()-v0))/float64(b.N), name+"-req/op")
	}
	b.ResetTimer()
	measure("upsert-dualwrite", func(i int) error {
		k := keys[i%len(keys)]
		return f.m.Upsert(ctx, &Employee{Department: k[0], EmployeeID: k[1], Seq: int64(i + 2)})
	})
	for _, stage := range []Stage{Verify, CutOver, Done} {
		b.StopTimer()
		f.advanceTo(b, stage)
		f.settled(b)
		b.StartTimer()
		measure("get-"+string(stage), func(i int) error {
			k := keys[i%len(keys)]
			_, err := f.m.Get(ctx, k[0], k[1])
			return err
		})
	}
}

// BenchmarkBackfillThrottled runs the backfill of 10,000 entities (10 partitions of 1,000)
// through the fault proxy's throughput model with the published targets scaled by 1/10
// (200 entities/s per partition, 2,000 per account; see BENCHMARKS.md, "Throttled bulk
// writes"). A chunk of 100 entities (one old partition here) costs four transactions of
// copy inserts (one per new partition; the model draws a token per entity of a
// transaction) and six queries (the copies of its four new partitions, its old entities,
// the confirming re-read; one token each), so an entity costs 1.06 entity operations in
// 0.1 requests, and the ceiling is min(2,000 / 1.06 on the account, 40 x 200 / 1.01 on
// the new partitions, 10 x 200 / 0.02 on the old) = 1,887 entities/s, 5.3 s (the
// model's buckets start full, one second of its rate: as in the other throttled
// benchmarks, a run can pass the ceiling by up to a fifth). Reported: entities/s and
// ratio-ceiling (time the model bounds it to over the time it took).
//
//	go test -run '^$' -bench BackfillThrottled -benchtime=1x ./patterns/migrate/
func BenchmarkBackfillThrottled(b *testing.B) {
	const parts, per, ceiling = 10, 1000, 2000 / 1.06
	var rate, ratio float64
	for range b.N {
		b.StopTimer()
		f := setup(b, false, true)
		f.m.opts.Concurrency = 32
		f.planned(b, parts*per, parts)
		f.advanceTo(b, Backfill)
		f.settled(b)
		model, err := f.b.Proxy().EmulateThrottling(&faultproxy.ThrottleOptions{PartitionRate: faultproxy.PartitionTarget / 10, AccountRate: faultproxy.AccountTarget / 10})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		rep, err := f.m.RunAll(f.b.Ctx, KindBackfill)
		took := time.Since(start)
		b.StopTimer()
		model.Stop()
		if err != nil || rep.Copied != parts*per {
			b.Fatalf("backfill: %+v, %v", rep, err)
		}
		rate += parts * per / took.Seconds()
		ratio += (parts * per / ceiling) / took.Seconds()
		st := model.Stats()
		b.Logf("%d entities in %v: %.0f/s, ratio %.2f; requests admitted %d, refused %d", parts*per, took.Round(time.Millisecond),
			parts*per/took.Seconds(), (parts*per/ceiling)/took.Seconds(), st.Total.AdmittedRequests, st.Total.RefusedRequests)
		b.StartTimer()
	}
	b.ReportMetric(rate/float64(b.N), "entities/s")
	b.ReportMetric(ratio/float64(b.N), "ratio-ceiling")
}

// BenchmarkRangeJobRequests counts the requests per entity of the backfill, verify and
// clean-up of 2,000 entities over 20 partitions whose copies are written once (nothing
// else writing; the state record's reads left out). Reported per entity, as
// <job>-req/op.
//
//	go test -run '^$' -bench RangeJobRequests -benchtime=1x ./patterns/migrate/
func BenchmarkRangeJobRequests(b *testing.B) {
	sum := map[string]float64{}
	for range b.N {
		for kind, v := range rangeJobCost(b, 2000, 20) {
			sum[kind] += v
		}
	}
	for _, kind := range []string{KindBackfill, KindVerify, KindCleanUp} {
		b.ReportMetric(sum[kind]/float64(b.N), strings.TrimPrefix(kind, "migrate-")+"-req/op")
	}
}
