package secondaryindex_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/benchcmp"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/internal/benchthrottle"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
)

// throttledBackfill runs Intra.Backfill (the primary copy and the email index's copy of
// each employee) of the employees layout(op) returns through the throughput model, one
// backfill per operation on freshly filled buckets (benchcmp.RunThrottled).
func throttledBackfill(b *testing.B, formula string, layout func(op int) []*Employee, bound func(items []*Employee) time.Duration) {
	bed := benchthrottle.New(b)
	name := testenv.TableName(b)
	testenv.Table(b, name)
	x, err := intraOn(bed.Proxied.Tables, name, byID, []secondaryindex.Index[Employee]{byEmail}, nil)
	if err != nil {
		b.Fatal(err)
	}
	var items []*Employee
	benchcmp.RunThrottled(b, bed.Model, benchcmp.Throttled{
		Formula: formula,
		Prepare: func(op int) error { items = layout(op); return nil },
		Op:      func(int) error { return x.Backfill(b.Context(), items) },
		Bound:   func(int) time.Duration { return bound(items) },
	})
}

// backfillEmployees returns n employees of department dept, each with its own email.
func backfillEmployees(dept string, n int) []*Employee {
	out := make([]*Employee, n)
	for i := range out {
		out[i] = emp(i, "First", "Last", fmt.Sprintf("employee%05d@contoso.com", i))
		out[i].Department = dept
	}
	return out
}

// BenchmarkBackfillThrottledUniform backfills 10 departments of 500 employees (10,000
// copies: each employee's primary copy and its email index copy) with one Intra.Backfill
// under the model. Its ceiling is the account's 2,000 entity operations/s (ten partitions
// at 200 reach it too) over the 2 operations an employee costs: 1,000 employees/s, 5 s.
//
//	go test -run '^$' -bench BackfillThrottledUniform -benchtime=1x ./patterns/secondaryindex/
func BenchmarkBackfillThrottledUniform(b *testing.B) {
	const partitions, perPartition = 10, 500
	throttledBackfill(b, "ratio-ceiling = (employees / (min(account rate, partitions x partition rate) / 2 copies per employee)) / time",
		func(op int) []*Employee {
			var items []*Employee
			for p := range partitions {
				items = append(items, backfillEmployees(fmt.Sprintf("U%d-%02d", op, p), perPartition)...)
			}
			return items
		},
		func(items []*Employee) time.Duration {
			return benchcmp.Seconds(float64(2*len(items)), min(benchcmp.ThrottledAccountRate, partitions*benchcmp.ThrottledPartitionRate))
		})
}

// BenchmarkBackfillThrottledHotCold backfills one hot department of 1,000 employees and
// 12 cold ones of 250 with one Intra.Backfill under the model. The hot partition alone
// bounds it: 2,000 copies at 200/s, 10 s; the cold ones fit beside it within the
// account's rate.
//
//	go test -run '^$' -bench BackfillThrottledHotCold -benchtime=1x ./patterns/secondaryindex/
func BenchmarkBackfillThrottledHotCold(b *testing.B) {
	const hot, cold, perCold = 1000, 12, 250
	throttledBackfill(b, "ratio-ceiling = (hot partition's employees x 2 copies per employee / partition rate) / time",
		func(op int) []*Employee {
			items := backfillEmployees(fmt.Sprintf("H%d-hot", op), hot)
			for p := range cold {
				items = append(items, backfillEmployees(fmt.Sprintf("H%d-cold%02d", op, p), perCold)...)
			}
			return items
		},
		func([]*Employee) time.Duration {
			return benchcmp.Seconds(2*hot, benchcmp.ThrottledPartitionRate)
		})
}
