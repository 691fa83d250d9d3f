package consistency

import (
	"fmt"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/benchcmp"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/internal/benchthrottle"
)

// throttledRange archives, one source table per operation, the entities layout(op)
// returns to a target table with ArchiveRange (every page in one call) through the
// throughput model (benchcmp.RunThrottled). Each source is written beforehand on clients
// that go around the model (untimed, benchthrottle.Bed.SeedTable). The copy (in the
// target table, same PartitionKey) and the delete of each entity both count against its
// partition; the reads of each batch (the target's copies, the source's entities) and
// each page's scan are the pattern's own work, counted by the model but not in the
// ceiling.
func throttledRange(b *testing.B, formula string, layout func(op int) []*codec.Entity, bound func(items []*codec.Entity) time.Duration) {
	bed := benchthrottle.New(b)
	a, err := New(bed.Proxied, nil)
	if err != nil {
		b.Fatal(err)
	}
	var items []*codec.Entity
	var job ArchiveRangeJob
	benchcmp.RunThrottled(b, bed.Model, benchcmp.Throttled{
		Formula: formula,
		Prepare: func(op int) error {
			items = layout(op)
			src, err := bed.SeedTable(b, items)
			if err != nil {
				return err
			}
			dst := testenv.TableName(b)
			testenv.Table(b, dst)
			job = ArchiveRangeJob{Source: src, PartitionKeyFrom: "A", TargetTable: dst}
			return nil
		},
		Op: func(int) error {
			rep, err := a.ArchiveRange(b.Context(), job)
			if err == nil && rep.Moved != len(items) {
				err = fmt.Errorf("moved %d of %d entities", rep.Moved, len(items))
			}
			return err
		},
		Bound: func(int) time.Duration { return bound(items) },
	})
}

// rangeEntities returns n entities of partition pk.
func rangeEntities(pk string, n int) []*codec.Entity {
	out := make([]*codec.Entity, n)
	for i := range out {
		out[i] = rangeEntity(pk, i, 1)
	}
	return out
}

// BenchmarkArchiveRangeThrottledUniform archives 50 partitions of 100 entities (5 pages
// of RangeJobSize keys, 10 partitions each) under the model. A page is the unit of a
// range job, in key order, so the page's partitions are what its batches spread over:
// ten at 200 entities/s reach the account's 2,000. Each entity costs 2 operations (its
// copy and its delete): 1,000 entities/s, 5 s.
//
//	go test -run '^$' -bench ArchiveRangeThrottledUniform -benchtime=1x ./patterns/consistency/
func BenchmarkArchiveRangeThrottledUniform(b *testing.B) {
	const partitions, perPartition, perPage = 50, 100, RangeJobSize / 100
	throttledRange(b, "ratio-ceiling = (entities x 2 operations (copy, delete) / min(account rate, a page's partitions x partition rate)) / time",
		func(op int) []*codec.Entity {
			var items []*codec.Entity
			for p := range partitions {
				items = append(items, rangeEntities(fmt.Sprintf("U%d-%02d", op, p), perPartition)...)
			}
			return items
		},
		func(items []*codec.Entity) time.Duration {
			return benchcmp.Seconds(float64(2*len(items)), min(benchcmp.ThrottledAccountRate, perPage*benchcmp.ThrottledPartitionRate))
		})
}

// BenchmarkArchiveRangeThrottledHotCold archives one hot partition of 500 entities and 5
// cold ones of 100, one page, under the model. The hot partition alone bounds it: 500
// entities x 2 operations at 200/s, 5 s; the cold ones fit beside it.
//
//	go test -run '^$' -bench ArchiveRangeThrottledHotCold -benchtime=1x ./patterns/consistency/
func BenchmarkArchiveRangeThrottledHotCold(b *testing.B) {
	const hot, cold, perCold = 500, 5, 100
	throttledRange(b, "ratio-ceiling = (hot partition's entities x 2 operations (copy, delete) / partition rate) / time",
		func(op int) []*codec.Entity {
			items := rangeEntities(fmt.Sprintf("H%d-hot", op), hot)
			for p := range cold {
				items = append(items, rangeEntities(fmt.Sprintf("H%d-cold%d", op, p), perCold)...)
			}
			return items
		},
		func([]*codec.Entity) time.Duration {
			return benchcmp.Seconds(2*hot, benchcmp.ThrottledPartitionRate)
		})
}
