package migrate

import (
	"context"
	"testing"
)

// runPage runs one page of job on m as a delivery does, its progress recorded, and
// returns the job that continues it (nil: the range is done).
func runPage(t *testing.T, ctx context.Context, m *Migration[Employee, EmployeeV2], job Job) *Job {
	t.Helper()
	next, rep, err := m.RunJob(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	m.pageDone(ctx, job, rep, next)
	return next
}

// TestProgressCountsAPageOnceWhenDeliveriesEndItAtOtherKeys delivers one range job
// twice, to workers that page it differently (10 rows a page, and 20: a rolling deploy,
// or a service page that ended early), the deliveries' pages interleaved: the second
// delivery's first page covers the first's and goes past it, so its counts hold rows
// already counted. It adds nothing; the first delivery's next page, which starts where
// the counted rows end, counts the rest, and every row is scanned once in the sums.
func TestProgressCountsAPageOnceWhenDeliveriesEndItAtOtherKeys(t *testing.T) {
	t.Parallel()
	f := setup(t, false, false)
	const n = 40
	f.atBackfill(t, n, 2, 10)
	wide, err := New(Spec[Employee, EmployeeV2]{Name: f.m.spec.Name, Service: f.b.Clients.Tables, Source: f.src, Target: f.tgt,
		Keys: hashKeys, Transform: upgrade, Control: f.m.control.Name()}, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	wide.opts.PageSize = 20
	jobs, err := f.m.Jobs(KindBackfill)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Jobs: %+v, %v: want the one range", jobs, err)
	}
	narrowNext := runPage(t, f.b.Ctx, f.m, jobs[0])
	wideNext := runPage(t, f.b.Ctx, wide, jobs[0])
	for narrowNext != nil || wideNext != nil {
		if narrowNext != nil {
			narrowNext = runPage(t, f.b.Ctx, f.m, *narrowNext)
		}
		if wideNext != nil {
			wideNext = runPage(t, f.b.Ctx, wide, *wideNext)
		}
	}
	k := kindProgress(t, f.b.Ctx, f.m.Progress, KindBackfill)
	if k.Counts["scanned"] != n || k.Started != 1 || k.Done != 1 || k.Total != 1 {
		t.Errorf("progress %+v: want %d scanned over the one range, done", k, n)
	}
}
