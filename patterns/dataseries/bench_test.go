package dataseries_test

import (
	"fmt"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/benchcmp"
	"github.com/tablepatterns/tablepatterns/patterns/dataseries"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// HourCount is the guide's naive design: one entity per employee and hour.
type HourCount struct {
	Employee string `table:",pk"`
	Hour     string `table:",rk"` // "20240501_13"
	Count    int64  `table:"Count"`
}

// benchBed is setup's table with clients whose requests are counted, the series store
// and the naive table on it: the one place this file builds clients and constructors.
func benchBed(b *testing.B) (*testbed.Bed, *benchcmp.Counter, *dataseries.Store[int64], *repo.Table[HourCount]) {
	b.Helper()
	bd := setup(b, false)
	ctr := bd.CountRequests()
	naive, err := repo.New[HourCount](bd.Clients.Tables, bd.Table, nil)
	if err != nil {
		b.Fatal(err)
	}
	return bd, ctr, hours(b, bd, nil), naive
}

// BenchmarkReadSeries reads one employee's 24 hourly message counts: from one entity (the
// pattern: one point query) against the naive design of 24 entities, read either with 24
// point queries (ratio) or with one range query over the day's RowKeys
// (ratio-range-query). All in one table of the same Azurite, the three alternated
// operation by operation in one run (benchcmp):
//
//	go test -run '^$' -bench BenchmarkReadSeries -benchtime=200x ./patterns/dataseries/
func BenchmarkReadSeries(b *testing.B) {
	bd, ctr, s, naive := benchBed(b)
	var rows []*HourCount
	for h := range 24 {
		if err := s.Set(bd.Ctx, "series", "20240501", h, int64(h*3)); err != nil {
			b.Fatal(err)
		}
		rows = append(rows, &HourCount{Employee: "naive", Hour: fmt.Sprintf("20240501_%02d", h), Count: int64(h * 3)})
	}
	if err := naive.BulkWrite(bd.Ctx, rows, nil); err != nil {
		b.Fatal(err)
	}
	const want = 3 * 23 * 24 / 2
	q := repo.Query{Filter: filter.RowKeyPrefix("naive", "20240501_")}
	benchcmp.Run(b, &benchcmp.Options{GC: true, Requests: ctr.Count},
		benchcmp.Side{Name: "one-entity", Op: func(int) error {
			day, err := s.Get(bd.Ctx, "series", "20240501")
			if err != nil {
				return err
			}
			var sum int64
			for _, v := range day.Points {
				sum += v
			}
			return benchcmp.Check("sum", sum, want)
		}},
		benchcmp.Side{Name: "point-queries", Op: func(int) error {
			var sum int64
			for h := range 24 {
				c, err := naive.Get(bd.Ctx, "naive", fmt.Sprintf("20240501_%02d", h))
				if err != nil {
					return err
				}
				sum += c.Count
			}
			return benchcmp.Check("sum", sum, want)
		}},
		benchcmp.Side{Name: "range-query", Op: func(int) error {
			var sum int64
			n := 0
			for c, err := range naive.Query(bd.Ctx, q) {
				if err != nil {
					return err
				}
				sum += c.Count
				n++
			}
			if err := benchcmp.Check("entities", n, 24); err != nil {
				return err
			}
			return benchcmp.Check("sum", sum, want)
		}})
}
