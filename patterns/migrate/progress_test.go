package migrate

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// atBackfill seeds n entities over parts partitions and takes the migration to a
// settled Backfill, reading pageSize rows a page.
func (f *fix) atBackfill(t *testing.T, n, parts, pageSize int) {
	t.Helper()
	f.planned(t, n, parts)
	f.advanceTo(t, Backfill)
	f.settled(t)
	f.m.opts.PageSize = pageSize
}

// kindProgress reads the migration's progress and returns kind's.
func kindProgress(t *testing.T, ctx context.Context, read func(context.Context) (Progress, error), kind string) KindProgress {
	t.Helper()
	p, err := read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.Skipped != 0 {
		t.Errorf("%d progress rows skipped", p.Skipped)
	}
	for _, k := range p.Kinds {
		if k.Kind == kind {
			return k
		}
	}
	t.Fatalf("no progress of %s in %+v", kind, p)
	return KindProgress{}
}

func deliver(ctx context.Context, m *Migration[Employee, EmployeeV2], job Job) error {
	return m.handle(ctx, &queueworker.Message[Job]{Kind: job.Kind, Payload: job})
}

// TestProgressCountsAPageOnceUnderTwoDeliveriesAtOnce delivers each range job twice at
// once, both deliveries held at the progress write of their first page until both
// reach it: one write inserts the row, the other meets it, reads again and finds the
// checkpoint reached, so every row is scanned once in the sums.
func TestProgressCountsAPageOnceUnderTwoDeliveriesAtOnce(t *testing.T) {
	t.Parallel()
	f := setup(t, false, false)
	const n = 60
	f.atBackfill(t, n, 3, 10)
	jobs, err := f.m.Jobs(KindBackfill, "dept01")
	if err != nil {
		t.Fatal(err)
	}
	var arrived sync.WaitGroup
	arrived.Add(2 * len(jobs))
	f.m.seams.progress = func(_ context.Context, job Job) {
		if job.After == nil && job.Phase == phaseSource {
			arrived.Done()
			arrived.Wait()
		}
	}
	var wg sync.WaitGroup
	for _, job := range jobs {
		for range 2 {
			wg.Go(func() {
				if err := deliver(f.b.Ctx, f.m, job); err != nil {
					t.Error(err)
				}
			})
		}
	}
	wg.Wait()
	k := kindProgress(t, f.b.Ctx, f.m.Progress, KindBackfill)
	if k.Counts["scanned"] != n || k.Started != 2 || k.Done != 2 || k.Total != 2 {
		t.Errorf("progress %+v: want %d scanned over 2 of 2 ranges, all done", k, n)
	}
	if k.Counts["copied"] > n {
		t.Errorf("progress counts %d copied of %d entities", k.Counts["copied"], n)
	}
}

// TestProgressCountsAPageOnceWhenItsWriteLosesItsResponse loses the response of
// progress writes the service applied: the write's retry, or the read after it, finds
// the checkpoint reached and adds nothing, so the sums are the run's.
func TestProgressCountsAPageOnceWhenItsWriteLosesItsResponse(t *testing.T) {
	t.Parallel()
	f := setup(t, false, true)
	const n = 50
	f.atBackfill(t, n, 2, 10)
	p := f.b.Proxy()
	p.AddRule(faultproxy.Rule{Name: "progress", Match: faultproxy.All(faultproxy.IsEntityWrite, onTable(f.m.control.Name())), Times: 4, Action: faultproxy.DropAfterForward()})
	rep, err := f.m.RunAll(f.b.Ctx, KindBackfill)
	if err != nil {
		t.Fatal(err)
	}
	if p.Fired("progress") == 0 {
		t.Fatal("no progress write lost its response: the attack did not happen")
	}
	k := kindProgress(t, f.b.Ctx, f.m.Progress, KindBackfill)
	if k.Counts["scanned"] != n || int(k.Counts["scanned"]) != rep.Scanned || int(k.Counts["copied"]) != rep.Copied || k.Done != 1 || k.Total != 1 {
		t.Errorf("progress %+v after %d lost responses; the run reported %d scanned, %d copied", k, p.Fired("progress"), rep.Scanned, rep.Copied)
	}
}

