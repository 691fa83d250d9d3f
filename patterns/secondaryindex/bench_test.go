package secondaryindex_test

import (
	"fmt"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/benchcmp"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// benchBed builds, on clients whose requests are counted, the indexed table and the plain
// one: the one place this file builds clients and constructors.
func benchBed(b *testing.B) (*benchcmp.Counter, *secondaryindex.Intra[Employee], *repo.Table[Employee]) {
	b.Helper()
	ctr := benchcmp.NewCounter()
	clients, err := account.NewClients(testenv.ConnectionString(b), &account.ClientOptions{Transport: ctr})
	if err != nil {
		b.Fatal(err)
	}
	indexed, scanned := testenv.TableName(b), testenv.TableName(b)
	testenv.Table(b, indexed)
	testenv.Table(b, scanned)
	x, err := intraOn(clients.Tables, indexed, byID, []secondaryindex.Index[Employee]{byEmail}, nil)
	if err != nil {
		b.Fatal(err)
	}
	plain, err := repo.New[Employee](clients.Tables, scanned, nil)
	if err != nil {
		b.Fatal(err)
	}
	return ctr, x, plain
}

// BenchmarkFindByEmail finds one employee by email in a partition of 10,000 employees, on
// the same Azurite, the two sides alternated operation by operation in one run (benchcmp):
//
//   - intra-index: the intra-partition index, a point query on "email_<address>";
//   - scan: the naive way, the employees keyed by id only and a partition scan filtered
//     on Email (the design guide: "a less efficient partition scan").
//
// Azurite keeps tables in memory and evaluates a $filter over every entity of the table in
// JavaScript (about 0.15 µs per entity here), so the scan of 10,000 employees costs it
// little more than the HTTP round trip a point query costs; the service reads a scanned
// partition from storage. Point TABLEPATTERNS_TEST_CONNECTION_STRING at a real account to
// measure the ratio that matters in production.
//
// Run: go test -run '^$' -bench FindByEmail -benchtime=200x ./patterns/secondaryindex/
func BenchmarkFindByEmail(b *testing.B) {
	const n = 10000
	ctx := b.Context()
	ctr, x, plain := benchBed(b)
	emails := make([]string, n)
	items, rows := make([]*Employee, n), make([]*Employee, n)
	for i := range n {
		emails[i] = fmt.Sprintf("employee%05d@contoso.com", (i*7919)%n)
		items[i] = emp(i, "First", fmt.Sprintf("Last%d", i%500), fmt.Sprintf("employee%05d@contoso.com", i))
		r := *items[i]
		r.RowKey = r.EmployeeID
		rows[i] = &r
	}
	if err := x.Backfill(ctx, items); err != nil {
		b.Fatal(err)
	}
	if err := plain.BulkWrite(ctx, rows, nil); err != nil {
		b.Fatal(err)
	}

	benchcmp.Run(b, &benchcmp.Options{GC: true, Requests: ctr.Count},
		benchcmp.Side{Name: "intra-index", Op: func(i int) error {
			e, err := x.Lookup(ctx, "Sales", "email", emails[i%n])
			if err != nil {
				return err
			}
			return benchcmp.Check("email", e.Email, emails[i%n])
		}},
		benchcmp.Side{Name: "scan", Op: func(i int) error {
			got, err := plain.Collect(ctx, repo.Query{Filter: filter.And(filter.PartitionKey("Sales"), filter.Eq("Email", emails[i%n]))})
			if err != nil {
				return err
			}
			return benchcmp.Check("hits", len(got), 1)
		}})
}

// BenchmarkBackfill builds an index over a partition of 1,000 existing employees with
// BackfillPartition and reports entities/s:
//
//   - impl=inter: an Inter email index (per entity a Reconcile: a ref read, a primary
//     read, one transaction writing the copy and the ref);
//   - impl=intra: an Intra email index over primary copies (per entity the Update of the
//     live path: a read and one transaction).
//
// Each iteration backfills a fresh index (a new name) over the same employees.
//
// Run: go test -run '^$' -bench Backfill -benchtime 3x ./patterns/secondaryindex/
func BenchmarkBackfill(b *testing.B) {
	const n = 1000
	ctx := b.Context()
	clients, err := account.NewClients(testenv.ConnectionString(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	interT, intraT := testenv.TableName(b), testenv.TableName(b)
	testenv.Table(b, interT)
	testenv.Table(b, intraT)
	raw, err := repo.New[Employee](clients.Tables, interT, nil)
	if err != nil {
		b.Fatal(err)
	}
	rows, items := make([]*Employee, n), make([]*Employee, n)
	for i := range n {
		rows[i] = iemp(i, "First", "Last", fmt.Sprintf("employee%05d@contoso.com", i))
		items[i] = emp(i, "First", "Last", fmt.Sprintf("employee%05d@contoso.com", i))
	}
	if err := raw.BulkWrite(ctx, rows, nil); err != nil {
		b.Fatal(err)
	}
	primaries, err := intraOn(clients.Tables, intraT, byID, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := primaries.Backfill(ctx, items); err != nil {
		b.Fatal(err)
	}
	q, err := queueworker.NewClient(clients.Queues.NewQueueClient("unused"), nil)
	if err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B, backfill func(ix secondaryindex.Index[Employee]) (secondaryindex.Checkpoint, error)) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			ix := byEmail
			ix.Name = fmt.Sprintf("email%d", i)
			cp, err := backfill(ix)
			if err != nil || cp.Written != n {
				b.Fatalf("backfill: %+v %v", cp, err)
			}
		}
		b.ReportMetric(float64(n*i)/b.Elapsed().Seconds(), "entities/s")
	}
	b.Run("impl=inter", func(b *testing.B) {
		run(b, func(ix secondaryindex.Index[Employee]) (secondaryindex.Checkpoint, error) {
			x, err := secondaryindex.NewInter(clients.Tables, interT, q, []secondaryindex.Index[Employee]{ix}, &secondaryindex.InterOptions{SafetyDelay: -1})
			if err != nil {
				return secondaryindex.Checkpoint{}, err
			}
			return x.BackfillPartition(ctx, "Sales", nil)
		})
	})
	b.Run("impl=intra", func(b *testing.B) {
		run(b, func(ix secondaryindex.Index[Employee]) (secondaryindex.Checkpoint, error) {
			x, err := intraOn(clients.Tables, intraT, byID, []secondaryindex.Index[Employee]{ix}, nil)
			if err != nil {
				return secondaryindex.Checkpoint{}, err
			}
			return x.BackfillPartition(ctx, "Sales", nil)
		})
	})
}
