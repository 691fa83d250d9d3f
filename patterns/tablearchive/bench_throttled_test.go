package tablearchive

import (
	"fmt"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/benchcmp"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/internal/benchthrottle"
)

// throttledRestore restores, one table per operation, an archive of the entities
// layout(op) returns through the throughput model (benchcmp.RunThrottled). Each table is
// written (benchthrottle.Bed.SeedTable) and archived beforehand, on clients that go
// around the model (untimed); the restore runs on clients behind it, into a new table,
// and is timed whole: the snapshot and the verification of the archive before the first
// write (tens of milliseconds here) are in its time.
func throttledRestore(b *testing.B, formula string, layout func(op int) []*codec.Entity, bound func(items []*codec.Entity) time.Duration) {
	bed := benchthrottle.New(b)
	archiver, err := New(bed.Direct, nil)
	if err != nil {
		b.Fatal(err)
	}
	restorer, err := New(bed.Proxied, nil)
	if err != nil {
		b.Fatal(err)
	}
	container := testenv.ContainerName(b)
	var items []*codec.Entity
	var job RestoreTableJob
	benchcmp.RunThrottled(b, bed.Model, benchcmp.Throttled{
		Formula: formula,
		Prepare: func(op int) error {
			items = layout(op)
			src, err := bed.SeedTable(b, items)
			if err != nil {
				return err
			}
			target := testenv.TableName(b)
			testenv.Table(b, target) // cleaned up after the benchmark; the restore creates it
			if _, err := archiver.ArchiveTable(b.Context(), ArchiveTableJob{Table: src, Container: container, Sealed: true}); err != nil {
				return err
			}
			job = RestoreTableJob{Table: src, Container: container, Target: target}
			return nil
		},
		Op: func(int) error {
			rep, err := restorer.RestoreTable(b.Context(), job)
			if err == nil && (rep.Outcome != OutcomeRestored || rep.Manifest.Entities != int64(len(items))) {
				// A restore that found no archive, or a smaller one, would time nothing.
				err = fmt.Errorf("restore: outcome %q of %d entities, want %q of %d", rep.Outcome, rep.Manifest.Entities, OutcomeRestored, len(items))
			}
			return err
		},
		Bound: func(int) time.Duration { return bound(items) },
	})
}

// restoreEntities returns n entities of partition pk.
func restoreEntities(pk string, n int) []*codec.Entity {
	out := make([]*codec.Entity, n)
	for i := range out {
		out[i] = employee(pk, fmt.Sprintf("%05d", i), int32(20+i%40))
	}
	return out
}

// BenchmarkRestoreThrottledUniform restores a table of 10 partitions of 1,000 entities
// under the model. Its ceiling is the account's 2,000 entities/s (ten partitions at 200
// reach it too) over the one operation an entity costs: 5 s.
//
//	go test -run '^$' -bench RestoreThrottledUniform -benchtime=1x ./patterns/tablearchive/
func BenchmarkRestoreThrottledUniform(b *testing.B) {
	const partitions, perPartition = 10, 1000
	throttledRestore(b, "ratio-ceiling = (entities / min(account rate, partitions x partition rate) / 1 operation per entity) / time",
		func(op int) []*codec.Entity {
			var items []*codec.Entity
			for p := range partitions {
				items = append(items, restoreEntities(fmt.Sprintf("U%d-%02d", op, p), perPartition)...)
			}
			return items
		},
		func(items []*codec.Entity) time.Duration {
			return benchcmp.Seconds(float64(len(items)), min(benchcmp.ThrottledAccountRate, partitions*benchcmp.ThrottledPartitionRate))
		})
}

// BenchmarkRestoreThrottledHotCold restores a table of one hot partition of 2,000 entities
// and 12 cold ones of 500 under the model. The hot partition alone bounds it: 2,000
// entities at 200/s, 10 s; the cold ones fit beside it within the account's rate.
//
//	go test -run '^$' -bench RestoreThrottledHotCold -benchtime=1x ./patterns/tablearchive/
func BenchmarkRestoreThrottledHotCold(b *testing.B) {
	const hot, cold, perCold = 2000, 12, 500
	throttledRestore(b, "ratio-ceiling = (hot partition's entities / partition rate / 1 operation per entity) / time",
		func(op int) []*codec.Entity {
			items := restoreEntities(fmt.Sprintf("H%d-hot", op), hot)
			for p := range cold {
				items = append(items, restoreEntities(fmt.Sprintf("H%d-cold%02d", op, p), perCold)...)
			}
			return items
		},
		func([]*codec.Entity) time.Duration {
			return benchcmp.Seconds(hot, benchcmp.ThrottledPartitionRate)
		})
}