// TestProgressOfAPageWhoseWorkerWasKilledIsCountedOnceByTheRedelivery kills a worker
// after its second page did its work and before that page's progress write: the
// redelivery runs the first page again (already counted: adds nothing) and the second
// (counted now), so every row is scanned once in the sums.
func TestProgressOfAPageWhoseWorkerWasKilledIsCountedOnceByTheRedelivery(t *testing.T) {
	t.Parallel()
	f := setup(t, false, false)
	const n = 40
	f.atBackfill(t, n, 2, 10)
	jobs, err := f.m.Jobs(KindBackfill)
	if err != nil {
		t.Fatal(err)
	}
	var pages, killed atomic.Int64
	f.m.seams.progress = func(context.Context, Job) {
		if pages.Add(1) == 2 {
			killed.Add(1)
			runtime.Goexit() // the worker dies here: no progress write, no continuation
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = deliver(f.b.Ctx, f.m, jobs[0]) })
	wg.Wait()
	if killed.Load() != 1 {
		t.Fatal("the worker was not killed between a page's work and its progress write")
	}
	if k := kindProgress(t, f.b.Ctx, f.m.Progress, KindBackfill); k.Counts["scanned"] != 10 || k.Done != 0 {
		t.Fatalf("progress after the kill %+v: want the first page's 10 scanned, not done", k)
	}
	if err := deliver(f.b.Ctx, f.m, jobs[0]); err != nil {
		t.Fatal(err)
	}
	k := kindProgress(t, f.b.Ctx, f.m.Progress, KindBackfill)
	if k.Counts["scanned"] != n || k.Started != 1 || k.Done != 1 || k.Total != 1 {
		t.Errorf("progress %+v: want %d scanned over the one range, done", k, n)
	}
}

// TestProgressSumsEqualTheReportOfRunAll runs a backfill and a verify, then a schema
// migration's rewrite, each with RunAll, and finds each stage's progress equal to the
// report the run returned.
func TestProgressSumsEqualTheReportOfRunAll(t *testing.T) {
	t.Parallel()
	t.Run("rekey", func(t *testing.T) {
		t.Parallel()
		f := setup(t, false, false)
		f.atBackfill(t, 45, 3, 7)
		rep, err := f.m.RunAll(f.b.Ctx, KindBackfill)
		if err != nil {
			t.Fatal(err)
		}
		mustEqualReport(t, kindProgress(t, f.b.Ctx, f.m.Progress, KindBackfill), reportCounts(rep))
		if _, err := f.m.Advance(f.b.Ctx); err != nil {
			t.Fatal(err)
		}
		f.settled(t)
		if p, err := f.m.Progress(f.b.Ctx); err != nil || p.Stage != Verify || len(p.Kinds) != 0 {
			t.Fatalf("progress of a verify not begun: %+v, %v: want verify's run alone, empty", p, err)
		}
		rep, err = f.m.RunAll(f.b.Ctx, KindVerify)
		if err != nil {
			t.Fatal(err)
		}
		mustEqualReport(t, kindProgress(t, f.b.Ctx, f.m.Progress, KindVerify), reportCounts(rep))
	})
	t.Run("schema", func(t *testing.T) {
		t.Parallel()
		f := setupStaged(t, false, 6)
		f.planned(t, 40, 3)
		f.advanceTo(t, Backfill)
		if _, err := f.s.WaitSettled(f.b.Ctx); err != nil {
			t.Fatal(err)
		}
		rep, err := f.s.RunAll(f.b.Ctx, KindSchemaRewrite)
		if err != nil {
			t.Fatal(err)
		}
		mustEqualReport(t, kindProgress(t, f.b.Ctx, f.s.Progress, KindSchemaRewrite), schemaCounts(rep))
	})
}

