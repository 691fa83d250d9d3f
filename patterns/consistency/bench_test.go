package consistency

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/benchcmp"
	"github.com/tablepatterns/tablepatterns/internal/fanout"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// BenchmarkArchiveRange archives 500 entities (5 partitions of 100) from Current to
// Archive through the worker (concurrency 16, the same worker settings for both), on the
// same Azurite, the two sides alternated operation by operation in one run (benchcmp):
//
//   - range: one archive-range job over the operation's partitions: one page, five
//     batches of 100 (a keys-only scan, then per batch a target read, a source read, one
//     copy transaction and one delete transaction);
//   - entity-jobs: one archive-entity job per entity, the baseline (about six
//     requests per entity: a message, two reads, a write, a delete, the message delete).
//
// Each operation enqueues its jobs (16 at once for entity-jobs) and drains the worker;
// the entities are written beforehand (Prepare, not timed). Reported: ratio (entity-jobs
// time over range time), <side>-entities/s, <side>-req/op (requests per operation of 500
// entities, queue requests included) and <side>-req/entity.
//
//	go test -run '^$' -bench ArchiveRange -benchtime=3x ./patterns/consistency/
func BenchmarkArchiveRange(b *testing.B) {
	const parts, per = 5, 100
	ctx := b.Context()
	ctr := benchcmp.NewCounter()
	clients, err := account.NewClients(testenv.ConnectionString(b), &account.ClientOptions{Transport: ctr})
	if err != nil {
		b.Fatal(err)
	}
	src, dst, queue := testenv.TableName(b)+"Cur", testenv.TableName(b)+"Arc", testenv.QueueName(b)
	testenv.Table(b, src)
	testenv.Table(b, dst)
	q := clients.Queues.NewQueueClient(queue)
	if _, err := q.Create(ctx, nil); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = q.Delete(ctx, nil)
	})
	jobs, err := queueworker.NewClient(q, nil)
	if err != nil {
		b.Fatal(err)
	}
	a, err := New(clients, &Options{Queue: jobs})
	if err != nil {
		b.Fatal(err)
	}
	reg := queueworker.NewRegistry()
	if err := a.Register(reg); err != nil {
		b.Fatal(err)
	}
	w, err := queueworker.New(queueworker.Config{Queue: q, Service: clients.Queues, Registry: reg, Concurrency: 16,
		MinPollInterval: 10 * time.Millisecond, MaxPollInterval: 100 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	source, err := repo.New[codec.Entity](clients.Tables, src, nil)
	if err != nil {
		b.Fatal(err)
	}
	pk := func(side string, i, p int) string { return fmt.Sprintf("%s%04d-%d", side, i, p) }
	load := func(side string) func(i int) error {
		return func(i int) error {
			var items []*codec.Entity
			for p := range parts {
				for n := range per {
					items = append(items, rangeEntity(pk(side, i, p), n, 1))
				}
			}
			return source.BulkWrite(ctx, items, nil)
		}
	}
	drained := func(side string, i int) error {
		if err := w.Drain(ctx); err != nil {
			return err
		}
		left, err := source.Collect(ctx, repo.Query{Filter: rangeOf(side, i), Top: 1})
		if err != nil {
			return err
		}
		return benchcmp.Check("entities left", len(left), 0)
	}
	reqs := map[string]*[2]int64{"range": {}, "entity-jobs": {}} // requests, operations
	counted := func(side string, op func(i int) error) func(i int) error {
		return func(i int) error {
			before := ctr.Count()
			err := op(i)
			reqs[side][0] += ctr.Count() - before
			reqs[side][1]++
			return err
		}
	}
	benchcmp.Run(b, &benchcmp.Options{GC: true, Requests: ctr.Count, Items: parts * per, Unit: "entities", Warmup: -1},
		benchcmp.Side{Name: "range", Prepare: load("r"), Op: counted("range", func(i int) error {
			job := ArchiveRangeJob{Source: src, PartitionKeyFrom: pk("r", i, 0), PartitionKeyTo: fmt.Sprintf("r%04d.", i), TargetTable: dst}
			if err := EnqueueArchiveRange(ctx, jobs, job); err != nil {
				return err
			}
			return drained("r", i)
		})},
		benchcmp.Side{Name: "entity-jobs", Prepare: load("s"), Op: counted("entity-jobs", func(i int) error {
			err := fanout.Do(ctx, parts*per, 16, func(ctx context.Context, k int) error {
				return EnqueueArchiveEntity(ctx, jobs, ArchiveEntityJob{Source: src, PartitionKey: pk("s", i, k/per),
					RowKey: fmt.Sprintf("%06d", k%per), TargetTable: dst})
			})
			if err != nil {
				return err
			}
			return drained("s", i)
		})})
	for side, r := range reqs {
		if r[1] > 0 {
			b.ReportMetric(float64(r[0])/float64(r[1]*parts*per), side+"-req/entity")
		}
	}
}

// rangeOf selects the partitions of operation i of a side.
func rangeOf(side string, i int) filter.Expr {
	return filter.PartitionRange(fmt.Sprintf("%s%04d-", side, i), fmt.Sprintf("%s%04d.", side, i))
}
