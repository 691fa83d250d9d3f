package migrate

import (
	"sync"
	"testing"

	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// TestSchemaMigrationUnderLoadWithKilledWorkersEndsWithExactlyTheLatest is the schema
// migration's acceptance test: 2,000 (20,000 in make soak) employees over 20
// departments stored at version 1, a writer updating, inserting and deleting
// throughout, a reader reading, and worker processes running the rewrite and verify
// jobs from a queue (pages of 250 rows, so jobs checkpoint and continue), each killed
// with SIGKILL at a random point, while the migration goes through every stage. At the
// end every live entity is stored at the latest version with exactly its latest value,
// none that was deleted is back, and the reader saw no gap and no step back.
func TestSchemaMigrationUnderLoadWithKilledWorkersEndsWithExactlyTheLatest(t *testing.T) {
	t.Parallel()
	n, parts, pageSize := scale(t), 20, 250
	f := setupStaged(t, false, pageSize)
	bin := buildWorker(t)
	keys, md := f.planned(t, n, parts)
	more := keys[50:]
	for i := n; i < n+n/10; i++ { // keys the writer inserts
		pk, rk := key(i%parts, i)
		more = append(more, [2]string{pk, rk})
	}
	q, queue := f.b.Queue()
	stop := make(chan struct{})
	w1 := &stagedWriter{s: f.s, md: md, keys: keys[:50]}
	w2 := &stagedWriter{s: f.s, md: md, keys: more, deletes: true}
	rd := &stagedReader{s: f.s, keys: keys[:50]}
	running := []*sync.WaitGroup{w1.run(f.b.Ctx, t, 1, stop), w2.run(f.b.Ctx, t, 3, stop), rd.run(f.b.Ctx, stop)}
	kl, kills := f.schemaKillLoop(t, bin, queue, pageSize, stop)
	for {
		st, err := f.s.Status(f.b.Ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Stage == Done {
			break
		}
		if kind, ok := schemaJobOf[st.Stage]; ok {
			jobs, err := f.s.Jobs(kind, "dept05", "dept10", "dept15")
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range jobs {
				if err := f.s.EnqueueJob(f.b.Ctx, q, j); err != nil {
					t.Fatal(err)
				}
			}
		}
		if _, err := f.s.Advance(f.b.Ctx); err != nil {
			t.Fatalf("advance from %s: %v", st.Stage, err)
		}
	}
	close(stop)
	for _, wg := range append(running, kl) {
		wg.Wait()
	}
	rd.check(t)
	f.mustHoldAt(t, md, 2)
	kills.mustCover(t, Backfill, Verify)
	t.Logf("%d entities: writes %d (+%d), reads %d, worker processes killed by stage %v", n, w1.writes.Load(), w2.writes.Load(), rd.reads.Load(), kills)
}

// TestSchemaAbortDuringRewriteUnderLoadWithKilledWorkersLeavesTheFromVersion: the
// schema migration is aborted while worker processes, each killed with SIGKILL at a
// random point, are rewriting (a quarter of the acceptance test's scale), a writer
// updating, inserting and deleting and a reader reading throughout; the same workers
// run the downgrade. At the end every live entity is stored at the version the
// migration started from with exactly its latest value, none that was deleted is back,
// and the reader saw no gap and no step back.
func TestSchemaAbortDuringRewriteUnderLoadWithKilledWorkersLeavesTheFromVersion(t *testing.T) {
	t.Parallel()
	n, parts, pageSize := scale(t)/4, 20, 50
	f := setupStaged(t, false, pageSize)
	bin := buildWorker(t)
	keys, md := f.planned(t, n, parts)
	more := keys[20:]
	for i := n; i < n+n/10; i++ {
		pk, rk := key(i%parts, i)
		more = append(more, [2]string{pk, rk})
	}
	q, queue := f.b.Queue()
	stop := make(chan struct{})
	w1 := &stagedWriter{s: f.s, md: md, keys: keys[:20]}
	w2 := &stagedWriter{s: f.s, md: md, keys: more, deletes: true}
	rd := &stagedReader{s: f.s, keys: keys[:20]}
	running := []*sync.WaitGroup{w1.run(f.b.Ctx, t, 1, stop), w2.run(f.b.Ctx, t, 2, stop), rd.run(f.b.Ctx, stop)}
	kl, kills := f.schemaKillLoop(t, bin, queue, pageSize, stop)
	enqueueAll := func(kind string) {
		jobs, err := f.s.Jobs(kind, "dept05", "dept10", "dept15")
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			if err := f.s.EnqueueJob(f.b.Ctx, q, j); err != nil {
				t.Fatal(err)
			}
		}
	}
	f.advanceTo(t, Backfill)
	enqueueAll(KindSchemaRewrite)
	// Abort once a quarter of the table is at the latest version (the killed workers'
	// rewrites and the writer's writes; waiting on their progress).
	latest := repo.Query{Filter: filter.Eq(DefaultVersionProperty, int32(2)), Select: []string{"PartitionKey"}}
	testbed.WaitFor(t, "a quarter at the latest version", func() bool {
		rows, err := f.b.Raw.Collect(f.b.Ctx, latest)
		return err == nil && len(rows) >= n/4
	})
	if _, err := f.s.Abort(f.b.Ctx); err != nil {
		t.Fatal(err)
	}
	enqueueAll(KindSchemaDowngrade)
	f.advanceTo(t, Aborted)
	close(stop)
	for _, wg := range append(running, kl) {
		wg.Wait()
	}
	rd.check(t)
	f.mustHoldAt(t, md, 1)
	kills.mustCover(t, Backfill, Aborting)
	t.Logf("%d entities: writes %d (+%d), reads %d, worker processes killed by stage %v", n, w1.writes.Load(), w2.writes.Load(), rd.reads.Load(), kills)
}
