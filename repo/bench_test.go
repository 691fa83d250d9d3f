package repo_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablepatterns/tablepatterns/internal/benchcmp"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// The benchmarks compare repo with the hand-written aztables code a user would write
// otherwise, on the same Azurite and in the same run (see BENCHMARKS.md).

func rawEmployee(e *Employee) aztables.EDMEntity {
	return aztables.EDMEntity{
		Entity: aztables.Entity{PartitionKey: e.Department, RowKey: e.EmployeeID},
		Properties: map[string]any{
			"FirstName": e.FirstName, "LastName": e.LastName, "Age": e.Age, "Email": e.Email,
			"Salary": aztables.EDMInt64(e.Salary), "HireDate": aztables.EDMDateTime(e.HireDate),
		},
	}
}

// benchBed is setup's table with clients whose requests are counted (the one place this
// file builds clients).
func benchBed(b *testing.B) (*bed, *benchcmp.Counter) {
	b.Helper()
	bd := setup(b, false)
	ctr := benchcmp.NewCounter()
	clients, err := account.NewClients(testenv.ConnectionString(b), &account.ClientOptions{Transport: ctr})
	if err != nil {
		b.Fatal(err)
	}
	bd.clients = clients
	return bd, ctr
}

// compare runs repo (ours) and the hand-written aztables code (theirs) alternately with
// benchcmp: ratio = aztables time / repo time, above 1 repo is faster.
func compare(b *testing.B, ctr *benchcmp.Counter, ours, theirs func(i int) error) {
	b.Helper()
	benchcmp.Run(b, &benchcmp.Options{GC: true, Requests: ctr.Count},
		benchcmp.Side{Name: "repo", Op: ours}, benchcmp.Side{Name: "aztables", Op: theirs})
}

func BenchmarkPointGet(b *testing.B) {
	bd, ctr := benchBed(b)
	emps := table[Employee](b, bd, nil)
	if err := emps.Insert(bd.ctx, employee("Sales", "000001")); err != nil {
		b.Fatal(err)
	}
	raw := bd.clients.Tables.NewClient(bd.name)
	compare(b, ctr, func(int) error {
		_, err := emps.Get(bd.ctx, "Sales", "000001")
		return err
	}, func(int) error {
		resp, err := raw.GetEntity(bd.ctx, "Sales", "000001", nil)
		if err != nil {
			return err
		}
		var e aztables.EDMEntity
		return json.Unmarshal(resp.Value, &e)
	})
}

func BenchmarkInsert(b *testing.B) {
	bd, ctr := benchBed(b)
	emps := table[Employee](b, bd, nil)
	raw := bd.clients.Tables.NewClient(bd.name)
	compare(b, ctr, func(i int) error {
		return emps.Insert(bd.ctx, employee("Repo", fmt.Sprintf("%09d", i)))
	}, func(i int) error {
		body, err := json.Marshal(rawEmployee(employee("Raw", fmt.Sprintf("%09d", i))))
		if err != nil {
			return err
		}
		_, err = raw.AddEntity(bd.ctx, body, nil)
		return err
	})
}

func BenchmarkQuery1000(b *testing.B) {
	bd, ctr := benchBed(b)
	emps := table[Employee](b, bd, nil)
	seed(b, emps, bd, 1, 1000)
	raw := bd.clients.Tables.NewClient(bd.name)
	f := "PartitionKey eq 'Dept00'"
	compare(b, ctr, func(int) error {
		n := 0
		for _, err := range emps.Query(bd.ctx, repo.Query{Filter: filter.PartitionKey("Dept00")}) {
			if err != nil {
				return err
			}
			n++
		}
		if n != 1000 {
			return fmt.Errorf("%d entities", n)
		}
		return nil
	}, func(int) error {
		n := 0
		pager := raw.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &f})
		for pager.More() {
			page, err := pager.NextPage(bd.ctx)
			if err != nil {
				return err
			}
			for _, v := range page.Entities {
				var e aztables.EDMEntity
				if err := json.Unmarshal(v, &e); err != nil {
					return err
				}
				n++
			}
		}
		if n != 1000 {
			return fmt.Errorf("%d entities", n)
		}
		return nil
	})
}

// BenchmarkBulk10000 writes 10,000 entities over 10 partitions with BulkWrite, against
// one-by-one inserts, alternated in one run (fresh keys every operation). Run it with
// -benchtime=1x or 2x: one operation takes seconds.
func BenchmarkBulk10000(b *testing.B) {
	bd, ctr := benchBed(b)
	emps := table[Employee](b, bd, nil)
	make10k := func(tag string, round int) []*Employee {
		out := make([]*Employee, 0, 10000)
		for i := 0; i < 10000; i++ {
			out = append(out, employee(fmt.Sprintf("%s%d-%d", tag, round, i%10), fmt.Sprintf("%06d", i)))
		}
		return out
	}
	benchcmp.Run(b, &benchcmp.Options{GC: true, Requests: ctr.Count, Items: 10000, Unit: "entities", Warmup: -1},
		benchcmp.Side{Name: "bulk", Op: func(i int) error {
			return emps.BulkWrite(bd.ctx, make10k("B", i), nil)
		}},
		benchcmp.Side{Name: "one-by-one", Op: func(i int) error {
			for _, e := range make10k("S", i) {
				if err := emps.Insert(bd.ctx, e); err != nil {
					return err
				}
			}
			return nil
		}})
}

// BenchmarkTrackedUpdate measures the cost of write tracking: a read-modify-write (Get,
// then a conditional Update) on a tracked and an untracked table, alternated operation by
// operation on the same Azurite, with the bytes each stored entity grows by.
func BenchmarkTrackedUpdate(b *testing.B) {
	bd, _ := benchBed(b)
	plain := table[Employee](b, bd, nil)
	tracked := table[Employee](b, bd, &repo.Options{TrackWrites: true})
	for _, tb := range []*repo.Table[Employee]{plain, tracked} {
		e := employee("Sales", "000001")
		if tb == tracked {
			e.EmployeeID = "000002"
		}
		if err := tb.Insert(bd.ctx, e); err != nil {
			b.Fatal(err)
		}
	}
	rmw := func(tb *repo.Table[Employee], id string) func(int) error {
		return func(i int) error {
			e, err := tb.Get(bd.ctx, "Sales", id)
			if err != nil {
				return err
			}
			e.Age = int32(i % 100)
			return tb.Update(bd.ctx, &e, nil)
		}
	}
	// ratio = untracked time / tracked time: below 1 is what tracking costs.
	benchcmp.Run(b, &benchcmp.Options{GC: true},
		benchcmp.Side{Name: "tracked", Op: rmw(tracked, "000002")},
		benchcmp.Side{Name: "untracked", Op: rmw(plain, "000001")})
	raw := bd.clients.Tables.NewClient(bd.name)
	size := func(id string) int {
		resp, err := raw.GetEntity(bd.ctx, "Sales", id, nil)
		if err != nil {
			b.Fatal(err)
		}
		return len(resp.Value)
	}
	b.ReportMetric(float64(size("000002")-size("000001")), "tracking-bytes/entity")
}
