package logtail_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/benchcmp"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/logtail"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// benchBed is setup's table with clients whose requests are counted, the log tail on it,
// and the naive layout's table: the one place this file builds clients and constructors.
func benchBed(b *testing.B) (*testbed.Bed, *benchcmp.Counter, *logtail.Log[Claim], *repo.Table[Claim], *repo.Table[Claim]) {
	b.Helper()
	bd := setup(b, false)
	ctr := bd.CountRequests()
	tb := claims(b, bd)
	// The naive layout in a table of its own, so that each query meets 10,000 entities
	// (Azurite evaluates a filter against every entity of a table).
	naiveName := testenv.TableName(b)
	testenv.Table(b, naiveName)
	naiveTable, err := repo.New[Claim](bd.Clients.Tables, naiveName, nil)
	if err != nil {
		b.Fatal(err)
	}
	log, err := logtail.New(tb, nil)
	if err != nil {
		b.Fatal(err)
	}
	return bd, ctr, log, tb, naiveTable
}

// BenchmarkNewest reads the 10 newest of 10,000 expense claims of one employee: through
// the log tail (one request, $top=10) against the naive layout whose RowKeys grow with
// time, where the newest are at the end and the whole partition must be read (10
// requests of 1,000). Both sides alternate operation by operation in one run on the same
// Azurite (benchcmp); ratio = scan time / log tail time.
//
//	go test -run '^$' -bench BenchmarkNewest -benchtime=20x ./patterns/logtail/
func BenchmarkNewest(b *testing.B) {
	const size, n = 10000, 10
	bd, ctr, log, tb, naiveTable := benchBed(b)
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

	benchcmp.Run(b, &benchcmp.Options{GC: true, Requests: ctr.Count},
		benchcmp.Side{Name: "logtail", Op: func(int) error {
			got, err := log.Newest(bd.Ctx, "tail", n)
			if err != nil {
				return err
			}
			if err := benchcmp.Check("claims", len(got), n); err != nil {
				return err
			}
			return benchcmp.Check("newest", got[0].ClaimID, want)
		}},
		benchcmp.Side{Name: "scan", Op: func(int) error {
			all, err := naiveTable.Collect(bd.Ctx, repo.Query{Filter: filter.PartitionKey("naive")})
			if err != nil {
				return err
			}
			if err := benchcmp.Check("claims", len(all), size); err != nil {
				return err
			}
			return benchcmp.Check("newest", all[len(all)-1].ClaimID, want)
		}})
}
