package repo_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// The benchmarks compare repo with the hand-written aztables code a user would write
// otherwise, on the same Azurite, as sub-benchmarks of one run (see BENCHMARKS.md).

func rawEmployee(e *Employee) aztables.EDMEntity {
	return aztables.EDMEntity{
		Entity: aztables.Entity{PartitionKey: e.Department, RowKey: e.EmployeeID},
		Properties: map[string]any{
			"FirstName": e.FirstName, "LastName": e.LastName, "Age": e.Age, "Email": e.Email,
			"Salary": aztables.EDMInt64(e.Salary), "HireDate": aztables.EDMDateTime(e.HireDate),
		},
	}
}

func BenchmarkPointGet(b *testing.B) {
	bd := setup(b, false)
	emps := table[Employee](b, bd, nil)
	if err := emps.Insert(bd.ctx, employee("Sales", "000001")); err != nil {
		b.Fatal(err)
	}
	raw := bd.clients.Tables.NewClient(bd.name)
	b.Run("impl=repo", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := emps.Get(bd.ctx, "Sales", "000001"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=aztables", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			resp, err := raw.GetEntity(bd.ctx, "Sales", "000001", nil)
			if err != nil {
				b.Fatal(err)
			}
			var e aztables.EDMEntity
			if err := json.Unmarshal(resp.Value, &e); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkInsert(b *testing.B) {
	bd := setup(b, false)
	emps := table[Employee](b, bd, nil)
	raw := bd.clients.Tables.NewClient(bd.name)
	b.Run("impl=repo", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			if err := emps.Insert(bd.ctx, employee("Repo", fmt.Sprintf("%09d", i))); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=aztables", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			body, err := json.Marshal(rawEmployee(employee("Raw", fmt.Sprintf("%09d", i))))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := raw.AddEntity(bd.ctx, body, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkQuery1000(b *testing.B) {
	bd := setup(b, false)
	emps := table[Employee](b, bd, nil)
	seed(b, emps, bd, 1, 1000)
	raw := bd.clients.Tables.NewClient(bd.name)
	b.Run("impl=repo", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			n := 0
			for _, err := range emps.Query(bd.ctx, repo.Query{Filter: filter.PartitionKey("Dept00")}) {
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			if n != 1000 {
				b.Fatalf("%d entities", n)
			}
		}
	})
	b.Run("impl=aztables", func(b *testing.B) {
		b.ReportAllocs()
		f := "PartitionKey eq 'Dept00'"
		for b.Loop() {
			n := 0
			pager := raw.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &f})
			for pager.More() {
				page, err := pager.NextPage(bd.ctx)
				if err != nil {
					b.Fatal(err)
				}
				for _, v := range page.Entities {
					var e aztables.EDMEntity
					if err := json.Unmarshal(v, &e); err != nil {
						b.Fatal(err)
					}
					n++
				}
			}
			if n != 1000 {
				b.Fatalf("%d entities", n)
			}
		}
	})
}

// BenchmarkBulk10000 writes 10,000 entities over 10 partitions with BulkWrite, against
// one-by-one inserts. Run it with -benchtime=1x: one iteration takes seconds.
func BenchmarkBulk10000(b *testing.B) {
	bd := setup(b, false)
	emps := table[Employee](b, bd, nil)
	make10k := func(tag string, round int) []*Employee {
		out := make([]*Employee, 0, 10000)
		for i := 0; i < 10000; i++ {
			out = append(out, employee(fmt.Sprintf("%s%d-%d", tag, round, i%10), fmt.Sprintf("%06d", i)))
		}
		return out
	}
	b.Run("impl=bulk", func(b *testing.B) {
		round := 0
		for b.Loop() {
			round++
			start := time.Now()
			if err := emps.BulkWrite(bd.ctx, make10k("B", round), nil); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(10000/time.Since(start).Seconds(), "entities/s")
		}
	})
	b.Run("impl=one-by-one", func(b *testing.B) {
		round := 0
		for b.Loop() {
			round++
			start := time.Now()
			for _, e := range make10k("S", round) {
				if err := emps.Insert(bd.ctx, e); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(10000/time.Since(start).Seconds(), "entities/s")
		}
	})
}