func mustEqualReport(t *testing.T, k KindProgress, want progressCounts) {
	t.Helper()
	for i, name := range countNames {
		if k.Counts[name] != want[i] {
			t.Errorf("%s progress %s = %d, the run reported %d", k.Kind, name, k.Counts[name], want[i])
		}
	}
	if want[0] == 0 || k.Done != 1 || k.Total != 1 {
		t.Errorf("%s progress %+v: want the one range done, rows scanned", k.Kind, k)
	}
}

// TestProgressRowsNeverHoldAValue runs a backfill and a verify and reads every progress
// row: no property holds a value of the migrated entities (their names), only counts,
// kinds and keys.
func TestProgressRowsNeverHoldAValue(t *testing.T) {
	t.Parallel()
	f := setup(t, false, false)
	keys, _ := f.planned(t, 30, 3)
	f.advanceTo(t, Verify)
	f.settled(t)
	if _, err := f.m.RunAll(f.b.Ctx, KindVerify); err != nil {
		t.Fatal(err)
	}
	raw := mustTable[codec.Entity](t, f, f.m.control.Name())
	rows, err := raw.Collect(f.b.Ctx, repo.Query{Filter: filter.RowKeyPrefix(f.m.recordKey(), "progress:")})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) < 2 {
		t.Fatalf("%d progress rows: want the backfill's and the verify's", len(rows))
	}
	for _, r := range rows {
		for prop, v := range r.Properties {
			s, ok := v.(string)
			if !ok {
				continue
			}
			for _, k := range keys {
				if value := "n" + k[1]; strings.Contains(s, value) {
					t.Errorf("progress row %s: %s holds %q, a value of the entity (%s, %s)", r.RowKey, prop, s, k[0], k[1])
				}
			}
		}
	}
}

