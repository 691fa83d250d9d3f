package migrate

import "testing"

// TestProgressKeepsTwoSplitsOfOneCountApart enqueues a backfill's work twice, split
// into two parts each time but at other bounds (dept01, then dept02): the splits'
// ranges overlap, so neither pass takes a range of the other for one of its own (the
// first ranges both start at the table's start), and each pass sums every entity once
// over its own two ranges.
func TestProgressKeepsTwoSplitsOfOneCountApart(t *testing.T) {
	t.Parallel()
	f := setup(t, false, false)
	const n = 60
	f.atBackfill(t, n, 3, 10)
	for _, bound := range []string{"dept01", "dept02"} {
		jobs, err := f.m.Jobs(KindBackfill, bound)
		if err != nil {
			t.Fatal(err)
		}
		for _, job := range jobs {
			if err := deliver(f.b.Ctx, f.m, job); err != nil {
				t.Fatal(err)
			}
		}
	}
	p, err := f.m.Progress(f.b.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.Skipped != 0 || len(p.Kinds) != 2 {
		t.Fatalf("progress %+v: want the two splits' passes apart", p)
	}
	for _, k := range p.Kinds {
		if k.Kind != KindBackfill || k.Counts["scanned"] != n || k.Started != 2 || k.Done != 2 || k.Total != 2 {
			t.Errorf("a pass %+v: want %d scanned over its 2 of 2 ranges, done", k, n)
		}
	}
}
