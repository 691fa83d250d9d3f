package consistency

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/telemetry"
	"github.com/tablepatterns/tablepatterns/internal/telemetry/telemetrytest"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// rangeEntity is entity n of partition pk, version v.
func rangeEntity(pk string, n, v int) *codec.Entity {
	return &codec.Entity{PartitionKey: pk, RowKey: fmt.Sprintf("%06d", n), Properties: map[string]any{
		"N": int32(n), "Version": int32(v), "Name": fmt.Sprintf("employee %s/%d", pk, n),
	}}
}

// loadRange writes perPartition entities into each of the partitions and returns their
// source ETags by key.
func (b *bed) loadRange(t *testing.T, partitions []string, perPartition int) map[RangeKey]string {
	t.Helper()
	var items []*codec.Entity
	for _, pk := range partitions {
		for n := 0; n < perPartition; n++ {
			items = append(items, rangeEntity(pk, n, 1))
		}
	}
	if err := b.current.BulkWrite(b.ctx, items, nil); err != nil {
		t.Fatal(err)
	}
	out := make(map[RangeKey]string, len(items))
	for _, e := range items {
		out[RangeKey{e.PartitionKey, e.RowKey}] = e.ETag
	}
	return out
}

// rangeClient returns a queueworker client on a fresh queue name of b's account (the
// queue is created by newWorker).
func rangeClient(t *testing.T, b *bed) (*queueworker.Client, string) {
	t.Helper()
	queue := testenv.QueueName(t)
	c, err := queueworker.NewClient(b.clients.Queues.NewQueueClient(queue), &queueworker.ClientOptions{Retry: fastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	return c, queue
}

// rangeArchiver returns an archiver of b's account that continues range jobs on q.
func rangeArchiver(t *testing.T, b *bed, q *queueworker.Client, opts *Options) *Archiver {
	t.Helper()
	var o Options
	if opts != nil {
		o = *opts
	}
	o.Retry, o.Queue = fastRetry(), q
	a, err := New(b.clients, &o)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// rangeWorker returns a worker for a's jobs on queue (created by newWorker) that allows
// 32 deliveries per message: the kill tests crash one page's delivery several times,
// and each crash counts as a delivery, as a crashed process's does.
func rangeWorker(t *testing.T, b *bed, queue string, a *Archiver) *queueworker.Worker {
	t.Helper()
	newWorker(t, b, queue, a) // creates the queue and its cleanup
	reg := queueworker.NewRegistry()
	if err := a.Register(reg); err != nil {
		t.Fatal(err)
	}
	w, err := queueworker.New(queueworker.Config{
		Queue: b.clients.Queues.NewQueueClient(queue), Service: b.clients.Queues, Registry: reg, Concurrency: 16,
		VisibilityTimeout: 20 * time.Second, MinPollInterval: 10 * time.Millisecond, MaxPollInterval: 100 * time.Millisecond,
		MaxDequeueCount: 32, Retry: fastRetry(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// assertRangeArchived checks the end state of a range archive: the archive holds exactly
// the entities of want (nothing extra), each once at the source version want records
// with its properties; none of them is left in the source; keep are still in the source.
func (b *bed) assertRangeArchived(t *testing.T, want map[RangeKey]string, keep map[RangeKey]bool) {
	t.Helper()
	got, err := b.archive.Collect(b.ctx, repo.Query{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[RangeKey]bool{}
	for _, e := range got {
		k := RangeKey{e.PartitionKey, e.RowKey}
		etag, ok := want[k]
		switch {
		case !ok:
			t.Fatalf("the archive holds (%s, %s), which the range does not select", k.PartitionKey, k.RowKey)
		case seen[k]:
			t.Fatalf("(%s, %s) archived twice", k.PartitionKey, k.RowKey)
		case e.Properties[SourceETagProperty] != etag:
			t.Fatalf("(%s, %s) archived at source version %v, want %s", k.PartitionKey, k.RowKey, e.Properties[SourceETagProperty], etag)
		case e.Properties["Name"] != fmt.Sprintf("employee %s/%d", k.PartitionKey, e.Properties["N"]):
			t.Fatalf("(%s, %s) archived with properties %v", k.PartitionKey, k.RowKey, e.Properties)
		}
		seen[k] = true
	}
	if len(seen) != len(want) {
		t.Fatalf("the archive holds %d entities, want %d", len(seen), len(want))
	}
	left, err := b.current.Collect(b.ctx, repo.Query{Select: []string{"PartitionKey", "RowKey"}})
	if err != nil {
		t.Fatal(err)
	}
	kept := 0
	for _, e := range left {
		k := RangeKey{e.PartitionKey, e.RowKey}
		if _, moved := want[k]; moved {
			t.Fatalf("(%s, %s) is still in the source", k.PartitionKey, k.RowKey)
		}
		if keep[k] {
			kept++
		}
	}
	if kept != len(keep) {
		t.Fatalf("%d of the %d entities outside the range are left in the source", kept, len(keep))
	}
}

// The acceptance test: a range archive over 24 partitions in pages of 20 keys
// (20,000 entities over 20 partitions in pages of RangeJobSize under make soak), through
// the worker, killed 10 times at random steps (the worker's context cancelled and the job
// stopped where it was, as a crash would), resumed by new workers from the queue, ends
// with every entity archived exactly once at its source version and the source empty; the
// partitions just outside the range are not touched.
func TestRangeArchiveKilledTenTimes(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	// A page of 20 keys spans two partitions of 10, so a delivery takes 8 steps (scanned;
	// read, copied, deleted for each of its two batches; continued), and each kill lands
	// within the first 9 steps of a delivery: at any step of a page, its continuation
	// included, or the next page's scan. Ten kills move the job at most 80 steps, fewer
	// than the twelve pages (95 steps and more) hold: every kill lands inside the job,
	// across continuations, and the last worker still has work left. make soak takes pages
	// of RangeJobSize (32 steps, batches of 100) and reaches 40 steps, into 20 pages.
	nparts, perPart := testenv.Scale(24, 20), testenv.Scale(10, RangeJobSize)
	page, reach := testenv.Scale(20, RangeJobSize), testenv.Scale[int64](9, 40)
	var parts []string
	for p := 1; p <= nparts; p++ {
		parts = append(parts, fmt.Sprintf("p%02d", p))
	}
	want := b.loadRange(t, parts, perPart)
	outside := b.loadRange(t, []string{"p00", fmt.Sprintf("p%02d", nparts+1)}, 10)
	keep := map[RangeKey]bool{}
	for k := range outside {
		keep[k] = true
	}
	c, queue := rangeClient(t, b)
	job := ArchiveRangeJob{Source: b.current.Name(), PartitionKeyFrom: "p01", PartitionKeyTo: fmt.Sprintf("p%02d", nparts+1), TargetTable: b.archive.Name()}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 14))
	enqueued := false
	var continued atomic.Int64 // continuations enqueued, by all the workers
	for kill := 0; kill < 10; kill++ {
		var steps atomic.Int64
		var fired atomic.Bool
		at := 1 + rng.Int64N(reach)
		ctx, stop := context.WithCancel(b.ctx)
		crashing := rangeArchiver(t, b, c, nil)
		crashing.seams.pageSize = page
		crashing.seams.step = func(_, step string) error {
			if step == "continued" {
				continued.Add(1)
			}
			if steps.Add(1) == at {
				fired.Store(true)
				stop()          // the process goes down ...
				return errCrash // ... in the middle of this step
			}
			return nil
		}
		w := rangeWorker(t, b, queue, crashing)
		if !enqueued {
			if err := EnqueueArchiveRange(b.ctx, c, job); err != nil {
				t.Fatal(err)
			}
			enqueued = true
		}
		err := w.Drain(ctx)
		stop()
		if !fired.Load() {
			t.Fatalf("kill %d: the job ended (%v) before step %d", kill, err, at)
		}
	}
	final := rangeArchiver(t, b, c, nil)
	final.seams.pageSize = page
	final.seams.step = func(_, step string) error {
		if step == "continued" {
			continued.Add(1)
		}
		return nil
	}
	w := rangeWorker(t, b, queue, final)
	// Drain waits for the messages the killed workers left invisible; a drain that handles
	// nothing while entities of the range are left means the job was lost.
	for handled := int64(-1); ; {
		drain(t, w)
		left, err := b.current.Collect(b.ctx, repo.Query{Filter: filter.PartitionRange("p01", job.PartitionKeyTo), Top: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(left) == 0 {
			break
		}
		if h := w.Stats().Processed + w.Stats().Failed; h == handled {
			t.Fatalf("the range was never finished: a drain handled no message and (%s, %s) is left", left[0].PartitionKey, left[0].RowKey)
		} else {
			handled = h
		}
	}
	b.assertRangeArchived(t, want, keep)
	if continued.Load() == 0 {
		t.Fatal("the range was moved in one page: the kills never met a continuation")
	}
	poison, err := queueworker.PeekPoison(b.ctx, w.PoisonQueue(), 8)
	if err != nil && !errors.Is(err, repo.ErrNotFound) {
		t.Fatal(err)
	}
	if len(poison) != 0 {
		t.Fatalf("poisoned: %+v", poison)
	}
}

// Called from code, ArchiveRange moves one partition's RowKey range, and a filter over
// properties, and leaves everything else; a rerun finds nothing left to do.
func TestArchiveRangeSelections(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	all := b.loadRange(t, []string{"Sales", "Ops"}, 250)
	for _, tc := range []struct {
		name string
		job  ArchiveRangeJob
		sel  func(k RangeKey, n int) bool
	}{
		{"rowkey-range", ArchiveRangeJob{PartitionKey: "Sales", RowKeyFrom: "000010", RowKeyTo: "000210"},
			func(k RangeKey, n int) bool { return k.PartitionKey == "Sales" && n >= 10 && n < 210 }},
		{"filter", ArchiveRangeJob{Where: []filter.Condition{{Property: "N", Op: "ge", Type: "Edm.Int32", Value: "240"}}},
			func(k RangeKey, n int) bool { return n >= 240 }},
	} {
		job := tc.job
		job.Source, job.TargetTable = b.current.Name(), b.archive.Name()
		rep, err := b.a.ArchiveRange(b.ctx, job)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		again, err := b.a.ArchiveRange(b.ctx, job)
		if err != nil || again.Moved != 0 {
			t.Fatalf("%s: the rerun moved %d: %v", tc.name, again.Moved, err)
		}
		t.Logf("%s: %+v", tc.name, rep)
	}
	want, keep := map[RangeKey]string{}, map[RangeKey]bool{}
	for k, etag := range all {
		var n int
		fmt.Sscanf(k.RowKey, "%d", &n)
		if (k.PartitionKey == "Sales" && n >= 10 && n < 210) || n >= 240 {
			want[k] = etag
		} else {
			keep[k] = true
		}
	}
	b.assertRangeArchived(t, want, keep)
}

// A range archive to blobs, over two pages of 20: every entity in its own blob
// (EntityBlobName), readable with ReadArchivedEntity, the source empty.
func TestArchiveRangeToBlobs(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	container := testenv.ContainerName(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = b.clients.Blobs.DeleteContainer(ctx, container, nil)
	})
	b.a.seams.pageSize = 20
	want := b.loadRange(t, []string{"o'brien 100%"}, 30)
	job := ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "o'brien 100%", TargetContainer: container}
	rep, err := b.a.ArchiveRange(b.ctx, job)
	if err != nil || rep.Moved != len(want) {
		t.Fatalf("moved %d of %d: %v", rep.Moved, len(want), err)
	}
	for k, etag := range want {
		e, err := b.a.ReadArchivedEntity(b.ctx, container, b.current.Name(), k.PartitionKey, k.RowKey)
		if err != nil {
			t.Fatal(err)
		}
		st, err := b.a.blobState(b.ctx, ArchiveEntityJob{Source: job.Source, PartitionKey: k.PartitionKey, RowKey: k.RowKey, TargetContainer: container},
			EntityBlobName(job.Source, k.PartitionKey, k.RowKey))
		if err != nil || st.sourceETag != etag || e.Properties["N"] == nil {
			t.Fatalf("(%s, %s): recorded %q want %q: %v", k.PartitionKey, k.RowKey, st.sourceETag, etag, err)
		}
	}
	if left, err := b.current.Collect(b.ctx, repo.Query{}); err != nil || len(left) != 0 {
		t.Fatalf("source: %d left: %v", len(left), err)
	}
}

// Without Options.Queue, one delivery of an archive-range job runs its whole range
// (three pages of 50 here), enqueuing no continuation.
func TestRangeJobWithoutQueueRunsWhole(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	b.a.seams.pageSize = 50
	var scans atomic.Int64
	b.a.seams.step = func(_, step string) error {
		if step == "scanned" {
			scans.Add(1)
		}
		return nil
	}
	want := b.loadRange(t, []string{"Sales"}, 110)
	queue := testenv.QueueName(t)
	w := rangeWorker(t, b, queue, b.a) // b.a has no Options.Queue
	c, err := queueworker.NewClient(b.clients.Queues.NewQueueClient(queue), &queueworker.ClientOptions{Retry: fastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	if err := EnqueueArchiveRange(b.ctx, c, ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", TargetTable: b.archive.Name()}); err != nil {
		t.Fatal(err)
	}
	drain(t, w)
	if s := w.Stats(); s.Processed != 1 || s.Failed != 0 {
		t.Fatalf("worker: %+v, want one delivery", s)
	}
	if n := scans.Load(); n != 3 {
		t.Fatalf("the delivery scanned %d pages, want 3", n)
	}
	b.assertRangeArchived(t, want, nil)
}

// A range job run by the worker records one consistency.archive_range span per delivery,
// under the worker's queueworker.process span, with the tables and the number of
// entities the delivery moved (tablepatterns.count), as telemetry.go lists it.
func TestArchiveRangeSpan(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	job := ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", TargetTable: b.archive.Name()}
	b.loadRange(t, []string{job.PartitionKey}, 40)
	q, queue := rangeClient(t, b)
	w := rangeWorker(t, b, queue, rangeArchiver(t, b, q, nil))
	telemetrytest.Install()
	if err := EnqueueArchiveRange(b.ctx, q, job); err != nil {
		t.Fatal(err)
	}
	drain(t, w)
	spans := telemetrytest.Find("consistency.archive_range", telemetry.KeyTable.String(b.current.Name()))
	if len(spans) != 1 {
		t.Fatalf("%d archive_range spans, want 1 (one page, one delivery)", len(spans))
	}
	if !telemetrytest.HasAll(spans[0].Attributes, telemetry.KeyTargetTable.String(b.archive.Name()), telemetry.KeyCount.Int(40)) {
		t.Errorf("archive_range attributes %v", spans[0].Attributes)
	}
	if p, ok := telemetrytest.ByID(spans[0].Parent); !ok || p.Name != "queueworker.process" {
		t.Fatalf("archive_range's parent is %q (found %v), want queueworker.process", p.Name, ok)
	}
}