// TestProgressSkipsARowThatDoesNotParse forges rows in the run's progress (a count of
// the wrong type, a negative count, a key that does not name its range): each is
// skipped and counted, and the sums are the real rows' alone.
func TestProgressSkipsARowThatDoesNotParse(t *testing.T) {
	t.Parallel()
	f := setup(t, false, false)
	const n = 20
	f.atBackfill(t, n, 2, 10)
	if _, err := f.m.RunAll(f.b.Ctx, KindBackfill); err != nil {
		t.Fatal(err)
	}
	st, err := f.m.load(f.b.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	prefix := f.m.progressPrefix(runOf(st, Backfill)) + KindBackfill + ":"
	raw := mustTable[codec.Entity](t, f, f.m.control.Name())
	forged := []map[string]any{
		{"Kind": KindBackfill, "From": "x", "Scanned": "1000"},
		{"Kind": KindBackfill, "From": "y", "Scanned": int64(-1000)},
		{"Kind": KindBackfill, "From": "not-this-range", "Scanned": int64(1000)},
	}
	for i, props := range forged {
		rk := prefix + rangeID(0, props["From"].(string), "")
		if i == 2 {
			rk = prefix + rangeID(0, "z", "")
		}
		if err := raw.Insert(f.b.Ctx, &codec.Entity{PartitionKey: f.m.recordKey(), RowKey: rk, Properties: props}); err != nil {
			t.Fatal(err)
		}
	}
	p, err := f.m.Progress(f.b.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.Skipped != len(forged) || len(p.Kinds) != 1 || p.Kinds[0].Counts["scanned"] != n || p.Kinds[0].Started != 1 {
		t.Errorf("progress %+v: want %d rows skipped and %d scanned over one range", p, len(forged), n)
	}
}

// TestAFailedProgressWriteNeverFailsThePage forges the progress row of the one range
// before a backfill runs (a count of the wrong type): every progress write of the run
// meets a row it must not build on and fails, each logged as a warning, while the
// backfill copies every entity and returns no error.
func TestAFailedProgressWriteNeverFailsThePage(t *testing.T) {
	t.Parallel()
	f := setup(t, false, false)
	const n = 20
	f.atBackfill(t, n, 2, 10)
	core, logs := observer.New(zap.WarnLevel)
	f.m.opts.Logger = zap.New(core)
	st, err := f.m.load(f.b.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	raw := mustTable[codec.Entity](t, f, f.m.control.Name())
	rk := f.m.progressPrefix(runOf(st, Backfill)) + KindBackfill + ":" + rangeID(1, "", "")
	if err := raw.Insert(f.b.Ctx, &codec.Entity{PartitionKey: f.m.recordKey(), RowKey: rk, Properties: map[string]any{"Kind": KindBackfill, "Scanned": "many"}}); err != nil {
		t.Fatal(err)
	}
	rep, err := f.m.RunAll(f.b.Ctx, KindBackfill)
	if err != nil || rep.Scanned != n || rep.Copied != n {
		t.Fatalf("the backfill under failing progress writes: %+v, %v: want %d copied", rep, err, n)
	}
	if got := logs.FilterMessageSnippet("progress not recorded").Len(); got != 2 {
		t.Errorf("%d progress warnings, want one per page (2)", got)
	}
	if p, err := f.m.Progress(f.b.Ctx); err != nil || p.Skipped != 1 || len(p.Kinds) != 0 {
		t.Errorf("progress %+v, %v: want the forged row skipped, nothing summed", p, err)
	}
}

// TestJobsCarryTheirPartsAndAForgedCountIsRefused: Jobs tells each job how many parts
// the kind was split into (Progress's total), and a job whose count is negative or past
// the bound is refused, a re-keying's and a schema migration's.
func TestJobsCarryTheirPartsAndAForgedCountIsRefused(t *testing.T) {
	t.Parallel()
	f := setup(t, false, false)
	s := setupStaged(t, false, 0)
	jobs, err := f.m.Jobs(KindVerify, "b", "c")
	if err != nil || len(jobs) != 3 || jobs[2].Parts != 3 {
		t.Fatalf("Jobs: %+v, %v: want 3 jobs of 3 parts", jobs, err)
	}
	sj, err := s.s.Jobs(KindSchemaRewrite, "b")
	if err != nil || len(sj) != 2 || sj[0].Parts != 2 {
		t.Fatalf("schema Jobs: %+v, %v: want 2 jobs of 2 parts", sj, err)
	}
	for _, parts := range []int{-1, maxParts + 1} {
		j, k := jobs[0], sj[0]
		j.Parts, k.Parts = parts, parts
		if _, _, err := f.m.RunJob(f.b.Ctx, j); !errors.Is(err, errs.ErrInvalidInput) {
			t.Errorf("a job of %d parts: %v, want ErrInvalidInput", parts, err)
		}
		if _, _, err := s.s.RunJob(s.b.Ctx, k); !errors.Is(err, errs.ErrInvalidInput) {
			t.Errorf("a schema job of %d parts: %v, want ErrInvalidInput", parts, err)
		}
	}
}

// TestProgressKeepsAdvancesPassApartFromTheWorkers runs a backfill's whole range with
// RunAll (Advance's own pass) before the workers' two jobs of the same work: each pass
// has rows of its own, so the workers' pass sums every entity once (not the ones its
// first range shares with RunAll's lost, nor the second range's counted on top of
// RunAll's), and RunAll's pass sums them once too.
func TestProgressKeepsAdvancesPassApartFromTheWorkers(t *testing.T) {
	t.Parallel()
	f := setup(t, false, false)
	const n = 60
	f.atBackfill(t, n, 3, 10)
	jobs, err := f.m.Jobs(KindBackfill, "dept01")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.RunAll(f.b.Ctx, KindBackfill); err != nil {
		t.Fatal(err)
	}
	for _, job := range jobs {
		if err := deliver(f.b.Ctx, f.m, job); err != nil {
			t.Fatal(err)
		}
	}
	p, err := f.m.Progress(f.b.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	byTotal := map[int]KindProgress{}
	for _, k := range p.Kinds {
		if k.Kind == KindBackfill {
			byTotal[k.Total] = k
		}
	}
	workers, own := byTotal[len(jobs)], byTotal[1]
	if len(byTotal) != 2 || workers.Counts["scanned"] != n || workers.Done != len(jobs) || own.Counts["scanned"] != n || own.Done != 1 {
		t.Errorf("progress %+v: want the workers' %d ranges and RunAll's one apart, each pass %d scanned and done", p.Kinds, len(jobs), n)
	}
}
