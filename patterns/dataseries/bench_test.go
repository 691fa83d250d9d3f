package dataseries_test

import (
	"fmt"
	"testing"

	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// HourCount is the guide's naive design: one entity per employee and hour.
type HourCount struct {
	Employee string `table:",pk"`
	Hour     string `table:",rk"` // "20240501_13"
	Count    int64  `table:"Count"`
}

// BenchmarkReadSeries reads one employee's 24 hourly message counts: from one entity (the
// pattern: one point query) against the naive design of 24 entities, read either with one
// range query over the day's RowKeys or with 24 point queries. All in one table of the
// same Azurite:
//
//	go test -run '^$' -bench BenchmarkReadSeries -benchmem ./patterns/dataseries/
func BenchmarkReadSeries(b *testing.B) {
	bd := setup(b, false)
	s := hours(b, bd, nil)
	naive, err := repo.New[HourCount](bd.Clients.Tables, bd.Table, nil)
	if err != nil {
		b.Fatal(err)
	}
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
	check := func(b *testing.B, sum int64) {
		if sum != 3*23*24/2 {
			b.Fatalf("sum %d", sum)
		}
	}

	b.Run("impl=one-entity", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			day, err := s.Get(bd.Ctx, "series", "20240501")
			if err != nil {
				b.Fatal(err)
			}
			var sum int64
			for _, v := range day.Points {
				sum += v
			}
			check(b, sum)
		}
	})
	b.Run("impl=24-entities-range-query", func(b *testing.B) {
		b.ReportAllocs()
		q := repo.Query{Filter: filter.RowKeyPrefix("naive", "20240501_")}
		for b.Loop() {
			var sum int64
			n := 0
			for c, err := range naive.Query(bd.Ctx, q) {
				if err != nil {
					b.Fatal(err)
				}
				sum += c.Count
				n++
			}
			if n != 24 {
				b.Fatalf("%d entities", n)
			}
			check(b, sum)
		}
	})
	b.Run("impl=24-point-queries", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var sum int64
			for h := range 24 {
				c, err := naive.Get(bd.Ctx, "naive", fmt.Sprintf("20240501_%02d", h))
				if err != nil {
					b.Fatal(err)
				}
				sum += c.Count
			}
			check(b, sum)
		}
	})
}
