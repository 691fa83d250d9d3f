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

// interleave runs ours and theirs alternately, b.N times each, so that a load change on
// the machine hits both alike, and reports each one's time per operation and the ratio of
// their throughputs (ours/theirs: above 1 means repo is faster).
func interleave(b *testing.B, ours, theirs func(i int) error) {
	b.Helper()
	b.ReportAllocs()
	var tOurs, tTheirs time.Duration
	i := 0
	for b.Loop() {
		i++
		start := time.Now()
		if err := ours(i); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		if err := theirs(i); err != nil {
			b.Fatal(err)
		}
		tOurs += mid.Sub(start)
		tTheirs += time.Since(mid)
	}
	n := float64(b.N)
	b.ReportMetric(float64(tOurs.Nanoseconds())/n, "repo-ns/op")
	b.ReportMetric(float64(tTheirs.Nanoseconds())/n, "aztables-ns/op")
	b.ReportMetric(float64(tTheirs)/float64(tOurs), "throughput-ratio")
}

func BenchmarkPointGet(b *testing.B) {
	bd := setup(b, false)
	emps := table[Employee](b, bd, nil)
	if err := emps.Insert(bd.ctx, employee("Sales", "000001")); err != nil {
		b.Fatal(err)
	}
	raw := bd.clients.Tables.NewClient(bd.name)
	interleave(b, func(int) error {
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
	bd := setup(b, false)
	emps := table[Employee](b, bd, nil)
	raw := bd.clients.Tables.NewClient(bd.name)
	round := 0 // b.Loop may run the body in several rounds; keys must stay unique
	b.Run("interleaved", func(b *testing.B) {
		round++
		interleave(b, func(i int) error {
			return emps.Insert(bd.ctx, employee(fmt.Sprintf("Repo%d", round), fmt.Sprintf("%09d", i)))
		}, func(i int) error {
			body, err := json.Marshal(rawEmployee(employee(fmt.Sprintf("Raw%d", round), fmt.Sprintf("%09d", i))))
			if err != nil {
				return err
			}
			_, err = raw.AddEntity(bd.ctx, body, nil)
			return err
		})
	})
}

func BenchmarkQuery1000(b *testing.B) {
	bd := setup(b, false)
	emps := table[Employee](b, bd, nil)
	seed(b, emps, bd, 1, 1000)
	raw := bd.clients.Tables.NewClient(bd.name)
	f := "PartitionKey eq 'Dept00'"
	interleave(b, func(int) error {
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

// BenchmarkTrackedUpdate measures the cost of write tracking: a read-modify-write (Get,
// then a conditional Update) on a tracked and an untracked table, alternated operation by
// operation on the same Azurite, with the bytes each stored entity grows by.
func BenchmarkTrackedUpdate(b *testing.B) {
	bd := setup(b, false)
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
	b.ReportAllocs()
	var tTracked, tPlain time.Duration
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		if err := rmw(tracked, "000002")(i); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		if err := rmw(plain, "000001")(i); err != nil {
			b.Fatal(err)
		}
		tTracked += mid.Sub(start)
		tPlain += time.Since(mid)
	}
	b.ReportMetric(float64(tTracked.Nanoseconds())/float64(b.N), "tracked-ns/op")
	b.ReportMetric(float64(tPlain.Nanoseconds())/float64(b.N), "untracked-ns/op")
	b.ReportMetric(float64(tTracked)/float64(tPlain), "tracked/untracked")
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
