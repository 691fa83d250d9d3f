package logtail_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/patterns/logtail"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// BenchmarkNewest reads the 10 newest of 10,000 expense claims of one employee: through
// the log tail (one request, $top=10) against the naive layout whose RowKeys grow with
// time, where the newest are at the end and the whole partition must be read. Both
// partitions live on the same Azurite, so the ratio comes from one run:
//
//	go test -run '^$' -bench BenchmarkNewest -benchmem ./patterns/logtail/
func BenchmarkNewest(b *testing.B) {
	const size, n = 10000, 10
	bd := setup(b, false)
	tb := claims(b, bd)
	// The naive layout in a table of its own, so that each query meets 10,000 entities
	// (Azurite evaluates a filter against every entity of a table).
	naiveTable, err := repo.New[Claim](bd.Clients.Tables, bd.NewTableName(), nil)
	if err != nil {
		b.Fatal(err)
	}
	log, err := logtail.New(tb, nil)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	tail := make([]*Claim, size)
	naive := make([]*Claim, size)
	for i := range size {
		at := start.Add(time.Duration(i) * time.Minute)
		id := fmt.Sprintf("C%05d", i)
		tail[i] = &Claim{Employee: "tail", Key: log.RowKey(at, id), ClaimID: id, Amount: float64(i)}
		asc, err := keys.Pad(keys.Ticks(at), 19)
		if err != nil {
			b.Fatal(err)
		}
		naive[i] = &Claim{Employee: "naive", Key: asc + "_" + id, ClaimID: id, Amount: float64(i)}
	}
	if err := tb.BulkWrite(bd.Ctx, tail, nil); err != nil {
		b.Fatal(err)
	}
	if err := naiveTable.BulkWrite(bd.Ctx, naive, nil); err != nil {
		b.Fatal(err)
	}
	want := fmt.Sprintf("C%05d", size-1)

	b.Run("impl=logtail", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			got, err := log.Newest(bd.Ctx, "tail", n)
			if err != nil {
				b.Fatal(err)
			}
			if len(got) != n || got[0].ClaimID != want {
				b.Fatalf("newest %d, first %s", len(got), got[0].ClaimID)
			}
		}
	})
	b.Run("impl=scan-partition", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			all, err := naiveTable.Collect(bd.Ctx, repo.Query{Filter: filter.PartitionKey("naive")})
			if err != nil {
				b.Fatal(err)
			}
			if len(all) != size {
				b.Fatalf("%d entities", len(all))
			}
			newest := all[len(all)-n:]
			if newest[n-1].ClaimID != want {
				b.Fatalf("newest is %s", newest[n-1].ClaimID)
			}
		}
	})
}
