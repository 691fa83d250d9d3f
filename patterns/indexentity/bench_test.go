package indexentity

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/benchcmp"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// benchBed builds, on clients whose requests are counted, the employees' table and its
// index: the one place this file builds clients and constructors.
func benchBed(b *testing.B) (*benchcmp.Counter, *repo.Table[Employee], *SamePartition[Employee]) {
	b.Helper()
	ctr := benchcmp.NewCounter()
	clients, err := account.NewClients(testenv.ConnectionString(b), &account.ClientOptions{Transport: ctr})
	if err != nil {
		b.Fatal(err)
	}
	table := testenv.TableName(b)
	testenv.Table(b, table)
	emps := must(repo.New[Employee](clients.Tables, table, nil))
	ix := must(NewSamePartition(emps, "LastName", lastName, nil))
	return ctr, emps, ix
}

// BenchmarkLookupByLastName compares, on one Azurite and one partition of 10,000 employees
// with 500 last names (20 employees each), finding the employees with one last name,
// the sides alternated operation by operation in one run (benchcmp):
//
//   - index-entity: SamePartition.Find, the guide's option 2: one range query for the
//     index entity, then 20 point queries, 8 at a time;
//   - scan (ratio): the naive way, a partition scan with a property filter (PartitionKey
//     eq 'Sales' and LastName eq '...'), which reads all 10,000 rows on the server;
//   - index-ids (ratio-index-ids): SamePartition.IDs alone (the list, one request).
//
// On Azurite the scan is cheap (see BENCHMARKS.md): the requests per operation are the
// figure that carries over.
//
//	go test -run '^$' -bench LookupByLastName -benchtime=50x ./patterns/indexentity/
func BenchmarkLookupByLastName(b *testing.B) {
	const employees, names = 10000, 500
	ctx := context.Background()
	ctr, emps, ix := benchBed(b)

	// Seed: the employees with BulkWrite, and the index entities exactly as Insert lays
	// them out (Insert one by one would take minutes; the layout is checked below).
	items := make([]*Employee, employees)
	ids := map[string][]string{}
	for i := range items {
		last := fmt.Sprintf("Name%03d", i%names)
		items[i] = emp("Sales", fmt.Sprintf("%06d", i), last)
		ids[last] = append(ids[last], items[i].EmployeeID)
	}
	var pages []*codec.Entity
	for value, list := range ids {
		slices.Sort(list)
		loc := must(ix.location("Sales", value))
		var set []*page
		for _, id := range list {
			set = addLocal(ix, loc, set, id)
		}
		for _, p := range set {
			pages = append(pages, ix.pages.entity(loc, p.rk, "", p.entries))
		}
	}
	if err := emps.BulkWrite(ctx, items, nil); err != nil {
		b.Fatal(err)
	}
	if err := ix.pages.tbl.BulkWrite(ctx, pages, nil); err != nil {
		b.Fatal(err)
	}
	want := ids["Name123"]
	if got, err := ix.IDs(ctx, "Sales", "Name123"); err != nil || !slices.Equal(got, want) {
		b.Fatalf("seeded index: %v, %v", got, err)
	}

	value := func(i int) string { return fmt.Sprintf("Name%03d", (i*7)%names) }
	found := func(n int, err error) error {
		if err != nil {
			return err
		}
		return benchcmp.Check("employees", n, employees/names)
	}
	benchcmp.Run(b, &benchcmp.Options{GC: true, Requests: ctr.Count},
		benchcmp.Side{Name: "index-entity", Op: func(i int) error {
			got, err := collect(ix.Find(ctx, "Sales", value(i), nil))
			return found(len(got), err)
		}},
		benchcmp.Side{Name: "scan", Op: func(i int) error {
			got, err := emps.Collect(ctx, repo.Query{Filter: filter.And(filter.PartitionKey("Sales"), filter.Eq("LastName", value(i)))})
			return found(len(got), err)
		}},
		benchcmp.Side{Name: "index-ids", Op: func(i int) error {
			got, err := ix.IDs(ctx, "Sales", value(i))
			return found(len(got), err)
		}})
}

// addLocal applies to an in-memory page set the add that planAdd plans (for seeding).
func addLocal(ix *SamePartition[Employee], loc location, set []*page, id string) []*page {
	i, rk, present, err := ix.pages.place(loc, set, id)
	switch {
	case err != nil:
		panic(err)
	case present:
		return set
	case i < 0:
		return append(set, &page{rk: rk, entries: []string{id}, size: utf16Bytes(id)})
	}
	set[i].entries = withEntry(set[i], id)
	set[i].size = listSize(set[i].entries)
	return set
}

// BenchmarkBackfillSamePartition lists 1,000 existing employees in a fresh option 2 index
// (a new name each iteration) with BackfillPartition and reports entities/s: per entity a
// range query of its value's index entities and one transaction.
//
// Run: go test -run '^$' -bench BackfillSamePartition -benchtime 3x ./patterns/indexentity/
func BenchmarkBackfillSamePartition(b *testing.B) {
	const n = 1000
	ctx := b.Context()
	clients, err := account.NewClients(testenv.ConnectionString(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	name := testenv.TableName(b)
	testenv.Table(b, name)
	emps, err := repo.New[Employee](clients.Tables, name, nil)
	if err != nil {
		b.Fatal(err)
	}
	rows := make([]*Employee, n)
	for i := range n {
		rows[i] = emp("Sales", fmt.Sprintf("%06d", i), fmt.Sprintf("Last%02d", i%50))
	}
	if err := emps.BulkWrite(ctx, rows, nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		ix, err := NewSamePartition(emps, fmt.Sprintf("LastName%d", i), lastName, nil)
		if err != nil {
			b.Fatal(err)
		}
		cp, err := ix.BackfillPartition(ctx, "Sales", nil)
		if err != nil || cp.Written != n {
			b.Fatalf("backfill: %+v %v", cp, err)
		}
	}
	b.ReportMetric(float64(n*i)/b.Elapsed().Seconds(), "entities/s")
}
