package keyspread_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/benchcmp"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/keyspread"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// benchBed is an access-log table on clients whose requests are counted: the one place
// this file builds clients and constructors.
func benchBed(b *testing.B) (*benchcmp.Counter, *repo.Table[Access], keyspread.Buckets, keyspread.Buckets) {
	b.Helper()
	ctr := benchcmp.NewCounter()
	clients, err := account.NewClients(testenv.ConnectionString(b), &account.ClientOptions{Transport: ctr})
	if err != nil {
		b.Fatal(err)
	}
	name := testenv.TableName(b)
	testenv.Table(b, name)
	tb, err := repo.New[Access](clients.Tables, name, &repo.Options{Retry: testbed.FastRetry()})
	if err != nil {
		b.Fatal(err)
	}
	eight, err := keyspread.NewBuckets(8)
	if err != nil {
		b.Fatal(err)
	}
	one, err := keyspread.NewBuckets(1)
	if err != nil {
		b.Fatal(err)
	}
	return ctr, tb, eight, one
}

// BenchmarkReadSpreadPartition reads one hour of the access log (2,000 entities) spread
// over 8 buckets: ReadPartition's parallel, streaming merge against querying the buckets
// one after the other and sorting (ratio), and against the unspread partition
// (ratio-unspread, one query: the read cost the spreading adds, for writes that no longer
// share one partition). The sides alternate operation by operation in one run (benchcmp).
//
//	go test -run '^$' -bench ReadSpreadPartition -benchtime=20x ./patterns/keyspread/
func BenchmarkReadSpreadPartition(b *testing.B) {
	ctr, tb, buckets, one := benchBed(b)
	ctx := context.Background()
	want := accessLogTB(b, tb, buckets, "2014-07-31T18", 2000)
	accessLogTB(b, tb, one, "unspread", 2000)

	benchcmp.Run(b, &benchcmp.Options{GC: true, Requests: ctr.Count},
		benchcmp.Side{Name: "parallel-merge", Op: func(int) error {
			n := 0
			for _, err := range keyspread.ReadPartition(ctx, tb, buckets, "2014-07-31T18", nil) {
				if err != nil {
					return err
				}
				n++
			}
			return benchcmp.Check("entities", n, len(want))
		}},
		benchcmp.Side{Name: "sequential-then-sort", Op: func(int) error {
			var all []Access
			for i := range buckets.N() {
				got, err := tb.Collect(ctx, repo.Query{Filter: filter.PartitionKey(buckets.Prefix(i) + "2014-07-31T18")})
				if err != nil {
					return err
				}
				all = append(all, got...)
			}
			slices.SortFunc(all, func(x, y Access) int { return strings.Compare(x.RowKey, y.RowKey) })
			return benchcmp.Check("entities", len(all), len(want))
		}},
		benchcmp.Side{Name: "unspread", Op: func(int) error {
			got, err := tb.Collect(ctx, repo.Query{Filter: filter.PartitionKey(one.Prefix(0) + "unspread")})
			if err != nil {
				return err
			}
			return benchcmp.Check("entities", len(got), len(want))
		}})
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
