package migrate

import (
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
)

// TestProgressSkipsARowOfAKindNotOfItsRun forges, in a re-keying's backfill run, rows
// keyed as the ranges of a verify job and of a schema migration's rewrite, which no job
// of that run writes: each is skipped and counted, and only the backfill is summed.
func TestProgressSkipsARowOfAKindNotOfItsRun(t *testing.T) {
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
	raw := mustTable[codec.Entity](t, f, f.m.control.Name())
	for _, kind := range []string{KindVerify, KindSchemaRewrite} {
		rk := f.m.progressPrefix(runOf(st, Backfill)) + kind + ":" + rangeID(1, "", "")
		props := map[string]any{"Kind": kind, "Parts": int64(1), "Done": true, "Scanned": int64(1000)}
		if err := raw.Insert(f.b.Ctx, &codec.Entity{PartitionKey: f.m.recordKey(), RowKey: rk, Properties: props}); err != nil {
			t.Fatal(err)
		}
	}
	p, err := f.m.Progress(f.b.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.Skipped != 2 || len(p.Kinds) != 1 || p.Kinds[0].Kind != KindBackfill || p.Kinds[0].Counts["scanned"] != n {
		t.Errorf("progress %+v: want the 2 forged rows skipped and the backfill's %d scanned alone", p, n)
	}
}
