package keyspread_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/patterns/keyspread"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// BenchmarkReadSpreadPartition reads one hour of the access log (2,000 entities) spread
// over 8 buckets: ReadPartition's parallel, streaming merge against querying the buckets
// one after the other and sorting, and against the unspread partition (one query: the
// read cost the spreading adds, for writes that no longer share one partition).
func BenchmarkReadSpreadPartition(b *testing.B) {
	tb, _ := benchTable(b)
	buckets, _ := keyspread.NewBuckets(8)
	ctx := context.Background()
	want := accessLogTB(b, tb, buckets, "2014-07-31T18", 2000)
	one, _ := keyspread.NewBuckets(1)
	accessLogTB(b, tb, one, "unspread", 2000)

	b.Run("impl=parallel-merge", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			n := 0
			for _, err := range keyspread.ReadPartition(ctx, tb, buckets, "2014-07-31T18", nil) {
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			if n != len(want) {
				b.Fatal(n)
			}
		}
	})
	b.Run("impl=sequential-then-sort", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var all []Access
			for i := range buckets.N() {
				got, err := tb.Collect(ctx, repo.Query{Filter: filter.PartitionKey(buckets.Prefix(i) + "2014-07-31T18")})
				if err != nil {
					b.Fatal(err)
				}
				all = append(all, got...)
			}
			slices.SortFunc(all, func(x, y Access) int { return strings.Compare(x.RowKey, y.RowKey) })
			if len(all) != len(want) {
				b.Fatal(len(all))
			}
		}
	})
	b.Run("impl=single-partition", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			got, err := tb.Collect(ctx, repo.Query{Filter: filter.PartitionKey(one.Prefix(0) + "unspread")})
			if err != nil || len(got) != len(want) {
				b.Fatal(len(got), err)
			}
		}
	})
}

// BenchmarkAdvise measures the advisor on a write log of 100,000 timed writes.
func BenchmarkAdvise(b *testing.B) {
	log := make([]keyspread.Write, 100000)
	for i := range log {
		log[i] = keyspread.Write{PartitionKey: fmt.Sprintf("dept%02d_%06d", i%20, i%997)}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := keyspread.Advise(slices.Values(log), nil); err != nil {
			b.Fatal(err)
		}
	}
}
